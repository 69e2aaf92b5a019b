"""The history writer on the in-memory bus: an Event updated while it waits is written
once at its last count, a count already kept is not kept again, and nothing after the
teardown."""

from __future__ import annotations

from typing import Any

from akbus.testing import memory_bus
from akcluster.leaseevents import LeaseEvents
from aktypes.ids import LeaseID
from aktypes.leaseevents import lease_events_stream, read_entry
from aktypes.testing import address

LEASE = LeaseID(owner=address(1), dseq=3, gseq=1, oseq=1, provider=address(2))


def event(uid: str, count: int) -> dict[str, Any]:
    return {"metadata": {"uid": uid}, "reason": "BackOff", "count": count, "type": "Warning"}


async def drain(history: LeaseEvents) -> None:
    """What :meth:`LeaseEvents.run` does with what waits, once."""
    batch = list(history.waiting.items())
    history.waiting.clear()
    await history.write(batch)


async def kept(history: LeaseEvents) -> list[tuple[str, str]]:
    entries = await history.bus.backend.entries(lease_events_stream(LEASE))
    return [(e.fields.get("uid", ""), e.fields.get("count", e.fields["kind"])) for e in entries]


async def test_each_occurrence_once_and_nothing_after_the_teardown() -> None:
    history = LeaseEvents(memory_bus(), maxlen=3, retention_s=60)
    for count in (1, 2, 3):
        history.take(LEASE, event("a", count))
    history.take(LEASE, event("a", 2))  # an older copy arriving late
    history.take(LEASE, {"reason": "no uid"})
    await drain(history)
    assert await kept(history) == [("a", "3")]

    restarted = LeaseEvents(history.bus, maxlen=3, retention_s=60)
    for uid, count in (("a", 3), ("a", 2), ("b", 1), ("a", 4)):
        restarted.take(LEASE, event(uid, count))
    await drain(restarted)
    assert await kept(history) == [("a", "3"), ("b", "1"), ("a", "4")]
    restarted.take(LEASE, event("c", 1))  # over the bound: the oldest goes
    await drain(restarted)
    assert await kept(history) == [("b", "1"), ("a", "4"), ("c", "1")]

    await restarted.close(LEASE)
    await restarted.close(LEASE)
    restarted.take(LEASE, event("d", 1))
    await drain(restarted)
    entries = await history.bus.backend.entries(lease_events_stream(LEASE))
    assert [read_entry(e.fields).closed for e in entries] == [False, False, True]  # type: ignore[union-attr]
    assert "d" not in {e.fields.get("uid") for e in entries}
