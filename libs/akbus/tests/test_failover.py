"""The primary SIGKILLed under a consumer on Sentinel: durable commits survive the failover,
none is applied twice, the bus follows the new primary; a durable commit waits for the
replica (and stands, counted, when the replica does not answer in time)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator

import pytest

from akbus import Bus, BusTx, Message, RedisBackend, RedisSettings, metrics
from akbus.sentinel import SentinelRedis
from akbus.testing import FAST_SETTINGS, eventually, running
from aktypes.events import OrderCreated, streams
from aktypes.events.streams import dlq_stream
from aktypes.ids import OrderID
from aktypes.testing import address

S = streams.CHAIN_EVENTS


def created(n: int) -> OrderCreated:
    return OrderCreated(
        order_id=OrderID(owner=address(1), dseq=n, gseq=1, oseq=1), height=n, event_index=0
    )


@pytest.fixture
def sentinel() -> Iterator[SentinelRedis]:
    with SentinelRedis() as cluster:
        yield cluster


def durable_outcome(outcome: str) -> float:
    return metrics.DURABLE.labels(outcome)._value.get()  # type: ignore[attr-defined,no-any-return]


async def test_a_durable_commit_waits_for_the_replica(sentinel: SentinelRedis) -> None:
    settings = FAST_SETTINGS.model_copy(update={"wait_timeout_ms": 300})
    bus = Bus(RedisBackend.from_settings(RedisSettings(url=sentinel.url)), producer="t",
              settings=settings)  # fmt: skip
    try:

        async def write(tx: BusTx) -> None:
            tx.state.set("k", "1")

        replicated = durable_outcome("replicated")
        assert await bus.apply_if("k", None, write, durable=True)
        assert durable_outcome("replicated") == replicated + 1
        replica = next(n for n in sentinel.nodes if n is not sentinel.primary())
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)  # the replica takes nothing for a while
        try:
            timed_out = durable_outcome("timed_out")
            began = time.monotonic()
            assert await bus.apply_if("k", "1", write, durable=True)
            assert time.monotonic() - began >= 0.3  # it waited for the replica's ack
            assert durable_outcome("timed_out") == timed_out + 1
            began = time.monotonic()
            await bus.transact(write)  # not durable: no wait
            assert time.monotonic() - began < 0.3
        finally:
            replica.process.send_signal(signal.SIGCONT)
        with replica.client() as client:  # the replica caught up
            await eventually(lambda: client.get("k") == b"1", what="the replica catching up")
    finally:
        await bus.close()


async def test_a_failover_under_a_consumer_loses_and_doubles_nothing(
    sentinel: SentinelRedis,
) -> None:
    total = 3000
    bus = Bus(RedisBackend.from_settings(RedisSettings(url=sentinel.url)), producer="t",
              settings=FAST_SETTINGS)  # fmt: skip
    try:
        await bus.publish_many(S, [created(n) for n in range(1, total + 1)])
        await bus.transact(lambda tx: asyncio.sleep(0), durable=True)  # the replica has them
        sub = bus.subscriber(S, group="g", consumer="c1")
        told_applied: set[int] = set()

        @sub.handler(OrderCreated)
        async def handle(msg: Message[OrderCreated]) -> None:
            dseq = msg.payload.order_id.dseq

            async def effects(tx: BusTx) -> None:
                tx.state.hincrby("applied", str(dseq))

            if await msg.apply_once(effects, durable=True):
                told_applied.add(dseq)

        async with running(sub):
            await eventually(lambda: len(told_applied) >= total // 3, timeout_s=60,
                             what="a third applied")  # fmt: skip
            killed = await asyncio.to_thread(sentinel.kill_primary)
            began = time.monotonic()
            seen = len(told_applied)
            await eventually(lambda: len(told_applied) > seen + 100, timeout_s=30,
                             what="handlers committing on the new primary")  # fmt: skip
            recovered = time.monotonic() - began
            await asyncio.to_thread(sentinel.rejoin, killed)

            async def done() -> bool:
                pending = (await bus.backend.pending_summary(S, "g")).count
                return pending == 0 and len(await bus.backend.hgetall("applied")) == total

            await eventually(done, timeout_s=60, what="every entry applied after the failover")
        assert recovered < 15, recovered  # down-after 1 s, then the Sentinels' election
        applied = await bus.backend.hgetall("applied")
        assert set(applied.values()) == {"1"}  # none applied twice, none lost
        assert told_applied <= {int(dseq) for dseq in applied}  # what was acknowledged stays
        assert await bus.backend.length(dlq_stream(S)) == 0
        assert sentinel.primary() is not killed
    finally:
        await bus.close()
