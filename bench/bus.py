"""Bus throughput and latency: raw redis-py vs akbus vs FastStream, on one Redis server.

For each system and each consumer count (1 and 4), one producer publishes N small events
in pipelined batches of 100 (each system's own batching API) while the consumers, all in
one consumer group and in this same process, handle them. A handler does what the
benchmark needs and nothing else: it records the publish→handled latency.

- raw batched (the baseline): redis-py by hand, batched: pipelined XADD; each consumer
  loops XREADGROUP COUNT 100, decodes each entry's JSON payload, then one XACK per batch.
  About the least work a consumer can do, with none of a bus's guarantees.
- raw loop (for reference): the same without batching, one XADD per event and
  XREADGROUP COUNT 1 + XACK per event. What redis-py code looks like without a library.
- akbus: ``Bus.publish_many`` of an ``OrderClosed`` event; ``Subscriber`` handlers receive
  the parsed, validated envelope; every guarantee of the bus is on (acks after success,
  retries, claiming, dead letters, metrics).
- FastStream: ``RedisBroker.publish`` in a pipeline; ``StreamSub`` subscribers (reading up
  to 100 entries at a time) receive the decoded message.

Throughput is N divided by the time from the first publish to the last handled event.
The last line is ``ratio akbus/raw_batched=<x> akbus/faststream=<y>``: throughput at
4 consumers against the batched raw loop and against FastStream.

With ``--durable`` it measures instead what a durable commit costs (:mod:`akbus.sentinel`:
a primary, a replica and three Sentinels on this machine): N guarded writes
(``Bus.apply_if``, the records' and reservations' path) and N optimistic transactions
(``Bus.transact``, WATCH/MULTI/EXEC, the relay's tx records), each one at a time and 16
at once, without and with ``durable=True`` (``WAIT 1``). The last line is
``ratio durable/plain apply_if=<x> transact=<y>``: the throughput of 16 writers at once,
durable against plain.

    uv run python bench/bus.py [--events N] [--redis-url URL] [--durable]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

import redis.asyncio as aioredis
from faststream.redis import RedisBroker, StreamSub

from akbus import Bus, BusSettings, BusTx, Message, RedisBackend, RedisSettings
from akbus.embedded import EmbeddedRedis
from akbus.sentinel import SentinelRedis
from aktypes.events import OrderClosed
from aktypes.ids import OrderID
from aktypes.testing import address

BATCH = 100
OWNER = address(1)


@dataclass
class Result:
    system: str
    consumers: int
    events: int
    seconds: float
    latencies: list[float]

    @property
    def throughput(self) -> float:
        return self.events / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


class Tally:
    """Counts handled events and keeps their latencies; signals when all arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.latencies: list[float] = []
        self.done = asyncio.Event()
        self.last = 0.0

    def record(self, sent_at: float) -> None:
        now = time.time()
        self.latencies.append(now - sent_at)
        if len(self.latencies) >= self.expected:
            self.last = time.perf_counter()
            self.done.set()


async def measure(
    system: str,
    consumers: int,
    events: int,
    start_consumers: Callable[[Tally], Awaitable[Callable[[], Awaitable[None]]]],
    publish: Callable[[int, int], Awaitable[None]],
) -> Result:
    tally = Tally(events)
    stop = await start_consumers(tally)
    started = time.perf_counter()
    for first in range(0, events, BATCH):
        await publish(first, min(BATCH, events - first))
    await asyncio.wait_for(tally.done.wait(), timeout=600)
    await stop()
    return Result(system, consumers, events, tally.last - started, tally.latencies)


# -- raw redis-py ---------------------------------------------------------------------------


async def raw(url: str, stream: str, consumers: int, events: int, *, batched: bool) -> Result:
    """The loop batched by hand (the baseline), or the plain loop (one command per event)."""
    client = aioredis.Redis.from_url(url, decode_responses=True, max_connections=64)
    await client.xgroup_create(stream, "g", id="0", mkstream=True)
    count = BATCH if batched else 1

    async def start(tally: Tally) -> Callable[[], Awaitable[None]]:
        running = True

        async def loop(name: str) -> None:
            while running:
                reply = await client.xreadgroup("g", name, {stream: ">"}, count=count, block=100)
                for _, entries in reply or ():
                    for entry_id, fields in entries:
                        tally.record(json.loads(fields["payload"])["sent_at"])
                        if not batched:
                            await client.xack(stream, "g", entry_id)
                    if batched:
                        await client.xack(stream, "g", *(entry_id for entry_id, _ in entries))

        tasks = [asyncio.create_task(loop(f"c{i}")) for i in range(consumers)]

        async def stop() -> None:
            nonlocal running
            running = False
            await asyncio.gather(*tasks)

        return stop

    def fields(n: int) -> dict[str, str]:
        payload = json.dumps({"order": f"{OWNER}/{n + 1}/1/1", "sent_at": time.time()})
        return {"type": "order.closed", "payload": payload}

    async def publish(first: int, count: int) -> None:
        if not batched:
            for n in range(first, first + count):
                await client.xadd(stream, fields(n))  # type: ignore[arg-type]
            return
        async with client.pipeline(transaction=False) as pipe:
            for n in range(first, first + count):
                pipe.xadd(stream, fields(n))  # type: ignore[arg-type]
            await pipe.execute()

    name = "raw batched" if batched else "raw loop"
    result = await measure(name, consumers, events, start, publish)
    await client.aclose()
    return result


# -- akbus ----------------------------------------------------------------------------------


async def akbus(url: str, stream: str, consumers: int, events: int) -> Result:
    settings = BusSettings(
        batch=BATCH, block_ms=100, stats_interval_s=3600, retention_interval_s=3600
    )
    bus = Bus(
        RedisBackend.from_settings(RedisSettings(url=url)), producer="bench", settings=settings
    )

    async def start(tally: Tally) -> Callable[[], Awaitable[None]]:
        subscribers = []
        for i in range(consumers):
            sub = bus.subscriber(stream, group="g", consumer=f"c{i}")

            async def handle(msg: Message[OrderClosed]) -> None:
                tally.record(msg.envelope.time.timestamp())

            sub.add(OrderClosed, handle)
            subscribers.append(sub)
        tasks = [asyncio.create_task(s.run()) for s in subscribers]
        for sub in subscribers:
            await sub.ready.wait()

        async def stop() -> None:
            for sub in subscribers:
                await sub.stop()
            await asyncio.gather(*tasks)

        return stop

    async def publish(first: int, count: int) -> None:
        await bus.publish_many(
            stream,
            [
                OrderClosed(
                    order_id=OrderID(owner=OWNER, dseq=n + 1, gseq=1, oseq=1),
                    height=n,
                    event_index=0,
                )
                for n in range(first, first + count)
            ],
        )

    result = await measure("akbus", consumers, events, start, publish)
    await bus.close()
    return result


# -- FastStream -----------------------------------------------------------------------------


async def faststream(url: str, stream: str, consumers: int, events: int) -> Result:
    broker = RedisBroker(url, logger=None)

    async def start(tally: Tally) -> Callable[[], Awaitable[None]]:
        for i in range(consumers):

            @broker.subscriber(
                stream=StreamSub(stream, group="g", consumer=f"c{i}", max_records=BATCH)
            )
            async def handle(body: dict[str, object]) -> None:
                tally.record(float(body["sent_at"]))  # type: ignore[arg-type]

        await broker.start()

        async def stop() -> None:
            await broker.stop()

        return stop

    async def publish(first: int, count: int) -> None:
        async with broker._connection.pipeline(transaction=False) as pipe:
            for n in range(first, first + count):
                body = {"order": f"{OWNER}/{n + 1}/1/1", "sent_at": time.time()}
                await broker.publish(body, stream=stream, pipeline=pipe)
            await pipe.execute()

    await broker.connect()
    return await measure("FastStream", consumers, events, start, publish)


# -- durable commits ------------------------------------------------------------------------


async def commits(url: str, kind: str, writers: int, count: int, *, durable: bool) -> Result:
    """``count`` guarded writes or transactions by ``writers`` at once; latency per commit."""
    bus = Bus.connect(RedisSettings(url=url), producer="bench")
    await bus.wait_ready()
    latencies: list[float] = []
    numbers = iter(range(count))
    tag = f"{kind}.{durable}.{writers}"

    async def writer() -> None:
        for n in numbers:  # shared: each number is taken once

            async def write(tx: BusTx, n: int = n) -> None:
                tx.state.set(f"bench:{tag}:{n}", "1")

            began = time.perf_counter()
            if kind == "apply_if":
                await bus.apply_if(f"bench:{tag}:{n}", None, write, durable=durable)
            else:
                await bus.transact(write, durable=durable)
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(writers)))
    seconds = time.perf_counter() - began
    await bus.close()
    name = f"{kind} {'WAIT' if durable else 'plain'}"
    return Result(name, writers, count, seconds, latencies)


async def run_durable(url: str, count: int) -> list[Result]:
    return [
        await commits(url, kind, writers, count, durable=durable)
        for kind in ("apply_if", "transact")
        for writers in (1, 16)
        for durable in (False, True)
    ]


# -- main -----------------------------------------------------------------------------------


async def run(url: str, events: int) -> list[Result]:
    results = []
    for consumers in (1, 4):
        systems: list[tuple[str, Callable[[str, str, int, int], Awaitable[Result]]]] = [
            ("raw", partial(raw, batched=False)),
            ("rawbatch", partial(raw, batched=True)),
            ("akbus", akbus),
            ("faststream", faststream),
        ]
        for name, bench in systems:
            stream = f"bench.{name}.{consumers}.{datetime.now(UTC).timestamp()}"
            results.append(await bench(url, stream, consumers, events))
            client = aioredis.Redis.from_url(url)
            await client.delete(stream)
            await client.aclose()
    return results


def table(results: list[Result], *, who: str = "consumers", what: str = "events") -> str:
    header = ("system", who, what, "seconds", f"{what}/s", "p50 ms", "p99 ms")
    widths = (16, 9, 8, 8, 10, 8, 8)
    rows = [header] + [
        (
            r.system,
            str(r.consumers),
            str(r.events),
            f"{r.seconds:.2f}",
            f"{r.throughput:.0f}",
            f"{r.percentile(0.50):.1f}",
            f"{r.percentile(0.99):.1f}",
        )
        for r in results
    ]
    return "\n".join(
        " ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--redis-url", help="use this server instead of starting one")
    parser.add_argument(
        "--durable", action="store_true", help="durable commits (WAIT) against plain, on Sentinel"
    )
    args = parser.parse_args()
    logging.getLogger("akbus").setLevel(logging.ERROR)
    if args.durable:
        durable(args.events)
        return

    if args.redis_url:
        results = asyncio.run(run(args.redis_url, args.events))
    else:
        with EmbeddedRedis(aof=False) as server:
            print(f"server: {server.binary} on {server.url}")
            results = asyncio.run(run(server.url, args.events))
    print(table(results))
    at4 = {r.system: r.throughput for r in results if r.consumers == 4}
    print(
        f"ratio akbus/raw_batched={at4['akbus'] / at4['raw batched']:.2f} "
        f"akbus/faststream={at4['akbus'] / at4['FastStream']:.2f}"
    )


def durable(count: int) -> None:
    with SentinelRedis() as sentinel:
        print(f"server: {sentinel.binary}, a primary and a replica on {sentinel.url}")
        results = asyncio.run(run_durable(sentinel.url, count))
    print(table(results, who="writers", what="commits"))
    at16 = {r.system: r.throughput for r in results if r.consumers == 16}
    print(
        "ratio durable/plain "
        + " ".join(
            f"{kind}={at16[f'{kind} WAIT'] / at16[f'{kind} plain']:.2f}"
            for kind in ("apply_if", "transact")
        )
    )


if __name__ == "__main__":
    main()
