"""Records against the in-memory backend, Redis and Valkey alike: guards, expiry, the outbox."""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, ConfigDict

from akbus import Bus, Change, Records, Snapshot
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


def in_a_hash(bus: Bus) -> Records[Counter]:
    return Records(bus, Counter, "c/", in_hash="test:counters", schedule="test:hashed:due")


async def test_records_kept_as_fields_of_one_hash_are_guarded_one_by_one(bus: Bus) -> None:
    records = in_a_hash(bus)

    def bump(before: Counter | None) -> Change[Counter]:
        after = Counter(count=(before or Counter()).count + 1)
        return Change(after, due=after.count)

    await asyncio.gather(*(records.update(x, bump) for _ in range(10) for x in ("a", "b")))
    stored = await bus.backend.hgetall("test:counters")
    assert {f: Counter.model_validate_json(v).count for f, v in stored.items()} == {
        "c/a": 10,
        "c/b": 10,
    }
    assert await records.all() == {"a": Counter(count=10), "b": Counter(count=10)}
    assert await records.members() == {"a", "b"}
    assert await records.due(100) == [("a", 10.0), ("b", 10.0)]
    await records.update("a", lambda _: Change(delete=True))
    assert await records.get_many(["a", "b"]) == [None, Counter(count=10)]
    assert await records.due(100) == [("b", 10.0)]


async def test_a_commit_of_many_records_writes_all_of_them_or_none(bus: Bus) -> None:
    def both(
        x: Snapshot[Counter], y: Snapshot[Counter], n: int
    ) -> list[tuple[Snapshot[Counter], Change[Counter]]]:
        return [(x, Change(Counter(count=n))), (y, Change(Counter(count=n)))]

    for records in (counters(bus), in_a_hash(bus)):
        await records.update("x", lambda _: Counter())
        x, y = await records.read("x"), await records.read("y")
        await records.update("y", lambda _: Counter(count=1))  # y moved on: y is stale
        assert not await records.commit_many(both(x, y, 5))
        assert await records.get_many(["x", "y"]) == [Counter(), Counter(count=1)]
        y = await records.read("y")
        mark = lambda tx: tx.state.sadd("test:n", "6")  # noqa: E731
        assert await records.commit_many(both(x, y, 6), writes=mark)
        assert await records.get_many(["x", "y"]) == [Counter(count=6), Counter(count=6)]
    assert await bus.backend.smembers("test:n") == {"6"}
