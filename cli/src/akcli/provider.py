"""``akash-provider provider show|create|update``: the provider's registration on chain.

- ``show``: what the chain holds for the provider (host URI, info, attributes), printed in
  ``provider.yaml``'s own format, so it can be saved and edited;
- ``check``: the capabilities check (:mod:`akcli.provider_check`);
- ``create FILE`` / ``update FILE``: register the provider, or replace its record, from a
  ``provider.yaml`` in the format of Go's ``provider-services tx provider create|update``
  (:mod:`aktypes.providerconfig`). ``--dry-run`` prints each difference from the chain's
  record and sends nothing.

The transaction goes through the chain relay, signed with its key (``AP_KEY_FILE``): one
``BroadcastTx`` on ``akash.provider.chain.tx`` under a key made of the provider, the record
on chain and the wanted one (:mod:`akservice.chaintx`), so a repeated command sends nothing
twice; one that failed, or that was undone since by other means, is sent again once when
repeated. A record already as wanted sends nothing. The result is read back through the
node's REST API (``--api``, else ``AP_API``).

``update --sync-capabilities`` replaces the record's capability attributes with the ones
the cluster's inventory calls for (the capabilities check on the cluster's status,
:mod:`akcli.provider_check`) and keeps every other one; ``check`` prints that check.
:func:`register` is the same from code, with ``capabilities``.

The provider's address: ``--address``, else ``AP_PROVIDER_ADDRESS``, else the key store's
(``AP_KEY_FILE``, no passphrase needed), else the one the relay's status names; ``create``
and ``update`` use the relay's and refuse another. Exit codes: 0 done (or nothing to do),
1 refused or failed (one line says why), 2 a wrong use.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn, TypeVar

import typer
import yaml

from akbus import Bus, ConnectionLost
from akchain.errors import ChainError, KeyFileError, NotFound
from akchain.keys import key_file_address
from akchain.lcd import LCDClient
from akchain.models import Provider
from akcli.bus import RedisUrl, Wait, with_bus
from akcli.keys import key_store
from akcli.provider_check import advertised
from akcli.provider_check import check as check_command
from akdevnet.homedir import read_endpoints
from akservice.chaintx import NoAnswer, broadcast_once, relay_address
from aktypes.capabilities import with_capabilities
from aktypes.events import CreateProvider, TxFailed, UpdateProvider
from aktypes.providerconfig import (
    Change,
    ProviderConfig,
    ProviderConfigError,
    changes,
    check,
    parse_provider_config,
)

T = TypeVar("T")
Kind = Literal["create", "update"]

app = typer.Typer(
    help="The provider's registration on chain: show it, create it, update it.",
    no_args_is_help=True,
)
Api = Annotated[
    str | None,
    typer.Option(
        "--api",
        help="The node's REST API (default: $AP_API, else the devnet of a running "
        "`akash-provider run` here, else http://localhost:1317).",
        show_default=False,
    ),
]
Address = Annotated[
    str | None,
    typer.Option(
        "--address",
        help="The provider account (default: $AP_PROVIDER_ADDRESS, else the key store's, "
        "else the chain relay's).",
        show_default=False,
    ),
]
ConfigFile = Annotated[
    Path, typer.Argument(help="provider.yaml: host, info {email, website}, attributes.")
]
UpdateFile = Annotated[
    Path | None,
    typer.Argument(
        help="provider.yaml: host, info {email, website}, attributes (with "
        "--sync-capabilities it may be left out: the chain's record is the start).",
        show_default=False,
    ),
]
SyncCapabilities = Annotated[
    bool,
    typer.Option(
        "--sync-capabilities",
        help="Advertise what the cluster's inventory offers: every capability attribute "
        "replaced by the ones the capabilities check calls for (`provider check --attributes`).",
    ),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print the difference from the chain; send nothing.")
]
Timeout = Annotated[
    float, typer.Option("--timeout", min=1, help="Seconds to wait for the transaction.")
]


class Refused(Exception):
    """The command cannot go on; the message says why."""


def fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"akash-provider provider: {message}", err=True)
    raise typer.Exit(code=code)


EMBEDDED_DEVNET = Path(".akash-provider") / "devnet"
"""The devnet of ``akash-provider run`` (its default state folder), found while it runs."""


def api_url(option: str | None) -> str:
    if option or (option := os.environ.get("AP_API")):
        return option
    running = read_endpoints(EMBEDDED_DEVNET)
    return running.lcd if running else "http://localhost:1317"


def record_of(provider: Provider) -> ProviderConfig:
    return ProviderConfig(
        host=provider.host_uri,
        attributes=list(provider.attributes),
        email=provider.email,
        website=provider.website,
    )


async def on_chain(lcd: LCDClient, address: str) -> ProviderConfig | None:
    """The chain's record of ``address``; ``None`` when it is not a provider."""
    try:
        return record_of(await lcd.provider(address))
    except NotFound:
        return None
    except ChainError as exc:
        raise Refused(f"cannot read the provider from the node: {exc}") from None


def _key(kind: Kind, address: str, current: ProviderConfig | None, wanted: ProviderConfig) -> str:
    """A key for this change of this provider's record: the same command gives the same key."""
    document = [address, current.model_dump() if current else None, wanted.model_dump()]
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
    return f"{kind}-provider/{address}/{digest[:24]}"


@dataclass(frozen=True)
class Outcome:
    """What :func:`register` did."""

    address: str
    changes: list[Change]
    sent: bool  # a transaction was committed by this call (or an identical earlier one)
    tx_hash: str = ""
    height: int = 0


async def register(
    bus: Bus | None,
    lcd: LCDClient,
    kind: Kind,
    address: str,
    config: ProviderConfig | None,
    *,
    capabilities: Mapping[str, str] | None = None,
    dry_run: bool = False,
    timeout: float = 60.0,
) -> Outcome:
    """Create or update ``address``'s record from ``config`` (or, for an update without one,
    from the chain's record), its ``capabilities/*`` replaced by ``capabilities`` if given."""
    current = await on_chain(lcd, address)
    if kind == "create" and current is not None and config is not None:
        if not changes(current, config):
            return Outcome(address, [], sent=False)
        raise Refused(f"{address} is registered already: `provider update` changes its record")
    if kind == "update" and current is None:
        raise Refused(f"{address} is not a registered provider: `provider create` registers it")
    base = config or current
    if base is None:
        raise Refused("no provider.yaml and no record on chain to start from")
    wanted = base
    if capabilities is not None:
        try:
            merged = with_capabilities(base.attributes, capabilities)
            wanted = base.model_copy(update={"attributes": merged})
            check(wanted)
        except (ProviderConfigError, ValueError) as exc:
            raise Refused(str(exc)) from None
    found = changes(current, wanted)
    if dry_run or not found:
        return Outcome(address, found, sent=False)
    if bus is None:
        raise Refused("no bus to reach the chain relay")
    command = CreateProvider if kind == "create" else UpdateProvider
    message: CreateProvider | UpdateProvider = command(
        host_uri=wanted.host,
        attributes=wanted.attributes,
        email=wanted.email,
        website=wanted.website,
    )
    key = _key(kind, address, current, wanted)
    try:
        outcome = await broadcast_once(bus, key, [message], timeout=timeout, retry_failed=True)
    except NoAnswer as exc:
        raise Refused(str(exc)) from None
    if (
        outcome.earlier
        and not isinstance(outcome.result, TxFailed)
        and changes(await on_chain(lcd, address), wanted)
    ):  # that change was committed before, and the record has been changed back since
        try:
            outcome = await broadcast_once(bus, key, [message], timeout=timeout, again=True)
        except NoAnswer as exc:
            raise Refused(str(exc)) from None
    result = outcome.result
    if isinstance(result, TxFailed):
        raise Refused(
            f"the chain refused the {kind} ({result.codespace or 'sdk'} {result.code}): "
            f"{result.log}"
        )
    after = await on_chain(lcd, address)
    if after is None or changes(after, wanted):
        raise Refused(f"tx {result.tx_hash} committed, but the node shows another record")
    return Outcome(address, found, sent=True, tx_hash=result.tx_hash, height=result.height)


# -- the commands ---------------------------------------------------------------------------


def _local_address(option: str | None) -> str | None:
    if option or (option := os.environ.get("AP_PROVIDER_ADDRESS")):
        return option
    store = key_store(None)
    if store.exists():
        try:
            return key_file_address(store)
        except KeyFileError as exc:
            fail(str(exc))
    return None


async def _relay_address(bus: Bus) -> str:
    try:
        address = await relay_address(bus, wait_s=10.0)
    except ConnectionLost as exc:
        raise Refused(f"Redis is unreachable ({exc})") from None
    if address is None:
        raise Refused(
            "the chain relay names no provider: is it running (python -m akchainsvc)? "
            "It signs the transaction"
        )
    return address


def _read_config(path: Path) -> ProviderConfig:
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        fail(f"{path} is not text")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    try:
        return parse_provider_config(text, str(path))
    except ProviderConfigError as exc:
        fail(str(exc))


def _run(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    try:
        return asyncio.run(work())
    except Refused as exc:
        fail(str(exc))


def _report(kind: Kind, outcome: Outcome, *, dry_run: bool) -> None:
    for change in outcome.changes:
        typer.echo(f"  {change}")
    if not outcome.changes:
        typer.echo(f"{outcome.address}: the chain holds this record already; nothing to send")
    elif dry_run:
        typer.echo(f"{outcome.address}: {len(outcome.changes)} change(s) not sent (--dry-run)")
    else:
        done = "registered" if kind == "create" else "updated"
        typer.echo(
            f"{outcome.address}: provider {done} (tx {outcome.tx_hash}, height {outcome.height})"
        )


def change_record(
    kind: Kind,
    config: ProviderConfig | None,
    *,
    capabilities: Mapping[str, str] | None = None,
    api: str | None = None,
    address: str | None = None,
    dry_run: bool = False,
    timeout: float = 60.0,
    redis_url: str | None = None,
    wait: float = 5.0,
) -> None:
    """``provider create|update`` from code: print the changes and the outcome, or exit."""
    if dry_run and (found := _local_address(address)):

        async def preview() -> Outcome:
            async with LCDClient(api_url(api)) as lcd:
                return await register(
                    None, lcd, kind, found, config, capabilities=capabilities, dry_run=True
                )

        _report(kind, _run(preview), dry_run=True)
        return

    async def work(bus: Bus) -> Outcome:
        signer = await _relay_address(bus)
        if address and address != signer:
            raise Refused(f"the chain relay signs for {signer}, not {address}")
        async with LCDClient(api_url(api)) as lcd:
            return await register(
                bus, lcd, kind, signer, config,
                capabilities=capabilities, dry_run=dry_run, timeout=timeout,
            )  # fmt: skip

    _report(kind, with_bus(redis_url, lambda bus: _guard(work(bus)), wait), dry_run=dry_run)


async def _guard(work: Awaitable[T]) -> T:
    try:
        return await work
    except Refused as exc:
        fail(str(exc))


@app.command()
def show(
    api: Api = None, address: Address = None, redis_url: RedisUrl = None, wait: Wait = 5.0
) -> None:
    """Print the provider's record on chain, as provider.yaml."""
    found = _local_address(address)
    if found is None:
        found = with_bus(redis_url, lambda bus: _guard(_relay_address(bus)), wait)

    async def work() -> ProviderConfig | None:
        async with LCDClient(api_url(api)) as lcd:
            return await on_chain(lcd, found)

    record = _run(work)
    if record is None:
        fail(f"{found} is not a registered provider")
    document: dict[str, object] = {"owner": found, "host": record.host}
    if record.email or record.website:
        document["info"] = {"email": record.email, "website": record.website}
    document["attributes"] = [{"key": a.key, "value": a.value} for a in record.attributes]
    typer.echo(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), nl=False)


@app.command()
def create(  # noqa: PLR0917 - typer options
    config: ConfigFile,
    dry_run: DryRun = False,
    api: Api = None,
    address: Address = None,
    timeout: Timeout = 60.0,
    redis_url: RedisUrl = None,
    wait: Wait = 5.0,
) -> None:
    """Register the provider on chain from provider.yaml (through the chain relay)."""
    change_record(
        "create", _read_config(config), api=api, address=address, dry_run=dry_run,
        timeout=timeout, redis_url=redis_url, wait=wait,
    )  # fmt: skip


@app.command()
def update(  # noqa: PLR0917 - typer options
    config: UpdateFile = None,
    dry_run: DryRun = False,
    sync_capabilities: SyncCapabilities = False,
    api: Api = None,
    address: Address = None,
    timeout: Timeout = 60.0,
    redis_url: RedisUrl = None,
    wait: Wait = 5.0,
) -> None:
    """Replace the provider's host URI, attributes and info on chain with provider.yaml's."""
    if config is None and not sync_capabilities:
        fail("give provider.yaml, or --sync-capabilities to update the chain's record", code=2)
    capabilities = advertised(redis_url, wait) if sync_capabilities else None
    change_record(
        "update", _read_config(config) if config else None, capabilities=capabilities,
        api=api, address=address, dry_run=dry_run, timeout=timeout, redis_url=redis_url,
        wait=wait,
    )  # fmt: skip


app.command("check")(check_command)
