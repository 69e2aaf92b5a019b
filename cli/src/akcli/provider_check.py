"""``akash-provider provider check``: the capabilities check, as the cluster last made it.

The cluster service compares its inventory (the inventory operator's, and the IP operator's
pool) with the provider's on-chain ``capabilities/*`` attributes whenever either changes
and puts every difference on its retained status (:mod:`aktypes.capabilities`). This
command prints them: lost orders (in the inventory, not advertised: orders for it get no
bid) and failed bids (advertised, not in the inventory: bids the cluster cannot place),
with the attributes concerned. Exit code 0: none; 1: at least one; 2: the check cannot be
read (no cluster status, or the chain not read yet). :func:`advertised` gives the attributes
the inventory calls for, which ``provider update --sync-capabilities`` writes.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from akbus import Bus
from akcli.bus import RedisUrl, Wait, with_bus
from aktypes.events import (
    CapabilitiesCheck,
    CapabilityMismatch,
    ClusterStatus,
    Envelope,
    InvalidEntryError,
)

HEADINGS = {
    "offered_not_advertised": "lost orders: in the inventory, not advertised on chain",
    "advertised_not_offered": "failed bids: advertised on chain, not in the inventory",
}
MaxAge = Annotated[
    float,
    typer.Option("--max-age", min=0, help="Seconds after which the cluster's status is stale."),
]
ShowAttributes = Annotated[
    bool,
    typer.Option(
        "--attributes", help="Also print the capability attributes the inventory calls for."
    ),
]


def _fail(message: str) -> typer.Exit:
    Console(stderr=True, highlight=False).print(escape(message))
    return typer.Exit(code=2)


def _read(redis_url: str | None, wait: float) -> Envelope[Any]:
    async def work(bus: Bus) -> Envelope[Any] | str | None:
        try:
            return await bus.status("cluster")
        except InvalidEntryError as exc:
            return str(exc)

    found = with_bus(redis_url, work, wait)
    if found is None:
        raise _fail("no cluster status: is the cluster service running?")
    if isinstance(found, str):
        raise _fail(f"the cluster's status cannot be read: {found}")
    if not isinstance(found.payload, ClusterStatus):
        raise _fail(f"the cluster's status is a {found.payload.type}, not cluster.status")
    return found


def _show(console: Console, mismatch: CapabilityMismatch) -> None:
    console.print(f"  {mismatch.kind:<8} {escape(mismatch.subject)}: {escape(mismatch.message)}")
    for key, value in mismatch.attributes.items():
        console.print(f"           {escape(key)}={escape(value)}")


def advertised(redis_url: str | None, wait: float, max_age: float = 60.0) -> dict[str, str]:
    """The capability attributes the cluster's current inventory calls for (its status's
    ``capabilities.advertise``); exit code 2 when there is no fresh status to read them from."""
    envelope = _read(redis_url, wait)
    age = (dt.datetime.now(dt.UTC) - envelope.time).total_seconds()
    if age > max_age:
        raise _fail(
            f"the cluster's status is {age:.0f}s old: is the cluster service running? "
            "Its inventory is what --sync-capabilities advertises"
        )
    return dict(envelope.payload.capabilities.advertise)


def check(
    max_age: MaxAge = 60.0,
    attributes: ShowAttributes = False,
    redis_url: RedisUrl = None,
    wait: Wait = 5.0,
) -> None:
    """Every difference between the cluster's inventory and the provider's on-chain
    capability attributes, both ways; exit code 1 when there is any."""
    envelope = _read(redis_url, wait)
    result: CapabilitiesCheck = envelope.payload.capabilities
    console = Console(highlight=False, width=200)
    age = (dt.datetime.now(dt.UTC) - envelope.time).total_seconds()
    if age > max_age:
        console.print(f"warning: the cluster's status is {age:.0f}s old (stale)")
    if not result.checked:
        raise _fail(f"the capabilities check has not run: {result.error or 'no reason given'}")
    if result.error:
        console.print(f"warning: {escape(result.error)}; the last attributes read are used")
    who = f"provider {result.provider}" if result.provider else "the provider"
    if not result.mismatches:
        console.print(f"{who}: the on-chain capabilities match the inventory")
    else:
        console.print(f"{who}: {len(result.mismatches)} difference(s)")
        for direction, heading in HEADINGS.items():
            found = [m for m in result.mismatches if m.direction == direction]
            if found:
                console.print(f"{heading}:")
                for mismatch in found:
                    _show(console, mismatch)
    if attributes:
        console.print("the capability attributes the inventory calls for:")
        for key, value in result.advertise.items():
            console.print(f"  - key: {escape(key)}\n    value: {escape(value)}")
    if result.mismatches:
        raise typer.Exit(code=1)
