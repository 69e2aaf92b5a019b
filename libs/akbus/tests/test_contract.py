"""The bus contract, run against the in-memory backend and a real Redis server alike."""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict

import pytest
from prometheus_client import REGISTRY

from akbus import (
    Bus,
    BusTx,
    Guard,
    Message,
    PermanentError,
    RequestTimeout,
    RetryableError,
    StreamMismatch,
    Subscriber,
    UnexpectedReply,
)
from akbus.message import TxFn
from akbus.settings import BusSettings
from akbus.testing import FAST_SETTINGS, eventually, running
from aktypes.events import (
    DeadLetter,
    LeaseCreated,
    OrderClosed,
    OrderCreated,
    ReservationFailed,
    ReserveResources,
    ResourcesReserved,
    UnreserveResources,
    envelope_from_fields,
    streams,
)
from aktypes.events.status import BidEngineStatus, ManifestStatus
from aktypes.events.streams import dlq_stream
from aktypes.ids import OrderID
from aktypes.testing import address, example_payloads

S = streams.CHAIN_EVENTS
OWNER = address(1)


def order_id(n: int) -> OrderID:
    return OrderID(owner=OWNER, dseq=n, gseq=1, oseq=1)


def created(n: int) -> OrderCreated:
    return OrderCreated(order_id=order_id(n), height=n, event_index=0)


def closed(n: int) -> OrderClosed:
    return OrderClosed(order_id=order_id(n), height=n, event_index=1)


async def pending_count(bus: Bus, group: str, stream: str = S) -> int:
    return (await bus.backend.pending_summary(stream, group)).count


# -- publishing -----------------------------------------------------------------------------


async def test_entries_are_plain_readable_fields(bus: Bus) -> None:
    entry_id = await bus.publish(S, created(1))
    (entry,) = await bus.backend.entries(S)
    assert entry.id == entry_id
    assert set(entry.fields) == {
        "type",
        "id",
        "time",
        "producer",
        "correlation_id",
        "causation_id",
        "schema",
        "payload",
    }
    assert entry.fields["type"] == "chain.order.created"
    assert entry.fields["producer"] == "test"
    assert envelope_from_fields(entry.fields).payload == created(1)


async def test_payloads_must_belong_on_their_stream(bus: Bus) -> None:
    with pytest.raises(StreamMismatch, match="does not belong on akash.provider.chain.tx"):
        await bus.publish(streams.CHAIN_TX, created(1))
    assert await bus.backend.length(streams.CHAIN_TX) == 0


async def test_publish_many_keeps_order(bus: Bus) -> None:
    ids = await bus.publish_many(S, [created(n) for n in range(1, 51)])
    entries = await bus.backend.entries(S)
    assert [e.id for e in entries] == ids
    assert [envelope_from_fields(e.fields).payload for e in entries] == [
        created(n) for n in range(1, 51)
    ]


async def test_xadd_many_keeps_each_entrys_own_fields(bus: Bus) -> None:
    items = [{"a": "1"}, {"a": "2"}, {"a": "3", "b": "x"}, {"b": "y", "a": "4"}, {"a": "5"}]
    ids = await bus.backend.xadd_many(S, items)
    assert [(e.id, e.fields) for e in await bus.backend.entries(S)] == list(
        zip(ids, items, strict=True)
    )
    assert await bus.backend.xadd_many(S, []) == []


# -- consuming ------------------------------------------------------------------------------


async def test_dispatch_by_type_and_ack_after_success(bus: Bus) -> None:
    sub = bus.subscriber(S, group="g", consumer="c1")
    seen: list[str] = []

    @sub.handler(OrderCreated, OrderClosed)
    async def handle(msg: Message[OrderCreated | OrderClosed]) -> None:
        seen.append(msg.envelope.type)

    await bus.publish(S, created(1))
    await bus.publish(S, LeaseCreated(**{**example_payloads()[4].model_dump(), "height": 5}))
    await bus.publish(S, closed(1))
    async with running(sub):
        await eventually(lambda: len(seen) == 2)
        await eventually(_no_pending(bus, "g"))
    assert seen == ["chain.order.created", "chain.order.closed"]


def _no_pending(bus: Bus, group: str, stream: str = S):  # type: ignore[no-untyped-def]
    async def check() -> bool:
        return await pending_count(bus, group, stream) == 0

    return check


async def test_a_group_created_late_sees_every_entry(bus: Bus) -> None:
    await bus.publish_many(S, [created(n) for n in range(1, 1001)])
    sub = bus.subscriber(S, group="late", consumer="c1")
    seen: set[int] = set()

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        seen.add(msg.payload.order_id.dseq)

    async with running(sub):
        await eventually(lambda: len(seen) == 1000)
        await eventually(_no_pending(bus, "late"))
    assert seen == set(range(1, 1001))


async def test_groups_each_get_every_entry_consumers_share_them(bus: Bus) -> None:
    counts: dict[str, Counter[int]] = defaultdict(Counter)
    subs = []
    for group, consumer in [("a", "a1"), ("a", "a2"), ("b", "b1")]:
        sub = bus.subscriber(S, group=group, consumer=consumer)

        async def handle(msg: Message[OrderCreated], group: str = group) -> None:
            counts[group][msg.payload.order_id.dseq] += 1

        sub.add(OrderCreated, handle)
        subs.append(sub)
    async with running(*subs):
        await bus.publish_many(S, [created(n) for n in range(1, 201)])
        await eventually(
            lambda: sum(counts["a"].values()) == 200 and sum(counts["b"].values()) == 200
        )
    assert set(counts["a"].values()) == {1} and set(counts["b"].values()) == {1}


async def test_concurrency_is_limited(bus: Bus) -> None:
    settings = FAST_SETTINGS.model_copy(update={"concurrency": 3})
    sub = bus.subscriber(S, group="g", consumer="c1", settings=settings)
    running_now = peak = done = 0

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        nonlocal running_now, peak, done
        running_now += 1
        peak = max(peak, running_now)
        await asyncio.sleep(0.02)
        running_now -= 1
        done += 1

    await bus.publish_many(S, [created(n) for n in range(1, 21)])
    async with running(sub):
        await eventually(lambda: done == 20)
    assert peak == 3


async def test_entries_with_the_same_partition_key_are_handled_in_order(bus: Bus) -> None:
    sub = bus.subscriber(
        S, group="g", consumer="c1", partition_key=lambda env: str(env.payload.order_id.dseq % 3)
    )
    order: dict[int, list[int]] = defaultdict(list)
    overlap = running_now = 0

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        nonlocal overlap, running_now
        running_now += 1
        overlap = max(overlap, running_now)
        await asyncio.sleep(random.uniform(0, 0.01))
        order[msg.payload.order_id.dseq % 3].append(msg.payload.order_id.dseq)
        running_now -= 1

    await bus.publish_many(S, [created(n) for n in range(1, 61)])
    async with running(sub):
        await eventually(lambda: sum(len(v) for v in order.values()) == 60)
    for key, handled in order.items():
        assert handled == sorted(handled), f"partition {key} out of order"
    assert overlap > 1  # different partitions still run side by side


# -- failures -------------------------------------------------------------------------------


async def test_retryable_errors_are_redelivered_until_success(bus: Bus) -> None:
    sub = bus.subscriber(S, group="g", consumer="c1")
    deliveries: list[int] = []

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        deliveries.append(msg.deliveries)
        if len(deliveries) < 3:
            raise RetryableError("not yet")

    await bus.publish(S, created(1))
    async with running(sub):
        await eventually(lambda: len(deliveries) == 3)
        await eventually(_no_pending(bus, "g"))
    assert deliveries == [1, 2, 3]
    assert await bus.backend.length(dlq_stream(S)) == 0


async def test_a_poison_entry_reaches_the_dlq_while_the_rest_flows(bus: Bus) -> None:
    sub = bus.subscriber(S, group="g", consumer="c1")
    attempts: Counter[int] = Counter()
    handled: set[int] = set()

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        n = msg.payload.order_id.dseq
        attempts[n] += 1
        if n == 3:
            raise RetryableError("cannot handle order 3")
        handled.add(n)

    ids = await bus.publish_many(S, [created(n) for n in range(1, 11)])
    async with running(sub):
        await eventually(lambda: len(handled) == 9)
        await eventually(lambda: _dlq_size(bus))
    assert handled == set(range(1, 11)) - {3}
    assert attempts[3] == FAST_SETTINGS.max_deliveries
    (letter,) = await bus.dead_letters(S)
    assert letter.letter.source_stream == S
    assert letter.letter.entry_id == ids[2]
    assert (letter.letter.group, letter.letter.consumer) == ("g", "c1")
    assert letter.letter.attempts == FAST_SETTINGS.max_deliveries
    assert "RetryableError: cannot handle order 3" in letter.letter.error
    assert envelope_from_fields(letter.letter.fields).payload == created(3)
    assert await pending_count(bus, "g") == 0


async def _dlq_size(bus: Bus, size: int = 1) -> bool:
    return await bus.backend.length(dlq_stream(S)) == size


async def test_permanent_errors_dead_letter_at_once(bus: Bus) -> None:
    sub = bus.subscriber(S, group="g", consumer="c1")
    calls = 0

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        nonlocal calls
        calls += 1
        raise PermanentError("order is malformed")

    await bus.publish(S, created(1))
    async with running(sub):
        await eventually(lambda: _dlq_size(bus))
    (letter,) = await bus.dead_letters(S)
    assert calls == 1 and letter.letter.attempts == 1
    assert letter.letter.error == "PermanentError: order is malformed"


async def test_unreadable_entries_are_dead_lettered(bus: Bus) -> None:
    await bus.backend.xadd(S, {"type": "chain.order.created", "payload": "{not json"})
    await bus.publish(S, created(2))
    sub = bus.subscriber(S, group="g", consumer="c1")
    seen: list[int] = []

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        seen.append(msg.payload.order_id.dseq)

    async with running(sub):
        await eventually(lambda: seen == [2])
        await eventually(lambda: _dlq_size(bus))
    (letter,) = await bus.dead_letters(S)
    assert "unreadable entry" in letter.letter.error
    assert letter.letter.fields == {"type": "chain.order.created", "payload": "{not json"}


async def test_entries_with_bytes_that_are_not_utf8_are_dead_lettered(bus: Bus) -> None:
    sub = bus.subscriber(S, group="g", consumer="c1")
    handled: list[int] = []

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        handled.append(msg.payload.order_id.dseq)

    good = bus.envelope(created(1)).to_fields()
    # what `redis-cli XADD ... payload "$(printf 'ab\xffcd')"` leaves on the stream
    await bus.backend.xadd(S, {**good, "payload": "ab\udcffcd"})
    await bus.backend.xadd(S, {**good, "producer": "p\udcff"})
    await bus.publish(S, created(2))
    async with running(sub):
        await eventually(lambda: handled == [2])
        await eventually(lambda: _dlq_size(bus, 2))
    letters = await bus.dead_letters(S)
    assert sorted(item.letter.fields["payload"] for item in letters) == sorted(
        ["ab\\xffcd", good["payload"]]
    )
    assert all("not valid UTF-8" in item.letter.error for item in letters)
    assert await pending_count(bus, "g") == 0
    await bus.backend.xadd(dlq_stream(S), {"written": "by hand \udcfe"})
    (*_, odd) = await bus.dead_letters(S)
    assert odd.letter.fields == {"written": "by hand \\xfe"}
    assert "unreadable dead letter" in odd.letter.error


async def test_dead_letters_can_be_listed_and_replayed(bus: Bus) -> None:
    sub = bus.subscriber(S, group="g", consumer="c1")
    broken = True
    handled: list[int] = []

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        if broken:
            raise PermanentError("dependency missing")
        handled.append(msg.payload.order_id.dseq)

    await bus.publish(S, created(7))
    async with running(sub):
        await eventually(lambda: _dlq_size(bus))
        broken = False
        (letter,) = await bus.dead_letters(S)
        replayed = await bus.replay_dead_letters(S, [letter.id])
        assert len(replayed) == 1
        await eventually(lambda: handled == [7])
    assert await bus.dead_letters(S) == []


QUICK_CLAIMS = FAST_SETTINGS.model_copy(update={"claim_idle_s": 0.4})


async def test_entries_of_a_dead_consumer_are_claimed(bus: Bus) -> None:
    await bus.backend.create_group(S, "g")
    await bus.publish_many(S, [created(n) for n in range(1, 6)])
    taken = await bus.backend.read_group(S, "g", "ghost", count=10, block_ms=None)  # then it "dies"
    assert len(taken) == 5
    sub = bus.subscriber(S, group="g", consumer="alive", settings=QUICK_CLAIMS)
    seen: dict[int, int] = {}

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        seen[msg.payload.order_id.dseq] = msg.deliveries

    async with running(sub):
        await eventually(lambda: len(seen) == 5)
        await eventually(_no_pending(bus, "g"))
    assert seen == dict.fromkeys(range(1, 6), 2)  # the ghost's delivery counted


async def test_a_slow_live_consumer_keeps_its_entries(bus: Bus) -> None:
    slow = bus.subscriber(S, group="g", consumer="slow", settings=QUICK_CLAIMS)
    other = bus.subscriber(S, group="g", consumer="other", settings=QUICK_CLAIMS)
    calls: Counter[int] = Counter()

    async def handle(msg: Message[OrderCreated]) -> None:
        calls[msg.payload.order_id.dseq] += 1
        await asyncio.sleep(1.2)  # three times claim_idle

    slow.add(OrderCreated, handle)
    other.add(OrderCreated, handle)
    async with running(slow):
        await bus.publish(S, created(1))
        await eventually(lambda: calls[1] == 1)
        async with running(other):
            await eventually(_no_pending(bus, "g"), timeout_s=5)
    assert calls[1] == 1


async def test_a_restarted_consumer_resumes_its_own_pending_entries(bus: Bus) -> None:
    await bus.backend.create_group(S, "g")
    await bus.publish_many(S, [created(n) for n in range(1, 4)])
    await bus.backend.read_group(
        S, "g", "worker-1", count=10, block_ms=None
    )  # crashed before acking
    settings = FAST_SETTINGS.model_copy(update={"claim_idle_s": 60.0})
    sub = bus.subscriber(S, group="g", consumer="worker-1", settings=settings)
    seen: list[int] = []

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        seen.append(msg.payload.order_id.dseq)

    async with running(sub):
        await eventually(lambda: sorted(seen) == [1, 2, 3], timeout_s=3)


async def test_idle_consumers_without_pending_entries_can_be_deleted(bus: Bus) -> None:
    await bus.backend.create_group(S, "g")
    await bus.publish_many(S, [created(n) for n in range(1, 4)])
    for name in ("done", "holding", "me"):
        await bus.backend.read_group(S, "g", name, count=1, block_ms=None)
    await bus.backend.ack(
        S, "g", [p.id for p in await bus.backend.pending(S, "g") if p.consumer != "holding"]
    )
    assert await bus.backend.delete_idle_consumers(S, "g", idle_ms=3_600_000, keep="me") == []
    assert await bus.backend.delete_idle_consumers(S, "g", idle_ms=0, keep="me") == ["done"]
    consumers = {c.name: c.pending for c in await bus.backend.consumers(S, "g")}
    assert consumers == {"holding": 1, "me": 0}
    assert await bus.backend.delete_idle_consumers(S, "nogroup", idle_ms=0, keep="me") == []


async def test_dead_consumers_leave_the_group_once_they_hold_nothing(bus: Bus) -> None:
    await bus.backend.create_group(S, "g")
    await bus.publish_many(S, [created(n) for n in range(1, 4)])
    # "holding" died with an entry pending; then "gone" read and acknowledged, and went away
    await bus.backend.read_group(S, "g", "holding", count=1, block_ms=None)
    gone = await bus.backend.read_group(S, "g", "gone", count=1, block_ms=None)
    await bus.backend.ack(S, "g", [e.id for e in gone])
    seen: list[int] = []

    async def handle(msg: Message[OrderCreated]) -> None:
        seen.append(msg.payload.order_id.dseq)

    async def consumers() -> dict[str, int]:
        return {c.name: c.pending for c in await bus.backend.consumers(S, "g")}

    # no claiming yet: "holding" (idle longer than "gone") keeps its pending entry and stays
    quick_sweeps = FAST_SETTINGS.model_copy(update={"consumer_idle_delete_s": 0.3})
    sub = bus.subscriber(S, group="g", consumer="alive", settings=quick_sweeps)
    sub.add(OrderCreated, handle)
    async with running(sub):
        await eventually(lambda: seen == [3])
        await eventually(lambda: _has_consumers(bus, {"alive", "holding"}))
    assert await consumers() == {"alive": 0, "holding": 1}

    # once its entry is claimed, "holding" holds nothing and goes too; "alive" stays
    claiming = quick_sweeps.model_copy(update={"claim_idle_s": 0.4})
    sub = bus.subscriber(S, group="g", consumer="alive", settings=claiming)
    sub.add(OrderCreated, handle)
    async with running(sub):
        await eventually(lambda: seen == [3, 1])
        await eventually(lambda: _has_consumers(bus, {"alive"}))


async def _has_consumers(bus: Bus, names: set[str], group: str = "g") -> bool:
    return {c.name for c in await bus.backend.consumers(S, group)} == names


# -- applying effects once ----------------------------------------------------------------


async def test_effects_apply_once_per_envelope(bus: Bus) -> None:
    sub = bus.subscriber(S, group="g", consumer="c1")
    results: list[bool] = []

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        async def effects(tx: BusTx) -> None:
            tx.state.hincrby("applied", str(msg.payload.order_id.dseq))

        results.append(await msg.apply_once(effects))

    envelope = bus.envelope(created(1))
    await bus.publish_envelope(S, envelope)
    await bus.publish_envelope(S, envelope)  # the same event published twice
    async with running(sub):
        await eventually(lambda: len(results) == 2)
    assert sorted(results) == [False, True]
    assert await bus.backend.hgetall("applied") == {"1": "1"}


async def test_mget_reads_many_keys_in_their_order(bus: Bus) -> None:
    async def effects(tx: BusTx) -> None:
        tx.state.set("a", "1")
        tx.state.set("c", "3")
        tx.state.hset("h", {"f": "v"})

    await bus.transact(effects)
    assert await bus.backend.mget(["c", "missing", "a", "h"]) == ["3", None, "1", None]
    assert await bus.backend.mget([]) == []


async def test_state_and_outgoing_events_commit_together(bus: Bus) -> None:
    async def effects(tx: BusTx) -> None:
        tx.state.set("order:1", "bidding")
        tx.publish(streams.CLUSTER_COMMANDS, UnreserveResources(order_id=order_id(1)))

    assert await bus.apply_once("order:1:done", effects)
    assert await bus.backend.get("order:1") == "bidding"
    assert await bus.backend.length(streams.CLUSTER_COMMANDS) == 1

    async def failing(tx: BusTx) -> None:
        tx.state.set("order:2", "bidding")
        tx.publish(streams.CLUSTER_COMMANDS, UnreserveResources(order_id=order_id(2)))
        raise RuntimeError("boom before commit")

    with pytest.raises(RuntimeError):
        await bus.apply_once("order:2:done", failing)
    assert await bus.backend.get("order:2") is None
    assert await bus.backend.length(streams.CLUSTER_COMMANDS) == 1
    assert not await bus.apply_once("order:1:done", effects)


async def test_concurrent_read_modify_write_bodies_are_isolated(bus: Bus) -> None:
    """Each body reads, yields to the others, then writes what it read plus one."""

    async def increment(tx: BusTx) -> None:
        value = int(await tx.state.get("counter") or 0)
        fields = await tx.state.hgetall("totals")
        await asyncio.sleep(0.001)  # let every other body read the same values
        tx.state.set("counter", str(value + 1))
        tx.state.hset("totals", {"n": str(int(fields.get("n", "0")) + 1)})

    results = await asyncio.gather(
        *(bus.apply_once(f"rmw:{n}", increment) for n in range(20)),
        *(bus.transact(increment) for _ in range(5)),
    )
    assert results[:20] == [True] * 20
    assert await bus.backend.get("counter") == "25"
    assert await bus.backend.hgetall("totals") == {"n": "25"}


async def test_guarded_commits_apply_only_while_the_guard_holds(bus: Bus) -> None:
    async def writes(tx: BusTx) -> None:
        tx.state.set("version", "1")
        tx.state.hset("records", {"a": "x", "b": "y"})
        tx.state.sadd("members", "a", "b")
        tx.state.zadd("deadlines", {"a": 1.5})
        tx.state.set("short", "v", ex=60)
        tx.state.incrby("count", 2)
        tx.publish(streams.CLUSTER_COMMANDS, UnreserveResources(order_id=order_id(3)))

    assert await bus.apply_if("version", None, writes)  # absent, as expected
    assert await bus.backend.get("version") == "1"
    assert await bus.backend.hgetall("records") == {"a": "x", "b": "y"}
    assert await bus.backend.hget("records", "b") == "y"
    assert await bus.backend.hget("records", "c") is None
    assert await bus.backend.smembers("members") == {"a", "b"}
    assert await bus.backend.zrangebyscore("deadlines", 0, 2) == [("a", 1.5)]
    assert await bus.backend.get("count") == "2"
    assert await bus.backend.length(streams.CLUSTER_COMMANDS) == 1
    assert not await bus.apply_if("version", None, writes)  # no longer absent
    assert not await bus.apply_if("version", "0", writes)  # another value
    assert await bus.backend.get("count") == "2"
    assert await bus.backend.length(streams.CLUSTER_COMMANDS) == 1

    async def bump(tx: BusTx) -> None:
        tx.state.set("version", "2")
        tx.state.delete("short")
        tx.state.hdel("records", "a")

    assert await bus.apply_if("version", "1", bump)
    assert await bus.backend.get("short") is None
    assert await bus.backend.hgetall("records") == {"b": "y"}

    async def reads(tx: BusTx) -> None:
        await tx.state.get("version")

    with pytest.raises(TypeError, match="cannot read"):
        await bus.apply_if("version", "2", reads)


async def test_concurrent_guarded_commits_let_one_through(bus: Bus) -> None:
    async def claim(tx: BusTx) -> None:
        tx.state.set("owner", "me")
        tx.state.incrby("claims", 1)

    results = await asyncio.gather(*(bus.apply_if("owner", None, claim) for _ in range(10)))
    assert sorted(results) == [False] * 9 + [True]
    assert await bus.backend.get("claims") == "1"


async def test_a_commit_may_be_guarded_by_fields_of_hashes_and_by_many_guards(bus: Bus) -> None:
    async def seed(tx: BusTx) -> None:
        tx.state.hset("records", {"a": "1"})
        tx.state.set("version", "7")

    await bus.transact(seed)

    def marking(mark: str) -> TxFn:
        async def writes(tx: BusTx) -> None:
            tx.state.hset("records", {"a": mark})
            tx.state.sadd("marks", mark)

        return writes

    assert not await bus.apply_if_all([Guard("records", "0", field="a")], marking("x"))
    assert not await bus.apply_if_all([Guard("records", None, field="a")], marking("x"))
    assert await bus.apply_if_all([Guard("records", None, field="b")], marking("b"))  # absent
    assert await bus.apply_if_all([Guard("records", "b", field="a")], marking("c"))
    both = [Guard("records", "c", field="a"), Guard("version", "7")]
    assert not await bus.apply_if_all([*both, Guard("absent", "1")], marking("x"))  # one fails
    assert await bus.apply_if_all(both, marking("d"))
    assert await bus.backend.hgetall("records") == {"a": "d"}
    assert await bus.backend.smembers("marks") == {"b", "c", "d"}


async def test_a_stream_trimmed_exactly_keeps_its_newest_entries(bus: Bus) -> None:
    def add(n: int) -> TxFn:
        async def writes(tx: BusTx) -> None:
            tx.state.xadd("trimmed", {"n": str(n), "pad": "x" * 600}, maxlen=3, exact=True)

        return writes

    for n in range(10):  # in a transaction and in a guarded commit alike
        if n % 2:
            await bus.transact(add(n))
        else:
            assert await bus.apply_if("trim-guard", None, add(n))
    assert [e.fields["n"] for e in await bus.backend.entries("trimmed")] == ["7", "8", "9"]


# -- retained status ----------------------------------------------------------------------


async def test_status_is_retained_for_late_readers(bus: Bus) -> None:
    assert await bus.status("bidengine") is None
    for orders in range(1, 30):
        await bus.publish_status("bidengine", BidEngineStatus(orders=orders))
    latest = await bus.status("bidengine")
    assert latest is not None and latest.payload == BidEngineStatus(orders=29)
    assert (
        await bus.backend.length("akash.provider.bidengine.status")
        <= 3 * FAST_SETTINGS.status_maxlen
    )


async def test_following_statuses_gives_the_latest_then_each_new_one(bus: Bus) -> None:
    await bus.publish_status("bidengine", BidEngineStatus(orders=1))
    await bus.publish_status("bidengine", BidEngineStatus(orders=2))
    seen: list[tuple[str, object]] = []

    async def follow() -> None:
        async for service, envelope in bus.follow_statuses(["bidengine", "manifest"], block_ms=50):
            seen.append((service, envelope.payload))

    task = asyncio.create_task(follow())
    try:
        await eventually(lambda: len(seen) == 1, what="the retained status")
        assert seen == [("bidengine", BidEngineStatus(orders=2))]  # the latest, not history
        await bus.publish_status("manifest", ManifestStatus(deployments=4))
        await bus.publish_status("bidengine", BidEngineStatus(orders=3))
        await eventually(lambda: len(seen) == 3, what="both new statuses")
        assert dict(seen[1:]) == {  # order across streams is not kept, within one it is
            "manifest": ManifestStatus(deployments=4),
            "bidengine": BidEngineStatus(orders=3),
        }
    finally:
        task.cancel()


async def test_recent_then_follow_merges_history_in_order_then_tails(bus: Bus) -> None:
    one, two = "test.recent.one", "test.recent.two"
    for orders in range(5):
        await bus.publish(one if orders % 2 else two, BidEngineStatus(orders=orders))
    seen: list[tuple[str, object]] = []

    async def tail() -> None:
        async for stream, envelope in bus.recent_then_follow([one, two], last=2, block_ms=50):
            seen.append((stream, envelope.payload.orders))

    task = asyncio.create_task(tail())
    try:
        await eventually(lambda: len(seen) == 4, what="the last two of each stream")
        assert seen == [(one, 1), (two, 2), (one, 3), (two, 4)]  # in the order they were added
        await bus.publish(one, BidEngineStatus(orders=5))
        await eventually(lambda: len(seen) == 5, what="the new entry")
        assert seen[-1] == (one, 5)
    finally:
        task.cancel()


async def test_follow_tails_several_streams_without_a_group(bus: Bus) -> None:
    one, two = "test.follow.one", "test.follow.two"
    before = await bus.publish(one, example_payloads()[0])  # not followed: it is the start
    got: list[tuple[str, str]] = []

    async def tail() -> None:
        positions = {one: before, two: "0"}  # ids are per stream
        async for stream, entry in bus.follow([one, two], since=positions, block_ms=50):
            got.append((stream, entry.id))

    task = asyncio.create_task(tail())
    try:
        ids = [
            await bus.publish(two, example_payloads()[1]),
            await bus.publish(one, example_payloads()[2]),
            await bus.publish(one, example_payloads()[3]),
        ]
        await eventually(lambda: len(got) == 3, what="three new entries")
        assert sorted(i for _, i in got) == sorted(ids)
        assert [s for s, _ in got].count(one) == 2
        assert await bus.backend.groups(one) == []  # nothing consumed
    finally:
        task.cancel()


# -- request / reply ------------------------------------------------------------------------


def reserve(n: int) -> ReserveResources:
    payload = example_payloads()[18]
    assert isinstance(payload, ReserveResources)
    return payload.model_copy(update={"order_id": order_id(n)})


async def test_request_gets_its_reply(bus: Bus) -> None:
    sub = bus.subscriber(streams.CLUSTER_COMMANDS, group="cluster", consumer="c1")

    @sub.handler(ReserveResources)
    async def handle(msg: Message[ReserveResources]) -> None:
        await msg.reply(ResourcesReserved(order_id=msg.payload.order_id))

    async with running(sub):
        replies = await asyncio.gather(
            *(bus.request(streams.CLUSTER_COMMANDS, reserve(n), timeout_s=5) for n in range(1, 6))
        )
    assert [r.order_id.dseq for r in replies] == [1, 2, 3, 4, 5]  # type: ignore[attr-defined]


async def test_a_repeated_command_gets_the_same_reply(bus: Bus) -> None:
    sub = bus.subscriber(streams.CLUSTER_COMMANDS, group="cluster", consumer="c1")
    calls = 0

    @sub.handler(ReserveResources)
    async def handle(msg: Message[ReserveResources]) -> None:
        nonlocal calls
        calls += 1
        await msg.reply(ResourcesReserved(order_id=msg.payload.order_id))

    reply_stream = "akash.reply.test.manual"
    command = bus.envelope(reserve(1), reply_to=reply_stream)
    async with running(sub):
        await bus.publish_envelope(streams.CLUSTER_COMMANDS, command)
        await eventually(lambda: _length(bus, reply_stream, 1))
        await bus.publish_envelope(streams.CLUSTER_COMMANDS, command)  # sent again
        await eventually(lambda: _length(bus, reply_stream, 2))
    first, second = await bus.backend.entries(reply_stream)
    assert calls == 1
    assert first.fields == second.fields


def _reserving_responder(bus: Bus, calls: list[int]) -> Subscriber:
    sub = bus.subscriber(streams.CLUSTER_COMMANDS, group="cluster", consumer="c1")

    @sub.handler(ReserveResources)
    async def handle(msg: Message[ReserveResources]) -> None:
        calls.append(msg.payload.order_id.dseq)

        async def effects(tx: BusTx) -> None:
            tx.reply(ResourcesReserved(order_id=msg.payload.order_id))

        await msg.apply_once(effects)

    return sub


async def test_a_handler_run_again_resends_its_command_and_gets_the_stored_reply(
    bus: Bus,
) -> None:
    calls: list[int] = []
    responder = _reserving_responder(bus, calls)
    requester = bus.subscriber(S, group="bidengine", consumer="b1")
    replies: list[tuple[int, ResourcesReserved | ReservationFailed]] = []

    @requester.handler(OrderCreated)
    async def on_order(msg: Message[OrderCreated]) -> None:
        n = msg.payload.order_id.dseq
        first = await msg.request(
            streams.CLUSTER_COMMANDS, reserve(n), (ResourcesReserved, ReservationFailed)
        )
        second = await msg.request(
            streams.CLUSTER_COMMANDS, reserve(n + 100), (ResourcesReserved, ReservationFailed)
        )
        replies.append((msg.deliveries, first))
        replies.append((msg.deliveries, second))
        if msg.deliveries == 1:
            raise RetryableError("fails after its requests were answered")

    async with running(responder, requester):
        await bus.publish(S, created(1))
        await eventually(lambda: len(replies) == 4)
    assert [d for d, _ in replies] == [1, 1, 2, 2]
    assert [r.order_id.dseq for _, r in replies] == [1, 101, 1, 101]
    assert sorted(calls) == [1, 101]  # each command handled once, although sent twice


async def test_a_request_from_another_process_gets_the_reply_already_given(bus: Bus) -> None:
    calls: list[int] = []
    responder = _reserving_responder(bus, calls)
    other = Bus(bus.backend, producer="other-process", settings=FAST_SETTINGS)
    async with running(responder):
        first = await bus.request(
            streams.CLUSTER_COMMANDS, reserve(1), ResourcesReserved, command_id="cmd-1"
        )
        again = await other.request(
            streams.CLUSTER_COMMANDS, reserve(1), ResourcesReserved, command_id="cmd-1"
        )
        with pytest.raises(UnexpectedReply, match="answered with cluster.reserved"):
            await bus.request(streams.CLUSTER_COMMANDS, reserve(2), ReservationFailed, timeout_s=5)
    assert first == again
    assert calls == [1, 2]
    await other.close(keep_backend=True)


async def _length(bus: Bus, stream: str, size: int) -> bool:
    return await bus.backend.length(stream) == size


async def test_request_times_out_without_a_responder(bus: Bus) -> None:
    with pytest.raises(RequestTimeout, match="no reply to cluster.reserve"):
        await bus.request(streams.CLUSTER_COMMANDS, reserve(1), timeout_s=0.1, attempts=2)
    assert await bus.backend.length(streams.CLUSTER_COMMANDS) == 2
    commands = await bus.backend.entries(streams.CLUSTER_COMMANDS)
    assert commands[0].fields["id"] == commands[1].fields["id"]  # retried as the same command


async def test_reply_streams_are_removed(bus: Bus) -> None:
    sub = bus.subscriber(streams.CLUSTER_COMMANDS, group="cluster", consumer="c1")

    @sub.handler(ReserveResources)
    async def handle(msg: Message[ReserveResources]) -> None:
        await msg.reply(ResourcesReserved(order_id=msg.payload.order_id))

    async with running(sub):
        await bus.request(streams.CLUSTER_COMMANDS, reserve(1), timeout_s=5)
    (command,) = await bus.backend.entries(streams.CLUSTER_COMMANDS)
    reply_to = command.fields["reply_to"]
    assert await bus.backend.length(reply_to) == 1
    await bus.close()
    assert await bus.backend.length(reply_to) == 0


# -- shutdown -------------------------------------------------------------------------------


async def test_shutdown_drains_in_flight_handlers(bus: Bus) -> None:
    sub = bus.subscriber(S, group="g", consumer="c1")
    finished: list[int] = []

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        await asyncio.sleep(0.2)
        finished.append(msg.payload.order_id.dseq)

    async with running(sub):
        await bus.publish_many(S, [created(n) for n in range(1, 6)])
        await eventually(lambda: _pending_is(bus, "g", 5))
    assert sorted(finished) == [1, 2, 3, 4, 5]
    assert await pending_count(bus, "g") == 0


async def _pending_is(bus: Bus, group: str, count: int) -> bool:
    return await pending_count(bus, group) == count


async def test_shutdown_leaves_unfinished_entries_pending(bus: Bus) -> None:
    settings = FAST_SETTINGS.model_copy(update={"drain_timeout_s": 0.1})
    sub = bus.subscriber(S, group="g", consumer="c1", settings=settings)
    started: list[int] = []

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        started.append(msg.payload.order_id.dseq)
        await asyncio.sleep(30)

    async with running(sub):
        await bus.publish_many(S, [created(n) for n in range(1, 4)])
        await eventually(lambda: len(started) == 3)
    assert await pending_count(bus, "g") == 3


# -- retention and metrics ------------------------------------------------------------------


async def test_trimming_never_drops_unconsumed_entries(bus: Bus) -> None:
    ids = await bus.publish_many(S, [created(n) for n in range(1, 11)])
    assert await bus.trim(S, keep_s=0) == 0  # no group: nothing may go
    for group in ("fast", "slow"):
        await bus.backend.create_group(S, group)
    fast = await bus.backend.read_group(S, "fast", "c", count=6, block_ms=None)
    await bus.backend.ack(S, "fast", [e.id for e in fast])
    slow = await bus.backend.read_group(S, "slow", "c", count=5, block_ms=None)
    await bus.backend.ack(S, "slow", [e.id for e in slow[:3]])  # 2 delivered, not acknowledged
    assert await bus.trim(S, keep_s=3600) == 0  # too recent
    assert await bus.trim(S, keep_s=0) == 3
    assert [e.id for e in await bus.backend.entries(S)] == ids[3:]


async def test_metrics_count_what_happens(bus: Bus) -> None:
    stream = f"test.metrics.{random.randrange(10**9)}"
    sub = bus.subscriber(stream, group="g", consumer="c1")

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        if msg.payload.order_id.dseq == 2:
            raise PermanentError("no")

    await bus.publish_many(stream, [created(1), created(2), created(3)])
    async with running(sub):
        await eventually(
            lambda: (
                _sample("akbus_handled_total", stream=stream, group="g", type="chain.order.created")
                == 2
            )
        )
        await eventually(
            lambda: _sample("akbus_dead_lettered_total", stream=stream, group="g") == 1
        )
        await eventually(lambda: _sample("akbus_pending", stream=stream, group="g") == 0)
    assert _sample("akbus_published_total", stream=stream, type="chain.order.created") == 3
    assert (
        _sample(
            "akbus_failed_total",
            stream=stream,
            group="g",
            type="chain.order.created",
            error="permanent",
        )
        == 1
    )
    assert _sample("akbus_lag", stream=stream, group="g") == 0


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_dead_letter_payload_is_typed(bus: Bus) -> None:
    letter = DeadLetter(source_stream=S, entry_id="1-0", group="g", error="x", attempts=1)
    await bus.backend.xadd(dlq_stream(S), bus.envelope(letter).to_fields())
    assert [d.letter for d in await bus.dead_letters(S)] == [letter]


async def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AKBUS_MAX_DELIVERIES", "9")
    monkeypatch.setenv("AKBUS_CONCURRENCY", "2")
    settings = BusSettings()
    assert (settings.max_deliveries, settings.concurrency) == (9, 2)
