"""``akdevnet tenant new|deploy|bids|accept|cert|token|send-manifest`` and ``akdevnet
simulate``: act on the chain as its tenants, from a funded key to a lease that has its
manifest, or let simulated tenants do it. Every option value is checked before anything is
sent; what the chain refuses comes back as one error line.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from akchain import jwt, msgs
from akchain.keys import Signer
from akchain.wallet import Wallet
from akdevnet.cli_common import (
    Dseq,
    Home,
    KeyName,
    Lcd,
    Node,
    ProviderUrl,
    VerifyProvider,
    app,
    cert_name,
    chain,
    coin,
    coins,
    fail,
    key_name,
    load_key,
    read_sdl,
    required_certificate,
    run,
    saved_certificate,
    settings_of,
    tenant_app,
    with_tenant,
)
from akdevnet.homedir import key_path
from akdevnet.settings import DevnetSettings
from akdevnet.simulate import Simulation, load_sdls
from akdevnet.tenant import ClientCertificate, Tenant
from aktypes.address import validate_address
from aktypes.errors import AkTypesError

MAX_UINT64 = 2**64 - 1


@tenant_app.command("new")
def tenant_new(
    *,
    name: Annotated[str, typer.Argument(help="key name: letters, digits, '.', '_' and '-'")],
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    funds: Annotated[
        str, typer.Option(help="coins sent by the faucet, comma-separated")
    ] = "1000000000uakt,1000000000uact",
) -> None:
    """Create a key file for a new tenant and fund it from the faucet."""
    settings = settings_of(home)
    path = key_path(settings.keys_dir, key_name(name, "NAME"))
    if path.exists():
        raise fail(f"key {name!r} exists ({path})")
    amounts = coins("--funds", funds)
    faucet = load_key(settings, "faucet")

    async def work() -> str:
        signer = Signer.generate()
        async with chain(settings, node, lcd) as (rpc, rest, chain_id):
            await Wallet(faucet, rpc, rest, chain_id=chain_id).send(
                msgs.send(faucet.address, signer.address, amounts)
            )
        signer.save(path, settings.key_passphrase.get_secret_value(), name=name)
        return signer.address

    typer.echo(run(work()))


@tenant_app.command("deploy")
def tenant_deploy(
    *,
    sdl_file: Path,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    deposit: Annotated[str, typer.Option(help="escrow deposit")] = "5000000uact",
    dseq: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_UINT64, help="deployment sequence (default: current height)"),
    ] = None,
) -> None:
    """Create a deployment from an SDL file; prints its dseq."""
    settings = settings_of(home)
    escrow = coin("--deposit", deposit)
    sdl = read_sdl(sdl_file)
    signer = load_key(settings, key)

    async def work(tenant: Tenant) -> int:
        created = await tenant.deploy(sdl, dseq=dseq, deposit=escrow)
        return created.dseq

    typer.echo(run(with_tenant(settings, signer, node, lcd, work)))


@tenant_app.command("bids")
def tenant_bids(
    *, dseq: Dseq, key: KeyName = "tenant-1", home: Home = None, node: Node = None, lcd: Lcd = None
) -> None:
    """Open bids on a deployment, cheapest first."""
    settings = settings_of(home)
    signer = load_key(settings, key)

    async def work(tenant: Tenant) -> list[str]:
        bids = sorted(await tenant.bids(dseq), key=lambda b: b.price.amount)
        if not bids:
            await tenant.check_active(dseq)
        return [
            f"{b.id.gseq}/{b.id.oseq} {b.id.provider} {b.price.amount.normalized()}{b.price.denom}"
            for b in bids
        ]

    for line in run(with_tenant(settings, signer, node, lcd, work)):
        typer.echo(line)


def _provider_address(settings: DevnetSettings, text: str) -> str:
    """``--provider``: an ``akash1…`` address, or the name of a key in the home (``competitor``)."""
    if text.startswith("akash1"):
        try:
            return validate_address(text)
        except AkTypesError as exc:
            raise fail(f"--provider {text!r}: {exc}") from None
    return load_key(settings, key_name(text, "--provider")).address


@tenant_app.command("accept")
def tenant_accept(
    *,
    dseq: Dseq,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    wait: Annotated[float, typer.Option(min=0, help="seconds to wait for bids")] = 30.0,
    provider: Annotated[
        str | None,
        typer.Option(
            help="lease this provider's bids (address or key name), not the cheapest ones"
        ),
    ] = None,
) -> None:
    """Create a lease on the cheapest bid of each order (or on --provider's bids)."""
    settings = settings_of(home)
    signer = load_key(settings, key)
    chosen = _provider_address(settings, provider) if provider is not None else None

    async def work(tenant: Tenant) -> list[str]:
        await tenant.wait_for_bids(dseq, provider=chosen, timeout=wait)
        leases = await tenant.accept(dseq, chosen) if chosen else await tenant.accept_cheapest(dseq)
        return [str(lease) for lease in leases]

    for line in run(with_tenant(settings, signer, node, lcd, work)):
        typer.echo(line)


@tenant_app.command("cert")
def tenant_cert(
    *, key: KeyName = "tenant-1", home: Home = None, node: Node = None, lcd: Lcd = None
) -> None:
    """Create a client certificate, publish it on chain, save it under the home's certs/."""
    settings = settings_of(home)
    name = cert_name(key)
    signer = load_key(settings, key)

    async def work(tenant: Tenant) -> ClientCertificate:
        return await tenant.create_certificate()

    certificate = run(with_tenant(settings, signer, node, lcd, work))
    cert_path, _ = certificate.save(settings.home / "certs", name)
    typer.echo(str(cert_path))


def _grant(scope: str, provider: str | None, dseq: int | None, services: str) -> dict[str, Any]:
    """Akash's ``leases`` claim from the command line's options."""
    scopes = [s.strip() for s in scope.split(",") if s.strip()]
    if dseq is not None:
        if provider is None or not scopes or not services:
            raise fail("--dseq needs --provider, --scope and --services")
        deployment = {"dseq": dseq, "scope": scopes, "services": services.split(",")}
        permission: dict[str, Any] = {
            "provider": provider,
            "access": "granular",
            "deployments": [deployment],
        }
    elif provider is not None:
        permission = {"provider": provider, "access": "scoped" if scopes else "full"}
        if scopes:
            permission["scope"] = scopes
    else:
        return {"access": "scoped", "scope": scopes} if scopes else {"access": "full"}
    return {"access": "granular", "permissions": [permission]}


@tenant_app.command("token")
def tenant_token(
    *,
    key: KeyName = "tenant-1",
    home: Home = None,
    scope: Annotated[
        str,
        typer.Option(
            help="comma-separated actions (default: all): send-manifest, get-manifest, logs, "
            "shell, events, status, restart, hostname-migrate, ip-migrate"
        ),
    ] = "",
    provider: Annotated[
        str | None, typer.Option(help="valid at this provider only (bech32 address)")
    ] = None,
    dseq: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_UINT64, help="only on this deployment (with --services)"),
    ] = None,
    services: Annotated[str, typer.Option(help="comma-separated services, with --dseq")] = "",
    lifetime: Annotated[
        int, typer.Option(min=1, max=31 * 86400, help="seconds the token is valid")
    ] = 900,
) -> None:
    """Print a provider-API token (JWT, ES256K) signed by the tenant's key, for
    ``Authorization: Bearer``; the provider checks it with the key the chain records."""
    signer = load_key(settings_of(home), key)
    try:
        token = jwt.mint(
            signer,
            _grant(scope, provider, dseq, services),
            lifetime=dt.timedelta(seconds=lifetime),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise fail(f"token claims: {where}: {first['msg']}") from None
    typer.echo(token)


@tenant_app.command("send-manifest")
def tenant_send_manifest(
    *,
    dseq: Dseq,
    sdl_file: Annotated[Path, typer.Option("--sdl", help="the SDL the deployment was made from")],
    provider_url: ProviderUrl = None,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    cert: Annotated[
        bool | None,
        typer.Option(
            "--cert/--no-cert",
            help="authenticate with the certificate saved by `tenant cert` "
            "(default: when there is one)",
        ),
    ] = None,
    verify_provider: VerifyProvider = True,
) -> None:
    """PUT the manifest to the provider that won the lease."""
    settings = settings_of(home)
    sdl = read_sdl(sdl_file)
    signer = load_key(settings, key)
    certificate = None
    if cert is None:
        certificate = saved_certificate(settings, key)
    elif cert:
        certificate = required_certificate(settings, key)

    async def work(tenant: Tenant) -> list[str]:
        leases = await tenant.lcd.leases(owner=tenant.address, dseq=dseq, state="active")
        if not leases:
            await tenant.check_active(dseq)
            raise LookupError(f"deployment {dseq} has no active lease")
        answers = []
        for provider in sorted({lease.id.provider for lease in leases}):
            url = provider_url or (await tenant.lcd.provider(provider)).host_uri
            checked = provider if verify_provider and certificate is not None else None
            status, body = await tenant.send_manifest_answer(
                dseq, sdl, url, certificate=certificate, provider=checked
            )
            message = body.get("message") if isinstance(body, dict) else None
            answers.append(f"{provider} {url}: HTTP {status}" + (f": {message}" if message else ""))
        return answers

    for line in run(with_tenant(settings, signer, node, lcd, work)):
        typer.echo(line)


@app.command()
def simulate(
    *,
    sdl_dir: Annotated[Path, typer.Option("--sdl-dir", help="folder of SDL files")],
    tenants: Annotated[int, typer.Option(min=1, max=1000, help="tenants running at once")] = 3,
    rounds: Annotated[
        int | None, typer.Option(min=1, help="deployments per tenant (default: forever)")
    ] = None,
    provider_url: Annotated[str | None, typer.Option(help="send manifests to this gateway")] = None,
    hold: Annotated[
        float, typer.Option(min=0, help="longest time a lease is kept, seconds")
    ] = 30.0,
    seed: Annotated[int | None, typer.Option(help="random seed")] = None,
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
) -> None:
    """Run tenants that deploy random SDLs, lease, keep and close, over and over."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = settings_of(home)
    sdls = load_sdls(sdl_dir)
    if not sdls:
        raise fail(f"--sdl-dir: no valid SDL under {sdl_dir}")
    faucet = load_key(settings, "faucet")

    async def work() -> str:
        async with chain(settings, node, lcd) as (rpc, rest, chain_id):
            sim = Simulation(
                rpc,
                rest,
                chain_id,
                faucet,
                sdls,
                provider_url=provider_url,
                hold=(min(1.0, hold), hold),
            )
            stats = await sim.run(tenants, rounds=rounds, seed=seed)
        return json.dumps(stats.__dict__)

    typer.echo(run(work()))
