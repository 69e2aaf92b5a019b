"""A lease's Kubernetes events for ``/kubeevents``, from the history the cluster service keeps
on Redis (:mod:`aktypes.leaseevents`): what the stream holds, oldest first, then, when
following, each entry added after the last one read, from the same stream (no gap, no
repeat: entry ids only grow).

It is read a page at a time and each page is sent before the next is read, so a slow tenant
holds one page in the gateway, never more. Following polls the stream's end every
``POLL_S``: a blocking read per follower would hold one of the process's Redis connections
(``REDIS_MAX_CONNECTIONS``) for as long as the tenant watches, and enough followers would
leave none for the rest of the gateway.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Final

from akbus import Bus
from akbus.retry import until_reachable
from akgateway.errors import LeaseGone
from aktypes.ids import LeaseID
from aktypes.leaseevents import lease_events_stream, read_entry

PAGE: Final = 100
POLL_S: Final = 0.5


def after(entry_id: str) -> str:
    """The smallest entry id above ``entry_id`` (``ms-seq``): where the next read starts."""
    ms, _, seq = entry_id.partition("-")
    return f"{ms}-{int(seq or 0) + 1}"


async def kept(bus: Bus, lease_id: LeaseID) -> bool:
    """Whether the cluster keeps anything of the lease's events."""
    stream = lease_events_stream(lease_id)
    return bool(await until_reachable("lease events", lambda: bus.backend.length(stream)))


async def lease_events(
    bus: Bus, lease_id: LeaseID, *, follow: bool, poll_s: float = POLL_S
) -> AsyncIterator[dict[str, Any]]:
    """The lease's kept events (core/v1 Events reduced to what a tenant sees), oldest first,
    then, with ``follow``, new ones as they are added. Ends at the lease's teardown: quietly
    when not following, with :class:`LeaseGone` when following."""
    stream = lease_events_stream(lease_id)
    start = "-"
    while True:

        async def page(start: str = start) -> list[Any]:
            return await bus.backend.entries(stream, start=start, count=PAGE)

        entries = await until_reachable("lease events", page)
        for entry in entries:
            start = after(entry.id)
            found = read_entry(entry.fields)
            if found is None:
                continue
            if found.closed:
                if follow:
                    raise LeaseGone(f"lease {lease_id} was closed")
                return
            yield found.event
        if len(entries) == PAGE:
            continue  # more behind this page
        if not follow:
            return
        await asyncio.sleep(poll_s)
