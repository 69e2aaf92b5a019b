"""``akdevnet tenant …``, ``akdevnet bid`` and ``akdevnet simulate``: act on the chain as its
tenants, or bid by hand as one of its providers (``provider``, ``competitor``). Every option
value is checked before anything is sent; what the chain refuses comes back as one error line.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from akchain import jwt, msgs
from akchain.keys import Signer
from akchain.wallet import Wallet
from akdevnet.cli_common import (
    BadOption,
    Dseq,
    Home,
    KeyName,
    Lcd,
    Node,
    app,
    chain,
    coin,
    coins,
    fail,
    key_name,
    load_key,
    read_sdl,
    run,
    settings_of,
    tenant_app,
    with_tenant,
)
from akdevnet.homedir import key_path
from akdevnet.settings import DevnetSettings
from akdevnet.simulate import Simulation, load_sdls
from akdevnet.tenant import ClientCertificate, Tenant
from aktypes.address import validate_address
from aktypes.coin import Dec, DecCoin
from aktypes.errors import AkTypesError
from aktypes.ids import BidID

MAX_UINT64 = 2**64 - 1
MAX_UINT32 = 2**32 - 1


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


def _cert_name(key: str) -> str:
    return key_name(Path(key).stem if key.endswith(".json") else key)


@tenant_app.command("cert")
def tenant_cert(
    *, key: KeyName = "tenant-1", home: Home = None, node: Node = None, lcd: Lcd = None
) -> None:
    """Create a client certificate, publish it on chain, save it under the home's certs/."""
    settings = settings_of(home)
    name = _cert_name(key)
    signer = load_key(settings, key)

    async def work(tenant: Tenant) -> ClientCertificate:
        return await tenant.create_certificate()

    certificate = run(with_tenant(settings, signer, node, lcd, work))
    cert_path, _ = certificate.save(settings.home / "certs", name)
    typer.echo(str(cert_path))


def _saved_certificate(settings: DevnetSettings, key: str) -> ClientCertificate | None:
    """The certificate ``tenant cert`` saved for ``key`` (None: there is none)."""
    name = _cert_name(key)
    try:
        return ClientCertificate(
            (settings.home / "certs" / f"{name}.crt").read_bytes(),
            (settings.home / "certs" / f"{name}.key").read_bytes(),
        )
    except FileNotFoundError:
        return None


def _required_certificate(settings: DevnetSettings, key: str) -> ClientCertificate:
    certificate = _saved_certificate(settings, key)
    if certificate is None:
        raise fail(
            f"no saved certificate for {_cert_name(key)!r}; run `akdevnet tenant cert` first"
        )
    return certificate


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


ProviderUrl = Annotated[
    str | None, typer.Option(help="gateway URL (default: the provider's host URI on chain)")
]
VerifyProvider = Annotated[
    bool,
    typer.Option(
        "--verify-provider/--no-verify-provider",
        help="the gateway must present the provider's certificate published on chain",
    ),
]
Gseq = Annotated[int, typer.Option(min=1, max=MAX_UINT32, help="group sequence")]
Oseq = Annotated[int, typer.Option(min=1, max=MAX_UINT32, help="order sequence")]


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
        certificate = _saved_certificate(settings, key)
    elif cert:
        certificate = _required_certificate(settings, key)

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


async def _lease_gateway(
    tenant: Tenant, dseq: int, gseq: int, oseq: int, provider_url: str | None
) -> tuple[str, str]:
    """The provider of the tenant's lease ``dseq/gseq/oseq`` and its gateway's URL."""
    leases = await tenant.lcd.leases(owner=tenant.address, dseq=dseq)
    found = sorted(
        (lease for lease in leases if (lease.id.gseq, lease.id.oseq) == (gseq, oseq)),
        key=lambda lease: lease.state != "active",
    )
    if not found:
        await tenant.check_active(dseq)
        raise LookupError(f"deployment {dseq} has no lease {gseq}/{oseq}")
    provider = found[0].id.provider
    return provider, provider_url or (await tenant.lcd.provider(provider)).host_uri


def _show(url: str, answer: tuple[int, Any]) -> str:
    status, body = answer
    if status == 200:
        return json.dumps(body, indent=2, sort_keys=True)
    message = body.get("message") if isinstance(body, dict) else body
    raise BadOption(f"{url}: HTTP {status}: {message}")


def _lease_query(
    what: Callable[[Tenant, str, ClientCertificate, str | None], Awaitable[tuple[int, Any]]],
    target: tuple[int, int, int, str | None, bool],
    *,
    key: str,
    home: Path | None,
    node: str | None,
    lcd: str | None,
) -> None:
    settings = settings_of(home)
    signer = load_key(settings, key)
    certificate = _required_certificate(settings, key)
    dseq, gseq, oseq, provider_url, verify = target

    async def work(tenant: Tenant) -> str:
        provider, url = await _lease_gateway(tenant, dseq, gseq, oseq, provider_url)
        answer = await what(tenant, url, certificate, provider if verify else None)
        return _show(url, answer)

    typer.echo(run(with_tenant(settings, signer, node, lcd, work)))


@tenant_app.command("lease-status")
def tenant_lease_status(
    *,
    dseq: Dseq,
    gseq: Gseq = 1,
    oseq: Oseq = 1,
    provider_url: ProviderUrl = None,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    verify_provider: VerifyProvider = True,
) -> None:
    """A lease's services, forwarded ports and IPs, from the provider's gateway."""

    async def what(
        tenant: Tenant, url: str, certificate: ClientCertificate, provider: str | None
    ) -> tuple[int, Any]:
        return await tenant.lease_status(dseq, gseq, oseq, url, certificate, provider=provider)

    target = (dseq, gseq, oseq, provider_url, verify_provider)
    _lease_query(what, target, key=key, home=home, node=node, lcd=lcd)


@tenant_app.command("service-status")
def tenant_service_status(
    *,
    dseq: Dseq,
    service: Annotated[str, typer.Argument(help="service name in the SDL")],
    gseq: Gseq = 1,
    oseq: Oseq = 1,
    provider_url: ProviderUrl = None,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    verify_provider: VerifyProvider = True,
) -> None:
    """One service of a lease, from the provider's gateway."""

    async def what(
        tenant: Tenant, url: str, certificate: ClientCertificate, provider: str | None
    ) -> tuple[int, Any]:
        return await tenant.service_status(
            dseq, gseq, oseq, service, url, certificate, provider=provider
        )

    target = (dseq, gseq, oseq, provider_url, verify_provider)
    _lease_query(what, target, key=key, home=home, node=node, lcd=lcd)


@tenant_app.command("lease-manifest")
def tenant_lease_manifest(
    *,
    dseq: Dseq,
    gseq: Gseq = 1,
    oseq: Oseq = 1,
    provider_url: ProviderUrl = None,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    verify_provider: VerifyProvider = True,
) -> None:
    """The manifest group the provider deployed for a lease."""

    async def what(
        tenant: Tenant, url: str, certificate: ClientCertificate, provider: str | None
    ) -> tuple[int, Any]:
        return await tenant.lease_manifest(dseq, gseq, oseq, url, certificate, provider=provider)

    target = (dseq, gseq, oseq, provider_url, verify_provider)
    _lease_query(what, target, key=key, home=home, node=node, lcd=lcd)


@tenant_app.command("close")
def tenant_close(
    *, dseq: Dseq, key: KeyName = "tenant-1", home: Home = None, node: Node = None, lcd: Lcd = None
) -> None:
    """Close a deployment (its leases close and the rest of the deposit is refunded)."""
    settings = settings_of(home)
    signer = load_key(settings, key)

    async def work(tenant: Tenant) -> None:
        await tenant.close(dseq)

    run(with_tenant(settings, signer, node, lcd, work))
    typer.echo(f"closed {dseq}")


def _bid_price(text: str) -> Dec | DecCoin:
    """``--price``: a bare decimal (in each order's denomination), or a decimal coin."""
    parsed: Dec | DecCoin | None
    try:
        parsed = Dec(text.strip())
    except ValueError:
        try:
            parsed = DecCoin.parse(text)
        except ValueError:
            parsed = None
    amount = parsed.amount if isinstance(parsed, DecCoin) else parsed
    if parsed is None or amount is None or amount.is_negative():
        raise fail(
            f"--price {text!r} is not a price: a non-negative decimal amount in the order's "
            "denomination, e.g. 0.5, or with its denomination, e.g. 0.5uact"
        )
    return parsed


@app.command()
def bid(
    *,
    dseq: Dseq,
    owner: Annotated[
        str | None, typer.Option(help="the deployment's owner (default: tenant-1's address)")
    ] = None,
    key: KeyName = "provider",
    price_text: Annotated[
        str | None,
        typer.Option(
            "--price",
            help="price per block, in the order's denomination: 0.5 or 0.5uact "
            "(default: half the order's maximum)",
        ),
    ] = None,
    deposit: Annotated[str, typer.Option(help="bid deposit")] = "500000uakt",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
) -> None:
    """Bid on every open order of a deployment, as a provider, by hand (no bid engine needed).

    With --key competitor it bids as the devnet's second provider.
    """
    settings = settings_of(home)
    given = _bid_price(price_text) if price_text is not None else None
    wanted = given if isinstance(given, DecCoin) else None
    bid_deposit = coin("--deposit", deposit)
    signer = load_key(settings, key)
    tenant = owner or load_key(settings, "tenant-1").address

    async def work() -> list[str]:
        async with chain(settings, node, lcd) as (rpc, rest, chain_id):
            orders = await rest.orders(owner=tenant, dseq=dseq, state="open")
            if not orders:
                raise LookupError(f"deployment {tenant}/{dseq} has no open order")
            for order in orders:
                denom = order.spec.price().denom
                if wanted is not None and wanted.denom != denom:
                    raise BadOption(
                        f"--price {price_text}: order {order.id} is priced in {denom}, "
                        f"not {wanted.denom}; give the price in {denom}"
                    )
            wallet = Wallet(signer, rpc, rest, chain_id=chain_id)
            placed = []
            for order in orders:
                full = order.spec.price()
                if isinstance(given, Dec):
                    amount = DecCoin(denom=full.denom, amount=given)
                else:
                    amount = wanted or DecCoin(denom=full.denom, amount=full.amount.quo(2))
                bid_id = BidID(
                    owner=order.id.owner,
                    dseq=order.id.dseq,
                    gseq=order.id.gseq,
                    oseq=order.id.oseq,
                    provider=signer.address,
                )
                await wallet.send(msgs.create_bid(bid_id, amount, bid_deposit))
                placed.append(f"{bid_id} {amount}")
            return placed

    for line in run(work()):
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
