"""``python -m akdevnet``: run the local chain and act as its tenants.

akdevnet init                       keys + genesis in the home folder
akdevnet start                      produce blocks, serve RPC (26657) and LCD (1317)
akdevnet keys                       names and addresses of the home's keys
akdevnet events                     the chain's event log
akdevnet tenant new NAME            a funded tenant key
akdevnet tenant deploy SDL          create a deployment (prints its dseq)
akdevnet tenant bids DSEQ           open bids on a deployment
akdevnet tenant accept DSEQ         lease the cheapest bid of each order
akdevnet tenant send-manifest DSEQ  PUT the manifest to the provider's gateway
akdevnet tenant close DSEQ          close a deployment
akdevnet simulate                   tenants deploying SDLs from a folder, continuously
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from akchain import msgs
from akchain.errors import ChainError, KeyFileError
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from akchain.wallet import Wallet
from akdevnet.genesis import Genesis, GenesisError
from akdevnet.node import init_home, run
from akdevnet.settings import DevnetSettings
from akdevnet.simulate import Simulation, load_sdls
from akdevnet.store import Database
from akdevnet.tenant import ClientCertificate, Tenant
from aktypes.coin import Coin, DecCoin
from aktypes.errors import SDLError
from aktypes.ids import BidID
from aktypes.sdl import SDL, parse_sdl

app = typer.Typer(
    help="A local Akash-like chain for the provider, with tenant tools.", no_args_is_help=True
)
tenant_app = typer.Typer(help="Act as a tenant on the chain.", no_args_is_help=True)
app.add_typer(tenant_app, name="tenant")

T = TypeVar("T")
Home = Annotated[Path | None, typer.Option("--home", help="devnet home folder (AKDEVNET_HOME)")]
KeyName = Annotated[
    str, typer.Option("--key", "-k", help="key name in the home's keys/ or a key file path")
]
Node = Annotated[str | None, typer.Option("--node", help="RPC URL (default: the devnet's own)")]
Lcd = Annotated[str | None, typer.Option("--lcd", help="LCD URL (default: the devnet's own)")]


def _settings(home: Path | None, **overrides: Any) -> DevnetSettings:
    values = {k: v for k, v in overrides.items() if v is not None}
    if home is not None:
        values["home"] = home
    return DevnetSettings(**values)


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(1)


def _run(work: Awaitable[T]) -> T:
    try:
        return asyncio.run(work)  # type: ignore[arg-type]
    except (
        ChainError,
        KeyFileError,
        GenesisError,
        SDLError,
        TimeoutError,
        LookupError,
        OSError,
    ) as exc:
        raise _fail(str(exc)) from None


def _load_key(settings: DevnetSettings, name: str) -> Signer:
    path = Path(name) if name.endswith(".json") else settings.keys_dir / f"{name}.json"
    return Signer.load(path, settings.key_passphrase.get_secret_value())


def _read_sdl(path: Path) -> SDL:
    try:
        return parse_sdl(path.read_bytes())
    except FileNotFoundError:
        raise _fail(f"SDL file {path} does not exist") from None
    except SDLError as exc:
        problems = "\n  ".join(str(d) for d in exc.diagnostics)
        raise _fail(f"{path} is not a valid SDL:\n  {problems}") from None


@asynccontextmanager
async def _chain(
    settings: DevnetSettings, node: str | None, lcd: str | None
) -> AsyncIterator[tuple[RPCClient, LCDClient, str]]:
    async with (
        RPCClient(node or settings.rpc_url) as rpc,
        LCDClient(lcd or settings.lcd_url) as rest,
    ):
        status = await rpc.status()
        yield rpc, rest, status.chain_id


async def _with_tenant(
    settings: DevnetSettings,
    key: str,
    node: str | None,
    lcd: str | None,
    work: Callable[[Tenant], Awaitable[T]],
) -> T:
    signer = _load_key(settings, key)
    async with _chain(settings, node, lcd) as (rpc, rest, chain_id):
        return await work(Tenant(Wallet(signer, rpc, rest, chain_id=chain_id), rest))


# -- the chain ------------------------------------------------------------------------------


@app.command()
def init(
    home: Home = None,
    tenants: Annotated[int, typer.Option(help="tenant keys to create")] = 3,
    provider_host_uri: Annotated[
        str, typer.Option(help="the provider's gateway URL")
    ] = "https://localhost:8443",
    chain_id: Annotated[str, typer.Option(help="chain id")] = "akash-devnet-1",
    force: Annotated[
        bool, typer.Option(help="replace an existing chain (deletes its state)")
    ] = False,
) -> None:
    """Create keys and a genesis: a faucet, a provider with audited attributes, tenants."""
    settings = _settings(home)
    try:
        created = init_home(
            settings,
            tenants=tenants,
            provider_host_uri=provider_host_uri,
            chain_id=chain_id,
            force=force,
        )
    except FileExistsError as exc:
        raise _fail(str(exc)) from None
    for account in created.genesis.accounts:
        typer.echo(f"{account.name:<12} {account.address}")
    typer.echo(f"genesis: {settings.genesis_path}")


@app.command()
def start(
    home: Home = None,
    rpc: Annotated[str | None, typer.Option("--rpc", help="RPC listen host:port")] = None,
    lcd: Annotated[str | None, typer.Option("--lcd", help="LCD listen host:port")] = None,
    block_time: Annotated[
        str | None, typer.Option(help="time between blocks, e.g. 1s or 20ms")
    ] = None,
) -> None:
    """Produce blocks and serve the RPC and LCD APIs (creates the home first if needed)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = _settings(home, rpc_listen=rpc, lcd_listen=lcd, block_time=block_time)
    try:
        run(settings)
    except (GenesisError, ValueError, OSError) as exc:
        raise _fail(str(exc)) from None


@app.command()
def keys(home: Home = None) -> None:
    """The names and addresses of the home's accounts."""
    settings = _settings(home)
    try:
        genesis = Genesis.load(settings.genesis_path)
    except GenesisError as exc:
        raise _fail(str(exc)) from None
    for account in genesis.accounts:
        typer.echo(f"{account.name:<12} {account.address}")


@app.command()
def events(
    home: Home = None,
    from_height: Annotated[int, typer.Option("--from", help="first height")] = 0,
    to_height: Annotated[int | None, typer.Option("--to", help="last height")] = None,
    typed_only: Annotated[
        bool, typer.Option("--typed/--all", help="only Akash's typed events")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per line")] = False,
) -> None:
    """The chain's own event log, read from its state file."""
    settings = _settings(home)
    if not settings.state_path.exists():
        raise _fail(f"no chain state at {settings.state_path}")
    db = Database(settings.state_path)
    try:
        for event in db.events(from_height, to_height):
            if typed_only and not event.type.startswith("akash."):
                continue
            if as_json:
                typer.echo(
                    json.dumps(
                        {
                            "position": event.position,
                            "type": event.type,
                            "attributes": event.attributes,
                        }
                    )
                )
            else:
                attrs = " ".join(
                    f"{a['key']}={a['value']}" for a in event.attributes if a["key"] != "msg_index"
                )
                typer.echo(f"{event.position:<14} {event.type} {attrs}")
    finally:
        db.close()


# -- tenants --------------------------------------------------------------------------------


@tenant_app.command("new")
def tenant_new(
    name: str,
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    funds: Annotated[
        str, typer.Option(help="coins sent by the faucet")
    ] = "1000000000uakt,1000000000uact",
) -> None:
    """Create a key file for a new tenant and fund it from the faucet."""
    settings = _settings(home)
    path = settings.keys_dir / f"{name}.json"
    if path.exists():
        raise _fail(f"key {name!r} exists ({path})")
    coins = [Coin.parse(c) for c in funds.split(",") if c]

    async def work() -> str:
        faucet = _load_key(settings, "faucet")
        signer = Signer.generate()
        async with _chain(settings, node, lcd) as (rpc, rest, chain_id):
            await Wallet(faucet, rpc, rest, chain_id=chain_id).send(
                msgs.send(faucet.address, signer.address, coins)
            )
        signer.save(path, settings.key_passphrase.get_secret_value(), name=name)
        return signer.address

    typer.echo(_run(work()))


@tenant_app.command("deploy")
def tenant_deploy(
    sdl_file: Path,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    deposit: Annotated[str, typer.Option(help="escrow deposit")] = "5000000uact",
    dseq: Annotated[
        int | None, typer.Option(help="deployment sequence (default: current height)")
    ] = None,
) -> None:
    """Create a deployment from an SDL file; prints its dseq."""
    settings = _settings(home)
    sdl = _read_sdl(sdl_file)

    async def work(tenant: Tenant) -> int:
        created = await tenant.deploy(sdl, dseq=dseq, deposit=Coin.parse(deposit))
        return created.dseq

    typer.echo(_run(_with_tenant(settings, key, node, lcd, work)))


@tenant_app.command("bids")
def tenant_bids(
    dseq: int, key: KeyName = "tenant-1", home: Home = None, node: Node = None, lcd: Lcd = None
) -> None:
    """Open bids on a deployment, cheapest first."""
    settings = _settings(home)

    async def work(tenant: Tenant) -> list[str]:
        bids = sorted(await tenant.bids(dseq), key=lambda b: b.price.amount)
        return [
            f"{b.id.gseq}/{b.id.oseq} {b.id.provider} {b.price.amount.normalized()}{b.price.denom}"
            for b in bids
        ]

    for line in _run(_with_tenant(settings, key, node, lcd, work)):
        typer.echo(line)


@tenant_app.command("accept")
def tenant_accept(
    dseq: int,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    wait: Annotated[float, typer.Option(help="seconds to wait for bids")] = 30.0,
) -> None:
    """Create a lease on the cheapest bid of each order."""
    settings = _settings(home)

    async def work(tenant: Tenant) -> list[str]:
        await tenant.wait_for_bids(dseq, timeout=wait)
        return [str(lease) for lease in await tenant.accept_cheapest(dseq)]

    for line in _run(_with_tenant(settings, key, node, lcd, work)):
        typer.echo(line)


@tenant_app.command("cert")
def tenant_cert(
    key: KeyName = "tenant-1", home: Home = None, node: Node = None, lcd: Lcd = None
) -> None:
    """Create a client certificate, publish it on chain, save it under the home's certs/."""
    settings = _settings(home)

    async def work(tenant: Tenant) -> ClientCertificate:
        return await tenant.create_certificate()

    certificate = _run(_with_tenant(settings, key, node, lcd, work))
    cert_path, _ = certificate.save(settings.home / "certs", Path(key).stem)
    typer.echo(str(cert_path))


@tenant_app.command("send-manifest")
def tenant_send_manifest(
    dseq: int,
    sdl_file: Annotated[Path, typer.Option("--sdl", help="the SDL the deployment was made from")],
    provider_url: Annotated[
        str | None, typer.Option(help="gateway URL (default: the provider's host URI on chain)")
    ] = None,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    cert: Annotated[
        bool, typer.Option(help="authenticate with the certificate saved by `tenant cert`")
    ] = False,
) -> None:
    """PUT the manifest to the provider that won the lease."""
    settings = _settings(home)
    sdl = _read_sdl(sdl_file)
    certificate = None
    if cert:
        name = Path(key).stem
        try:
            certificate = ClientCertificate(
                (settings.home / "certs" / f"{name}.crt").read_bytes(),
                (settings.home / "certs" / f"{name}.key").read_bytes(),
            )
        except FileNotFoundError:
            raise _fail(
                f"no saved certificate for {name!r}; run `akdevnet tenant cert` first"
            ) from None

    async def work(tenant: Tenant) -> list[str]:
        leases = await tenant.lcd.leases(owner=tenant.address, dseq=dseq, state="active")
        if not leases:
            raise LookupError(f"deployment {dseq} has no active lease")
        answers = []
        for provider in sorted({lease.id.provider for lease in leases}):
            url = provider_url or (await tenant.lcd.provider(provider)).host_uri
            status = await tenant.send_manifest(dseq, sdl, url, certificate=certificate)
            answers.append(f"{provider} {url}: HTTP {status}")
        return answers

    for line in _run(_with_tenant(settings, key, node, lcd, work)):
        typer.echo(line)


@tenant_app.command("close")
def tenant_close(
    dseq: int, key: KeyName = "tenant-1", home: Home = None, node: Node = None, lcd: Lcd = None
) -> None:
    """Close a deployment (its leases close and the rest of the deposit is refunded)."""
    settings = _settings(home)

    async def work(tenant: Tenant) -> None:
        await tenant.close(dseq)

    _run(_with_tenant(settings, key, node, lcd, work))
    typer.echo(f"closed {dseq}")


@app.command()
def bid(
    dseq: int,
    owner: Annotated[
        str | None, typer.Option(help="the deployment's owner (default: tenant-1's address)")
    ] = None,
    key: KeyName = "provider",
    price: Annotated[
        str | None, typer.Option(help="price per block (default: half the order's maximum)")
    ] = None,
    deposit: Annotated[str, typer.Option(help="bid deposit")] = "500000uakt",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
) -> None:
    """Bid on every open order of a deployment, as a provider, by hand (no bid engine needed)."""
    settings = _settings(home)
    signer = _load_key(settings, key)
    tenant = owner or _load_key(settings, "tenant-1").address

    async def work() -> list[str]:
        async with _chain(settings, node, lcd) as (rpc, rest, chain_id):
            orders = await rest.orders(owner=tenant, dseq=dseq, state="open")
            if not orders:
                raise LookupError(f"deployment {tenant}/{dseq} has no open order")
            wallet = Wallet(signer, rpc, rest, chain_id=chain_id)
            placed = []
            for order in orders:
                if price:
                    amount = DecCoin.parse(price)
                else:
                    full = order.spec.price()
                    amount = DecCoin(denom=full.denom, amount=full.amount.quo(2))
                bid_id = BidID(
                    owner=order.id.owner,
                    dseq=order.id.dseq,
                    gseq=order.id.gseq,
                    oseq=order.id.oseq,
                    provider=signer.address,
                )
                await wallet.send(msgs.create_bid(bid_id, amount, Coin.parse(deposit)))
                placed.append(f"{bid_id} {amount}")
            return placed

    for line in _run(work()):
        typer.echo(line)


@app.command()
def simulate(
    sdl_dir: Annotated[Path, typer.Option("--sdl-dir", help="folder of SDL files")],
    tenants: Annotated[int, typer.Option(help="tenants running at once")] = 3,
    rounds: Annotated[
        int | None, typer.Option(help="deployments per tenant (default: forever)")
    ] = None,
    provider_url: Annotated[str | None, typer.Option(help="send manifests to this gateway")] = None,
    hold: Annotated[float, typer.Option(help="longest time a lease is kept, seconds")] = 30.0,
    seed: Annotated[int | None, typer.Option(help="random seed")] = None,
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
) -> None:
    """Run tenants that deploy random SDLs, lease, keep and close, over and over."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = _settings(home)
    sdls = load_sdls(sdl_dir)
    if not sdls:
        raise _fail(f"no valid SDL under {sdl_dir}")

    async def work() -> str:
        faucet = _load_key(settings, "faucet")
        async with _chain(settings, node, lcd) as (rpc, rest, chain_id):
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

    typer.echo(_run(work()))
