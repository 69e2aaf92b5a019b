"""``akash-provider status | leases | orders | events``: what the running provider is doing.

Read from the bus, as the gateway's dashboard reads it: each service's latest retained
status, and the event streams folded into an :class:`aktypes.overview.Overview` (orders
and what was decided on them, leases and their health, the latest events as sentences).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from akbus import Bus
from akcli.bus import RedisUrl, Wait, with_bus
from aktypes.events import (
    BalanceStatus,
    BidEngineStatus,
    ChainStatus,
    ClusterStatus,
    Envelope,
    GatewayStatus,
    InvalidEntryError,
    InventoryCluster,
    ManifestStatus,
    OperatorStatus,
    Payload,
)
from aktypes.events.streams import SERVICES
from aktypes.overview import STREAMS, EventLine, Overview

EVENT_WINDOW = 500  # entries read back per stream for ``events``: most of them may be hidden

MaxAge = Annotated[
    float, typer.Option("--max-age", min=0, help="Seconds after which a status is stale.")
]
FoldWindow = Annotated[
    int, typer.Option("--last", "-n", min=1, help="Entries to read back from each stream.")
]
EventCount = Annotated[int, typer.Option("--last", "-n", min=1, help="How many events to show.")]
Follow = Annotated[
    bool, typer.Option("--follow", "-f", help="Keep printing new events until Ctrl-C.")
]
Streams = Annotated[
    list[str] | None,
    typer.Option(
        "--stream",
        help="Only this stream: chain, bidengine, cluster, manifest or balance (repeatable).",
        show_default=False,
    ),
]


def status(max_age: MaxAge = 60.0, redis_url: RedisUrl = None, wait: Wait = 5.0) -> None:
    """Each service's latest status: how old it is and its key figures."""

    async def work(bus: Bus) -> dict[str, Envelope[Any] | str | None]:
        found: dict[str, Envelope[Any] | str | None] = {}
        for service in SERVICES:  # every part publishes one, the operators and gateway too
            try:
                found[service] = await bus.status(service)
            except InvalidEntryError as exc:
                found[service] = str(exc)
        return found

    statuses = with_bus(redis_url, work, wait)
    now = dt.datetime.now(dt.UTC)
    table = Table()
    for column in ("service", "state", "age", "figures"):
        table.add_column(column)
    missing, stale = [], []
    for service, envelope in statuses.items():
        if envelope is None:
            missing.append(service)
            table.add_row(service, "[red]missing[/red]", "-", "")
        elif isinstance(envelope, str):
            table.add_row(service, "[red]unreadable[/red]", "-", escape(envelope))
        else:
            age = (now - envelope.time).total_seconds()
            state = "[green]ok[/green]"
            if age > max_age:
                stale.append(service)
                state = "[yellow]stale[/yellow]"
            table.add_row(service, state, _ago(age), escape(figures(envelope.payload)))
    console = Console(highlight=False, width=200)
    console.print(table)
    if missing:
        console.print(f"missing: {', '.join(missing)} (no status published)")
    if stale:
        console.print(f"stale: {', '.join(stale)} (older than {max_age:g}s)")


def figures(payload: Payload) -> str:
    """The figures of a status an operator looks at first."""
    match payload:
        case ChainStatus():
            text = (
                f"height {payload.height}, node height {payload.node_height}, "
                f"lag {payload.lag}, pending txs {payload.pending_txs}"
            )
            return text + (f", last error: {payload.last_error}" if payload.last_error else "")
        case BidEngineStatus(orders=orders):
            return f"orders {orders}"
        case ClusterStatus(allocatable=total, available=free):
            text = (
                f"leases {payload.leases}, reservations {payload.reservations_pending} pending "
                f"/ {payload.reservations_active} active, "
                f"cpu {_cpus(free.cpu)} of {_cpus(total.cpu)} free, "
                f"memory {_bytes(free.memory)} of {_bytes(total.memory)} free"
            )
            return text + (f", gpu {free.gpu} of {total.gpu} free" if total.gpu else "")
        case ManifestStatus(deployments=deployments):
            return f"deployments {deployments}"
        case GatewayStatus():
            return (
                f"websockets {payload.websockets} ({payload.shells} shells) of "
                f"{payload.tenants} tenants, version {payload.version}"
            )
        case OperatorStatus(figures=counted, last_error=error):
            text = ", ".join(f"{name} {n}" for name, n in counted.items()) or "nothing managed"
            return text + (f", last error: {error}" if error else "")
        case InventoryCluster():
            text = (
                f"nodes {len(payload.nodes)}, storage classes {len(payload.storage)}, "
                f"generation {payload.generation}"
            )
            if payload.excluded:
                text += f", excluded {len(payload.excluded)}"
            return text + (
                f", unknown GPUs: {', '.join(payload.unknown_gpus)}" if payload.unknown_gpus else ""
            )
        case BalanceStatus(leases=leases, last_error=error):
            text = f"leases {leases}"
            for label, amounts in (
                ("earned", payload.earned),
                ("unpaid", payload.unpaid),
                ("swept", payload.swept),
            ):
                if amounts:
                    text += f", {label} " + " ".join(f"{n}{d}" for d, n in sorted(amounts.items()))
            if payload.below_minimum:
                text += f", below AP_MINIMUM_BALANCE: {', '.join(payload.below_minimum)}"
            return text + (f", last error: {error}" if error else "")
    return str(getattr(payload, "type", type(payload).__name__))


def leases(last: FoldWindow = 5000, redis_url: RedisUrl = None, wait: Wait = 5.0) -> None:
    """The leases seen recently, newest first: state, health, price, services."""
    overview = _fold(redis_url, wait, last)
    console = Console(highlight=False, width=200)
    if not overview.leases:
        console.print(f"no leases seen in the last {last} entries of each stream")
        return
    now = dt.datetime.now(dt.UTC)
    table = Table()
    table.add_column("lease", no_wrap=True)
    for column in ("state", "price", "services", "message", "changed"):
        table.add_column(column)
    for lease in reversed(overview.leases.values()):
        table.add_row(
            lease.lease,
            lease.state,
            _price(lease.price),
            ", ".join(lease.services),
            escape(lease.message),
            _since(lease.updated, now),
        )
    console.print(table)
    console.print(f"{len(overview.leases)} lease(s): {_counts(overview.counts()['leases'])}")


def orders(last: FoldWindow = 5000, redis_url: RedisUrl = None, wait: Wait = 5.0) -> None:
    """The orders seen recently, newest first: what was decided, why not, at what price."""
    overview = _fold(redis_url, wait, last)
    console = Console(highlight=False, width=200)
    if not overview.orders:
        console.print(f"no orders seen in the last {last} entries of each stream")
        return
    now = dt.datetime.now(dt.UTC)
    table = Table()
    table.add_column("order", no_wrap=True)
    for column in ("state", "price", "declined because", "changed"):
        table.add_column(column)
    for order in reversed(overview.orders.values()):
        table.add_row(
            order.order,
            order.state,
            _price(order.price),
            escape("; ".join(order.reasons)),
            _since(order.updated, now),
        )
    console.print(table)
    console.print(f"{len(overview.orders)} order(s): {_counts(overview.counts()['orders'])}")


def events(
    last: EventCount = 20,
    follow: Follow = False,
    stream: Streams = None,
    redis_url: RedisUrl = None,
    wait: Wait = 5.0,
) -> None:
    """The latest events as sentences (times in UTC); --follow keeps printing new ones."""
    streams = _streams(stream or [])
    console = Console(highlight=False, markup=False, soft_wrap=True)
    overview = Overview(max_events=last)

    async def work(bus: Bus) -> None:
        recent, positions = await bus.recent(streams, last=max(last, EVENT_WINDOW))
        for name, envelope in recent:
            overview.apply(name, envelope)
        for line in overview.events:
            console.print(_event_line(line))
        if not follow:
            return
        async for name, envelope in bus.follow_envelopes(streams, since=positions):
            seen = overview.version
            overview.apply(name, envelope)
            if overview.version != seen:
                console.print(_event_line(overview.events[-1]))

    try:
        with_bus(redis_url, work, wait)
    except KeyboardInterrupt:  # Ctrl-C is how --follow ends
        return


def _fold(redis_url: str | None, wait: float, last: int) -> Overview:
    """The overview of the last ``last`` entries of each event stream."""

    async def work(bus: Bus) -> Overview:
        overview = Overview()
        recent, _ = await bus.recent(STREAMS, last=last)
        for stream, envelope in recent:
            overview.apply(stream, envelope)
        return overview

    return with_bus(redis_url, work, wait)


def _streams(names: Sequence[str]) -> list[str]:
    """Full stream names from short ones (``cluster``) or full ones; all without any."""
    by_name = {_short(s): s for s in STREAMS} | {s: s for s in STREAMS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        choices = ", ".join(_short(s) for s in STREAMS)
        raise typer.BadParameter(f"unknown stream {', '.join(unknown)} (known: {choices})")
    return list(dict.fromkeys(by_name[n] for n in names)) or list(STREAMS)


def _short(stream: str) -> str:
    """``akash.provider.cluster.events`` → ``cluster``."""
    return stream.removeprefix("akash.").removeprefix("provider.").removesuffix(".events")


def _event_line(line: EventLine) -> str:
    at = dt.datetime.fromisoformat(line.time).strftime("%Y-%m-%d %H:%M:%S")
    return f"{at}  {_short(line.stream):<9}  {line.type:<20}  {line.text}"


def _ago(seconds: float) -> str:
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s ago"
    if s < 2 * 3600:
        return f"{s // 60}m ago"
    if s < 2 * 86400:
        return f"{s // 3600}h ago"
    return f"{s // 86400}d ago"


def _since(iso: str, now: dt.datetime) -> str:
    return _ago((now - dt.datetime.fromisoformat(iso)).total_seconds()) if iso else ""


def _cpus(millicpu: int) -> str:
    return f"{millicpu / 1000:.1f}".removesuffix(".0")


def _bytes(value: int) -> str:
    for suffix, unit in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= unit:
            return f"{value / unit:.1f}".removesuffix(".0") + suffix
    return str(value)


def _price(price: str) -> str:
    """``12.500000000000000000uakt`` → ``12.5uakt``."""
    found = re.fullmatch(r"(\d+\.\d*?)0*([^\d.].*)", price)
    return f"{found[1].rstrip('.')}{found[2]}" if found else price


def _counts(by_state: dict[str, int]) -> str:
    return ", ".join(f"{state} {count}" for state, count in sorted(by_state.items()))
