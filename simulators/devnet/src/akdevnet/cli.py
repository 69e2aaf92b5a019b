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

Errors are one line on stderr (``error: …``): exit status 1 for what went wrong, 2 for a
command line that does not parse.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

# importing them registers their commands, in the order the help lists them: bid; tenant
# new … send-manifest, simulate; tenant lease-status … close
from akdevnet import cli_bid, cli_tenant, cli_tenant_lease  # noqa: F401
from akdevnet.cli_common import Home, app, fail, settings_of
from akdevnet.genesis import Genesis, GenesisError
from akdevnet.homedir import HomeInUse, home_lock
from akdevnet.node import init_home
from akdevnet.node import run as run_node
from akdevnet.store import Database

__all__ = ["app", "main"]
MAX_HEIGHT = 2**62


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default: the process's arguments); the exit status."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="akdevnet", standalone_mode=False)
    except typer.TyperException as exc:  # a command line that does not parse
        message = exc.format_message().strip()
        if "\n" in message:  # the help of a group given no command
            typer.echo(message, err=True)
        elif message:
            typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
        return exc.exit_code
    except typer.Abort:
        typer.secho("error: aborted", err=True, fg=typer.colors.RED)
        return 1
    return result if isinstance(result, int) else 0


# -- the chain ------------------------------------------------------------------------------


@app.command()
def init(
    home: Home = None,
    tenants: Annotated[int, typer.Option(min=0, max=100, help="tenant keys to create")] = 3,
    provider_host_uri: Annotated[
        str, typer.Option(help="the provider's gateway URL")
    ] = "https://localhost:8443",
    chain_id: Annotated[str, typer.Option(help="chain id")] = "akash-devnet-1",
    force: Annotated[
        bool, typer.Option(help="replace an existing chain (deletes its state)")
    ] = False,
) -> None:
    """Create keys and a genesis: a faucet, a provider with audited attributes, tenants."""
    settings = settings_of(home)
    uri = urlsplit(provider_host_uri)
    if uri.scheme not in ("http", "https") or not uri.netloc:
        raise fail(f"--provider-host-uri {provider_host_uri!r} is not an http(s) URL")
    if not chain_id or len(chain_id) > 48 or not chain_id.isprintable() or " " in chain_id:
        raise fail(f"--chain-id {chain_id!r}: use 1-48 printable characters without spaces")
    try:
        with home_lock(settings.home):
            created = init_home(
                settings,
                tenants=tenants,
                provider_host_uri=provider_host_uri,
                chain_id=chain_id,
                force=force,
            )
    except (FileExistsError, HomeInUse) as exc:
        raise fail(str(exc)) from None
    for account in created.genesis.accounts:
        typer.echo(f"{account.name:<12} {account.address}")
    typer.echo(f"genesis: {settings.genesis_path}")


@app.command()
def start(
    home: Home = None,
    rpc: Annotated[
        str | None,
        typer.Option("--rpc", envvar="AKDEVNET_RPC_LISTEN", help="RPC listen host:port (0: any)"),
    ] = None,
    lcd: Annotated[
        str | None,
        typer.Option("--lcd", envvar="AKDEVNET_LCD_LISTEN", help="LCD listen host:port (0: any)"),
    ] = None,
    grpc: Annotated[
        str | None,
        typer.Option(
            "--grpc",
            envvar="AKDEVNET_GRPC_LISTEN",
            help="gRPC query listen host:port (0: any; default: no gRPC server)",
        ),
    ] = None,
    block_time: Annotated[
        str | None,
        typer.Option(envvar="AKDEVNET_BLOCK_TIME", help="time between blocks, e.g. 1s or 20ms"),
    ] = None,
) -> None:
    """Produce blocks and serve the RPC and LCD APIs, and gRPC queries with --grpc (creates
    the home first if needed).

    One devnet runs per home; it records where it listens in the home for the tenant tools.
    """
    settings = settings_of(
        home, rpc_listen=rpc, lcd_listen=lcd, grpc_listen=grpc, block_time=block_time
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        run_node(settings)
    except (HomeInUse, GenesisError, ValueError, OSError) as exc:
        raise fail(str(exc)) from None


@app.command()
def keys(home: Home = None) -> None:
    """The names and addresses of the home's keys: genesis accounts first, then the others."""
    settings = settings_of(home)
    files = sorted(settings.keys_dir.glob("*.json")) if settings.keys_dir.is_dir() else []
    if not files:
        raise fail(f"no key files in {settings.keys_dir} (run `akdevnet init`)")
    try:
        first = [account.name for account in Genesis.load(settings.genesis_path).accounts]
    except GenesisError:
        first = []
    addresses = {path.stem: _address(path) for path in files}
    for name in [n for n in first if n in addresses] + sorted(set(addresses) - set(first)):
        typer.echo(f"{name:<12} {addresses[name]}")


def _address(path: Path) -> str:
    """The address a key file keeps in clear (no passphrase needed)."""
    try:
        return str(json.loads(path.read_text())["address"])
    except (OSError, ValueError, TypeError, KeyError):
        return "(not a key file)"


@app.command()
def events(
    home: Home = None,
    from_height: Annotated[
        int, typer.Option("--from", min=0, max=MAX_HEIGHT, help="first height")
    ] = 0,
    to_height: Annotated[
        int | None, typer.Option("--to", min=0, max=MAX_HEIGHT, help="last height")
    ] = None,
    typed_only: Annotated[
        bool, typer.Option("--typed/--all", help="only Akash's typed events")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per line")] = False,
) -> None:
    """The chain's own event log, read from its state file."""
    settings = settings_of(home)
    if not settings.state_path.exists():
        raise fail(f"no chain state at {settings.state_path}")
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
