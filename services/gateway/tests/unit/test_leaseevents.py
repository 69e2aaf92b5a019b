"""Reading a lease's kept events: pages in order, then new entries, no repeat; the end of
a torn-down lease; entries that are not events skipped."""

from __future__ import annotations

import asyncio

import pytest

from akbus.testing import eventually, memory_bus
from akgateway.api import leaseevents
from akgateway.api.leaseevents import after, kept, lease_events
from akgateway.errors import LeaseGone
from aktypes.ids import LeaseID
from aktypes.leaseevents import closed_fields, event_fields, lease_events_stream
from aktypes.testing import address

LEASE = LeaseID(owner=address(1), dseq=3, gseq=1, oseq=1, provider=address(2))
STREAM = lease_events_stream(LEASE)


def event(n: int) -> dict[str, object]:
    return {"metadata": {"uid": f"u-{n}"}, "reason": f"R{n}", "message": str(n), "count": 1}


def test_the_next_entry_id() -> None:
    assert after("1700000000000-0") == "1700000000000-1"
    assert after("5-41") == "5-42"


async def test_history_in_pages_then_live_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leaseevents, "PAGE", 3)  # several pages of history
    bus = memory_bus()
    assert not await kept(bus, LEASE)
    for n in range(7):
        await bus.backend.xadd(STREAM, event_fields(event(n)))
    await bus.backend.xadd(STREAM, {"kind": "unknown"})  # skipped
    assert await kept(bus, LEASE)
    now = [e["reason"] async for e in lease_events(bus, LEASE, follow=False)]
    assert now == [f"R{n}" for n in range(7)]

    seen: list[str] = []
    following = lease_events(bus, LEASE, follow=True, poll_s=0.01)

    async def follow() -> None:
        async for e in following:
            seen.append(str(e["reason"]))  # noqa: PERF401 - read as they come

    task = asyncio.create_task(follow())
    await eventually(lambda: len(seen), what="the history", until=(7).__eq__)
    for n in range(7, 9):
        await bus.backend.xadd(STREAM, event_fields(event(n)))
    await bus.backend.xadd(STREAM, closed_fields())
    with pytest.raises(LeaseGone, match="was closed"):
        await task
    assert seen == [f"R{n}" for n in range(9)]  # each once, in order
    ended = [e["reason"] async for e in lease_events(bus, LEASE, follow=False)]
    assert ended == seen  # not following: the end is a quiet one
