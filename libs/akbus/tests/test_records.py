"""Records against the in-memory backend, Redis and Valkey alike: guards, expiry, the outbox."""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, ConfigDict

from akbus import Bus, Change, Records
from akbus.testing import eventually
from aktypes.events import UnreserveResources, envelope_from_fields
from aktypes.events.streams import CLUSTER_COMMANDS
from aktypes.ids import OrderID
from aktypes.testing import address


class Counter(BaseModel):
    model_config = ConfigDict(frozen=True)

    state: Literal["counting", "done"] = "counting"
    count: int = 0


def counters(bus: Bus, *, final_ttl_s: int = 3600) -> Records[Counter]:
    return Records(
        bus,
        Counter,
        "test:counter:",
        active="test:counting",
        schedule="test:due",
        final=lambda c: c.state == "done",
        final_ttl_s=final_ttl_s,
    )


def event(n: int) -> UnreserveResources:
    return UnreserveResources(order_id=OrderID(owner=address(1), dseq=n, gseq=1, oseq=1))


async def test_concurrent_transitions_each_apply_once_and_publish_once(bus: Bus) -> None:
    records = counters(bus)

    def bump(before: Counter | None) -> Change[Counter]:
        after = (before or Counter()).model_copy(update={"count": (before or Counter()).count + 1})
        return Change(after, publish=[(CLUSTER_COMMANDS, event(after.count))], due=after.count)

    await asyncio.gather(*(records.update("x", bump) for _ in range(20)))
    assert await records.get("x") == Counter(count=20)
    payloads = [
        envelope_from_fields(e.fields).payload for e in await bus.backend.entries(CLUSTER_COMMANDS)
    ]
    assert sorted(p.order_id.dseq for p in payloads) == list(range(1, 21))  # one per change
    assert await records.members() == {"x"}
    assert await records.due(100) == [("x", 20.0)]


async def test_a_stale_commit_is_refused(bus: Bus) -> None:
    records = counters(bus)
    await records.update("x", lambda _: Counter())
    stale = await records.read("x")
    await records.update("x", lambda _: Counter(count=1))
    assert not await records.commit(stale, Change(Counter(count=7)))
    assert await records.get("x") == Counter(count=1)
    missing = await records.read("y")
    assert missing.record is None and missing.raw is None
    assert await records.commit(missing, Counter(count=3))
    assert not await records.commit(missing, Counter(count=4))  # no longer absent
    assert await records.get_many(["x", "y", "z"]) == [Counter(count=1), Counter(count=3), None]


async def test_a_finished_record_leaves_the_active_set_and_schedule_and_expires(bus: Bus) -> None:
    records = counters(bus, final_ttl_s=1)
    await records.update("x", lambda _: Change(Counter(), due=5.0))
    assert await records.members() == {"x"}
    assert await records.due(10) == [("x", 5.0)]
    await records.update("x", lambda _: Counter(state="done", count=1))
    assert await records.get("x") == Counter(state="done", count=1)
    assert await records.members() == set()
    assert await records.due(10) == []
    await eventually(
        lambda: records.get("x"), timeout_s=5, what="expiry", until=lambda r: r is None
    )
