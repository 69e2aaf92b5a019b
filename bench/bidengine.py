"""Bid engine under a burst of orders: OrderCreated in, BroadcastTx(CreateBid) out.

One Redis (started here, or ``--redis-url``) carries everything:

- the cluster service as a real subprocess (``python -m akcluster``, null backend, a nodes
  file big enough for every order), which answers the bid engine's reservations;
- the bid engine in a process of its own (this script with ``--engine-worker``), as in
  production: ``akbidengine.handlers.Orders`` on an in-memory chain (``MemoryChain``) that
  holds every order, subscribed to ``akash.chain.events`` as ``akbidengine.service.start``
  does (group ``bidengine``, partitioned by order); in this process with ``--profile`` or
  ``--sections``, which look inside it;
- a recorder instead of the chain relay's transaction pipeline: a consumer (group
  ``recorder``) of ``akash.provider.chain.tx`` that notes when each order's
  ``create-bid/<order>`` BroadcastTx arrives;
- the load: ``OrderCreated`` events published at ``--rate`` per second for ``--seconds``,
  on an absolute schedule (a slow publish does not delay the next one).

An order's latency is from the moment its OrderCreated is published to the moment the
recorder sees its BroadcastTx; throughput is orders completed over the time from the first
publish to the last completion. The baseline, measured first on the same Redis at the same
rate, is the bus's own hop: one small event published, received by a subscriber of another
group. Every order must get exactly one CreateBid (counted on the stream at the end); the
exit code is 1 otherwise. The last line is::

    bidengine p50_ms=<x> p99_ms=<y> orders_per_s=<z> bus_hop_p99_ms=<w>

    uv run python bench/bidengine.py [--rate 200] [--seconds 10] [--redis-url URL]
        [--aof] [--sections] [--profile]

``--sections`` times each step of an order (by wrapping the engine's methods from here),
``--profile`` runs cProfile on this process during the bid engine phase; both slow the
run down. ``--redis-url`` must name an empty database: the run leaves its streams, order
records and reservations there.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import logging
import math
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis

from akbidengine.adapters.chain import ProviderRecord
from akbidengine.domain.filtering import TenantPolicy
from akbidengine.domain.pricing import ScaleStrategy
from akbidengine.facts import Facts
from akbidengine.handlers import BidPolicy, Orders
from akbidengine.service import order_of
from akbidengine.testing import MemoryChain
from akbus import Bus, BusSettings, Message, RedisBackend, RedisSettings
from akbus.embedded import EmbeddedRedis
from akbus.testing import running
from akchain.models import Order
from akcluster.settings import ClusterSettings
from akcluster.testing import ClusterProcess
from akservice.runtime import GC_THRESHOLDS
from aktypes.coin import Coin
from aktypes.events import BroadcastTx, OrderClosed, OrderCreated, envelope_from_fields
from aktypes.events.streams import CHAIN_EVENTS, CHAIN_TX
from aktypes.groupspec import GroupSpec
from aktypes.ids import OrderID
from aktypes.sdl import parse_sdl
from aktypes.testing import address

CORPUS = Path(__file__).parents[1] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
SDL = "adminer.yaml"  # one service: 0.1 CPU, 512 MiB memory, 512 MiB storage, one endpoint
PROVIDER = address(250)
OWNERS = 200  # tenants address(1) … address(200), round robin
CONCURRENCY = 64  # AP_BID_CONCURRENCY's default
NODE = {"cpu": 64_000, "memory": 256 * 2**30, "ephemeral": 4 * 2**40}  # one node of the file


@dataclass
class Run:
    """One measured phase: when each key was sent and when it was first seen done."""

    name: str
    sent: dict[str, float] = field(default_factory=dict)
    seen: dict[str, float] = field(default_factory=dict)
    late: float = 0.0  # the worst delay of a publish behind its schedule, seconds
    expected: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds used, by process
    commands: Counter[str] = field(default_factory=Counter)  # Redis commands run, by name

    def arrived(self, key: str) -> None:
        if key in self.sent and key not in self.seen:
            self.seen[key] = time.perf_counter()
            if len(self.seen) >= self.expected:
                self.done.set()

    @property
    def latencies(self) -> list[float]:
        return sorted(self.seen[k] - self.sent[k] for k in self.seen)

    def percentile(self, q: float) -> float:
        ordered = self.latencies
        if not ordered:
            return math.nan
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    @property
    def throughput(self) -> float:
        if not self.seen:
            return 0.0
        return len(self.seen) / (max(self.seen.values()) - min(self.sent.values()))


async def paced(
    run: Run, rate: float, keys: list[str], send: Callable[[int], Coroutine[Any, Any, object]]
) -> None:
    """Call ``send(i)`` for each key at ``start + i / rate``, without waiting in between."""
    run.expected = len(keys)
    tasks: list[asyncio.Task[object]] = []
    start = time.perf_counter()
    for i, key in enumerate(keys):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        now = time.perf_counter()
        run.late = max(run.late, now - due)
        run.sent[key] = now
        tasks.append(asyncio.create_task(send(i)))
    await asyncio.gather(*tasks)


async def settle(run: Run, grace_s: float) -> None:
    """Wait until every key was seen, or ``grace_s`` passed without one more arriving."""
    while not run.done.is_set():
        before = len(run.seen)
        try:
            await asyncio.wait_for(run.done.wait(), grace_s)
        except TimeoutError:
            if len(run.seen) == before:
                return


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def usage(url: str, pids: dict[str, int | None]) -> tuple[dict[str, float], Counter[str]]:
    """CPU seconds used so far by this process, the bid engine's and the cluster's
    processes and Redis; and how many times Redis ran each command."""
    client = aioredis.Redis.from_url(url)
    try:
        cpu = await client.info("cpu")
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    used = {
        "here": time.process_time(),
        **{name: cpu_seconds(pid) for name, pid in pids.items()},
        "redis": float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
    }
    calls = Counter({k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()})
    return used, calls


async def drive(
    run: Run,
    rate: float,
    keys: list[str],
    send: Callable[[int], Coroutine[Any, Any, object]],
    *,
    url: str,
    pids: dict[str, int | None] | None = None,
) -> None:
    """The paced load, then the wait for its results; what it cost in CPU, by process."""
    cpu, calls = await usage(url, pids or {})
    await paced(run, rate, keys, send)
    await settle(run, 10.0)
    cpu_after, calls_after = await usage(url, pids or {})
    run.cpu = {name: cpu_after[name] - cpu[name] for name in cpu}
    run.commands = calls_after - calls


class Sections:
    """Where an order's time goes, timed from outside by wrapping the engine's methods."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.times: dict[str, list[float]] = defaultdict(list)
        self.step_done: dict[str, float] = {}

    def timed(self, name: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.times[name].append(time.perf_counter() - started)

        return wrapper

    def instrument(self, orders: Orders) -> None:
        """Wrap ``orders``' steps (before its handlers are registered)."""
        handler = self.timed("handler, in all", orders.on_order_created)

        async def on_order_created(msg: Message[OrderCreated]) -> None:
            sent = self.run.sent.get(str(msg.payload.order_id))
            if sent is not None:
                self.times["queue: published → handler"].append(time.perf_counter() - sent)
            await handler(msg)

        step = self.timed("step: guarded write + BroadcastTx", orders.records.update)

        async def timed_step(order_id: str, *args: Any, **kwargs: Any) -> Any:
            try:
                return await step(order_id, *args, **kwargs)
            finally:
                self.step_done[order_id] = time.perf_counter()

        asker = orders.asker

        def timed_asker(*args: Any, **kwargs: Any) -> Any:
            return self.timed("reserve: cluster round trip", asker(*args, **kwargs))

        orders.on_order_created = on_order_created  # type: ignore[method-assign]
        orders.record = self.timed("record: GET", orders.record)  # type: ignore[method-assign]
        orders.records.update = timed_step  # type: ignore[method-assign,assignment]
        orders.asker = timed_asker  # type: ignore[method-assign]

    def finish(self) -> None:
        self.times["recorder: step done → BroadcastTx seen"] = [
            self.run.seen[k] - done for k, done in self.step_done.items() if k in self.run.seen
        ]

    def table(self) -> str:
        lines = [
            f"{'section (per order)':42} {'count':>6} {'mean ms':>8} {'p50 ms':>8} {'p99 ms':>8}"
        ]
        for name, values in self.times.items():
            ordered = sorted(values)
            if not ordered:
                continue
            pick = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.99)]
            lines.append(
                f"{name:42} {len(ordered):6d} {sum(ordered) / len(ordered) * 1000:8.2f} "
                f"{pick[0] * 1000:8.2f} {pick[1] * 1000:8.2f}"
            )
        return "\n".join(lines)


def connect(url: str, producer: str) -> Bus:
    settings = BusSettings(concurrency=CONCURRENCY, stats_interval_s=3600)
    return Bus(
        RedisBackend.from_settings(RedisSettings(url=url)), producer=producer, settings=settings
    )


# -- the baseline: one hop on the bus -------------------------------------------------------


async def bus_hop(url: str, rate: float, count: int) -> Run:
    """OrderClosed events on a stream of their own, received by another group's consumer."""
    run = Run("bus hop")
    stream = f"bench.hop.{time.time()}"
    sender, receiver = connect(url, "bench-hop-sender"), connect(url, "bench-hop-receiver")
    owner = address(1)
    ids = [OrderID(owner=owner, dseq=n + 1, gseq=1, oseq=1) for n in range(count)]
    sub = receiver.subscriber(stream, group="hop", consumer="c0")

    async def receive(msg: Message[OrderClosed]) -> None:
        run.arrived(str(msg.payload.order_id))

    sub.add(OrderClosed, receive)

    async def send(i: int) -> str:
        return await sender.publish(stream, OrderClosed(order_id=ids[i], height=i, event_index=0))

    async with running(sub):
        await drive(run, rate, [str(i) for i in ids], send, url=url)
    await sender.backend.delete(stream)
    await sender.close()
    await receiver.close()
    return run


# -- the bid engine -------------------------------------------------------------------------


def group() -> GroupSpec:
    return parse_sdl((CORPUS / SDL).read_text()).groups[0]


def inventory(spec: GroupSpec, orders: int) -> str:
    """A nodes file with room for ``orders`` of ``spec`` and a quarter to spare."""
    need = {"cpu": 0, "memory": 0, "ephemeral": 0}
    for unit in spec.resources:
        res = unit.resource
        need["cpu"] += res.cpu_millis * unit.count
        need["memory"] += res.memory_bytes * unit.count
        need["ephemeral"] += unit.count * sum(
            v.size.val for v in res.storage or () if not v.persistent
        )
    per_node = min(NODE[k] // need[k] for k in need if need[k]) or 1
    nodes = max(2, math.ceil(orders * 1.25 / per_node))
    lines = ["nodes:"]
    lines += [
        f'  - {{name: node-{i}, cpu: "{NODE["cpu"] // 1000}", memory: 256Gi, '
        f"ephemeral-storage: 4Ti, storage-classes: [beta2]}}"
        for i in range(nodes)
    ]
    lines += ["storage:", f"  beta2: {nodes * 4}Ti"]
    return "\n".join(lines) + "\n"


def production_timings() -> dict[str, str]:
    """The defaults, instead of ClusterProcess's fast test timings (claims every 0.2 s…)."""
    bus, cluster = BusSettings.model_fields, ClusterSettings.model_fields
    timings = {
        f"AKBUS_{name.upper()}": str(bus[name].default)
        for name in ("claim_idle_s", "claim_interval_s", "retry_initial_s", "retry_max_s")
    }
    timings["AP_CLUSTER_STATUS_INTERVAL"] = f"{cluster['cluster_status_interval'].default}s"
    return timings


def provider_record(spec: GroupSpec) -> ProviderRecord:
    """The provider's on-chain record: the group's attributes, signed by its auditors."""
    attributes = tuple(spec.requirements.attributes or ())
    signed = spec.requirements.signed_by
    auditors = [*(signed.all_of or ()), *(signed.any_of or ())]
    return ProviderRecord(attributes=attributes, audited=dict.fromkeys(auditors, attributes))


@dataclass
class Engine:
    """What the bid engine phase measured."""

    run: Run
    sections: Sections | None


def engine_subscriber(url: str, ids: list[OrderID], spec: GroupSpec) -> tuple[Bus, Orders, Any]:
    """The bid engine as ``akbidengine.service.start`` wires it, on an in-memory chain."""
    chain = MemoryChain(
        orders={str(i): Order(id=i, state="open", spec=spec, created_at=0) for i in ids},
        record=provider_record(spec),
    )
    bus = connect(url, "bidengine")
    orders = Orders(
        bus,
        chain,
        ScaleStrategy.from_settings(
            cpu="0.001", memory="0.01", storage="0.01", endpoint="1", ip="0", gpu=""
        ),
        Facts(chain, PROVIDER, ()),
        BidPolicy(
            provider=PROVIDER,
            deposit=Coin.parse("500000uakt"),
            bid_timeout=300,
            reclamation_window=0,
            tenants=TenantPolicy(),
        ),
    )
    events = bus.subscriber(
        CHAIN_EVENTS, group="bidengine", consumer="bench-0", partition_key=order_of
    )
    events.add(OrderCreated, orders.on_order_created)
    return bus, orders, events


async def engine_worker(url: str, count: int) -> None:
    """``--engine-worker``: the bid engine in a process of its own, until SIGTERM."""
    bus, orders, events = engine_subscriber(url, order_ids(count), group())
    await orders.facts.refresh()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with running(events):
        gc.freeze()  # as the service runtime does once a service has started
        gc.set_threshold(*GC_THRESHOLDS)
        print("ready", flush=True)
        await stop.wait()
    await bus.close()


def order_ids(count: int) -> list[OrderID]:
    return [
        OrderID(owner=address(1 + n % OWNERS), dseq=1000 + n, gseq=1, oseq=1) for n in range(count)
    ]


async def bidengine(
    url: str,
    rate: float,
    ids: list[OrderID],
    spec: GroupSpec,
    pids: dict[str, int | None],
    *,
    sections: bool,
    in_process: bool,
) -> Engine:
    run = Run("bidengine")
    bench_bus = connect(url, "bench")
    subscribers = []
    timing = None
    engine_bus = None
    if in_process:
        engine_bus, orders, events = engine_subscriber(url, ids, spec)
        await orders.facts.refresh()
        timing = Sections(run) if sections else None
        if timing is not None:
            timing.instrument(orders)
        subscribers.append(events)
    recorder = bench_bus.subscriber(CHAIN_TX, group="recorder", consumer="r0")

    async def record(msg: Message[BroadcastTx]) -> None:
        kind, _, order = msg.payload.key.partition("/")
        if kind == "create-bid":
            run.arrived(order)

    recorder.add(BroadcastTx, record)
    subscribers.append(recorder)

    async def send(i: int) -> str:
        created = OrderCreated(order_id=ids[i], height=100 + i, tx_index=0, event_index=0)
        return await bench_bus.publish(CHAIN_EVENTS, created)

    async with running(*subscribers):
        await drive(run, rate, [str(i) for i in ids], send, url=url, pids=pids)
    if engine_bus is not None:
        await engine_bus.close()
    await bench_bus.close()
    if timing is not None:
        timing.finish()
    return Engine(run, timing)


async def create_bids(url: str) -> Counter[str]:
    """How many CreateBid transactions each order got, read from the stream itself."""
    bus = connect(url, "bench-count")
    counts: Counter[str] = Counter()
    for entry in await bus.backend.entries(CHAIN_TX):
        payload = envelope_from_fields(entry.fields).payload
        if isinstance(payload, BroadcastTx) and payload.key.startswith("create-bid/"):
            counts[payload.key.removeprefix("create-bid/")] += 1
    await bus.close()
    return counts


# -- main -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    hop: Run
    engine: Engine
    bids: Counter[str]
    profile: str = ""


async def measure(url: str, rate: float, count: int, *, profile: bool, sections: bool) -> Outcome:
    gc.freeze()
    hop = await bus_hop(url, rate, count)
    spec = group()
    ids = order_ids(count)
    in_process = profile or sections  # both look inside the engine: it runs here then
    profiler = cProfile.Profile() if profile else None
    with tempfile.TemporaryDirectory(prefix="bench-bidengine-") as tmp:
        nodes = Path(tmp) / "nodes.yaml"
        nodes.write_text(inventory(spec, count))
        cluster = ClusterProcess(
            redis_url=url,
            log_path=Path(tmp) / "cluster.log",
            inventory_file=nodes,
            extra_env=production_timings(),
        )
        cluster.start()
        worker = None
        if not in_process:
            worker = subprocess.Popen(  # noqa: S603 - this very script
                [sys.executable, __file__, "--engine-worker", url, str(count)],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert worker.stdout is not None  # noqa: S101 - set by PIPE
            if worker.stdout.readline().strip() != "ready":
                sys.exit("the bid engine worker did not start")
        pids = {"cluster": cluster.pid, "engine": worker.pid if worker else None}
        try:
            if profiler is not None:
                profiler.enable()
            engine = await bidengine(
                url, rate, ids, spec, pids, sections=sections, in_process=in_process
            )
            if profiler is not None:
                profiler.disable()
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(10)
            cluster.stop()
    await asyncio.sleep(0.2)
    bids = await create_bids(url)
    outcome = Outcome(hop, engine, Counter({str(i): bids.get(str(i), 0) for i in ids}))
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
        outcome.profile = out.getvalue() + by_package(stats)
    return outcome


def package_of(filename: str, function: str) -> str:
    """Who a profiled function belongs to: a package, asyncio, or waiting for I/O."""
    if filename == "~" and "epoll" in function:
        return "(waiting: epoll)"
    if filename == "~":
        return "(builtins: socket, json, pydantic-core…)"
    parts = Path(filename).parts
    for marker in ("site-packages", "src"):
        if marker in parts:
            return parts[parts.index(marker) + 1].removesuffix(".py")
    if "asyncio" in parts:
        return "asyncio"
    if "bench" in parts:
        return "bench"
    return "(stdlib)"


def by_package(stats: pstats.Stats) -> str:
    """Own time (tottime) summed by package: where the process spent its time."""
    own: Counter[str] = Counter()
    for (filename, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        own[package_of(filename, function)] += row[2]
    total = own.total() or 1.0
    lines = ["own time by package:"]
    lines += [f"  {name:45} {t:7.2f} s {t / total:6.1%}" for name, t in own.most_common()]
    return "\n".join(lines) + "\n"


def table(runs: list[Run], seconds: float) -> str:
    def cpu(run: Run, name: str) -> str:
        used = run.cpu.get(name, math.nan)
        return "-" if math.isnan(used) else f"{used / max(1, len(run.seen)) * 1000:.2f}"

    header = (
        *("phase", "events", "done", "events/s", "p50 ms", "p99 ms", "max ms", "late ms"),
        *("cpu ms/event: here", "engine", "cluster", "redis"),
    )
    widths = (10, 7, 7, 9, 8, 8, 8, 8, 19, 7, 8, 6)
    rows = [header] + [
        (
            r.name,
            str(r.expected),
            str(len(r.seen)),
            f"{r.throughput:.1f}",
            f"{r.percentile(0.50):.2f}",
            f"{r.percentile(0.99):.2f}",
            f"{r.percentile(1.0):.2f}",
            f"{r.late * 1000:.2f}",
            cpu(r, "here"),
            cpu(r, "engine"),
            cpu(r, "cluster"),
            cpu(r, "redis"),
        )
        for r in runs
    ]
    lines = [
        " ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    notes = (
        f"(offered for {seconds:g} s; late: worst publish behind its schedule; cpu: CPU time "
        "used during the phase per event done, by this process (the load and the recorder; "
        "the engine too with --profile or --sections), the bid engine's process, the cluster "
        "service and Redis)"
    )
    for r in runs:
        done = max(1, len(r.seen))
        top = ", ".join(
            f"{name} {n / done:.1f}" for name, n in r.commands.most_common() if n / done >= 0.05
        )
        lines.append(f"{r.name}: Redis commands per event {r.commands.total() / done:.1f} ({top})")
    return "\n".join([*lines, notes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="orders per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long orders arrive")
    parser.add_argument("--redis-url", help="use this server instead of starting one")
    parser.add_argument(
        "--aof", action="store_true", help="start Redis with fsync on every write (production)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the in-process part of the run"
    )
    parser.add_argument(
        "--sections", action="store_true", help="time each step of an order (wraps handlers)"
    )
    parser.add_argument(
        "--engine-worker", nargs=2, metavar=("URL", "ORDERS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    gc.set_threshold(*GC_THRESHOLDS)  # every process here runs as a service would (akservice)
    if args.engine_worker:
        asyncio.run(engine_worker(args.engine_worker[0], int(args.engine_worker[1])))
        return
    count = max(1, round(args.rate * args.seconds))

    if args.redis_url:
        client = redis.Redis.from_url(args.redis_url)
        keys = client.dbsize()
        client.close()
        if keys:
            sys.exit(f"{args.redis_url} holds {keys} keys: the benchmark needs an empty database")
        outcome = asyncio.run(
            measure(args.redis_url, args.rate, count, profile=args.profile, sections=args.sections)
        )
    else:
        with EmbeddedRedis(aof=args.aof) as server:
            print(f"server: {server.binary} on {server.url} (aof={'on' if args.aof else 'off'})")
            outcome = asyncio.run(
                measure(server.url, args.rate, count, profile=args.profile, sections=args.sections)
            )
    if outcome.profile:
        print(outcome.profile)
    hop, engine = outcome.hop, outcome.engine.run
    if outcome.engine.sections is not None:
        print(outcome.engine.sections.table())
    print(table([hop, engine], args.seconds))
    per_order = Counter(outcome.bids.values())
    exactly_one = per_order.get(1, 0)
    print(
        f"CreateBid per order: {exactly_one}/{count} exactly one, "
        f"{per_order.get(0, 0)} none, {count - exactly_one - per_order.get(0, 0)} more than one"
    )
    print(
        f"bidengine p50_ms={engine.percentile(0.50):.2f} p99_ms={engine.percentile(0.99):.2f} "
        f"orders_per_s={engine.throughput:.2f} bus_hop_p99_ms={hop.percentile(0.99):.2f}"
    )
    if exactly_one != count:
        sys.exit(1)


if __name__ == "__main__":
    main()
