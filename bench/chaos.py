"""Chaos: the whole provider under simulated tenants while its processes are SIGKILLed.

The suite runs as real processes on one Redis with AOF (``appendfsync always``): the
devnet, kubesim with the inventory operator (one), the chain relay (one: its hot standby
and the operators' leader election are tested on their own, in
``services/chain/tests/test_standby.py`` and ``services/operators/tests/test_leader_election.py``),
and ``--replicas`` replicas each of the cluster service, the bid engine, the manifest
service, the balance service and the gateway. Simulated
tenants (``--tenants``) create deployments, accept the provider's bid, send the manifest
through either gateway (a tenant retries the other one, as behind a load balancer), update
some deployments (a new image, so a new manifest version on chain and a rollout), keep
each lease a while and close it, over and over.

Meanwhile ``--kills`` times, at random moments spread over ``--minutes``, one process
chosen at random (any replica of any service, the operator, the relay, or Redis) is
SIGKILLed and started again after a random pause of up to two seconds. When the time is up
the tenants finish what they are doing (the last lease of each stays open), every process
is running, and the run compares the chain, Kubernetes (kubesim) and Redis, each read from
its own source, until they agree or ``--settle`` seconds pass:

- ``lost_leases``: leases the chain closed for another reason than their owner's closing
  (a provider that lost track of a paid lease closes it as unstable or for a manifest
  timeout), and active leases whose manifest was accepted but that the cluster service
  has no record of;
- ``duplicate_bids``: orders the provider sent more than one CreateBid for, counted in the
  transactions the chain committed (failed ones too);
- ``leaked_reservations``: reservations in Redis for an order that is neither an active
  lease of the provider nor open with the provider's bid on it;
- ``double_withdrawals``: withdrawals of one lease committed on chain more often than the
  balance service asked for them, plus successful withdrawals of one lease less than half
  a withdrawal period apart (two replicas deciding the same withdrawal);
- ``undeployed_manifests``: active leases whose tenant's last accepted manifest is not
  running in Kubernetes exactly as sent (every service a Deployment of its count, with the
  manifest's image, that many pods and no other workload), or whose tenant could not get
  its manifest accepted at all.

With ``--failovers N`` the suite runs on Sentinel instead (:class:`akbus.sentinel.SentinelRedis`:
a primary, a replica, three Sentinels) and N times, spread over the run, the primary is
SIGKILLed (the random kills then spare Redis): the Sentinels promote the replica, every
process must follow it without a restart, and the killed server rejoins as a replica. Each
failover prints how long it took from the kill to the first write through the new primary,
to the relay's cursor moving again, to the next transaction committed through the relay
and to a lease won after the kill with its manifest accepted; the line before the audit's
sums them up (``chaos failovers=<n> unrecovered=<m> write_s=max:…,mean:… relay_s=… tx_s=…
lease_s=…``; ``unrecovered`` counts the signs not seen within 90 s).

Closed leases must be torn down too (no namespace left in kubesim): the line before the
last counts them (``not_torn_down``). The exit code is 1 when any count is not 0. The last
line is::

    chaos kills=<k> lost_leases=<a> duplicate_bids=<b> leaked_reservations=<c> double_withdrawals=<d> undeployed_manifests=<e>

    uv run python bench/chaos.py [--minutes 10] [--kills 100] [--tenants 3] [--replicas 2]
        [--seed N] [--settle 240] [--failovers N] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import datetime as dt
import itertools
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes

from akbus import Bus, BusTx, RedisSettings
from akbus.embedded import EmbeddedRedis
from akbus.retry import until_reachable
from akbus.sentinel import SentinelRedis
from akchain import msgs
from akchain.errors import ChainError
from akchain.msgs import MESSAGE_TYPES
from akchain.tx import decode_tx
from akchainsvc.adapters.ingest import CURSOR_KEY
from akcli.testing import Provider, certified, sdl_text, stream
from akcluster.domain.leases import LEASES_KEY
from akcluster.reservations import RESERVATIONS_KEY
from akdevnet.tenant import ClientCertificate, Tenant
from akdevnet.testing import DevnetClients, DevnetProcess
from akgateway.testing import GatewayProcess
from aktypes.events import LeaseClosedReason, WithdrawalRequested
from aktypes.events.streams import BALANCE_EVENTS, CHAIN_RESULTS
from aktypes.ids import LeaseID, OrderID
from aktypes.namespace import lease_namespace
from aktypes.sdl import SDL, parse_sdl

WITHDRAWAL_PERIOD_S = 10.0
BALANCE_ENV = {
    "AP_WITHDRAWAL_PERIOD": f"{WITHDRAWAL_PERIOD_S:g}s",
    "AP_LEASE_FUNDS_MONITOR_INTERVAL": "2s",
    "AP_WITHDRAWAL_FEE_MULTIPLE": "0",  # every periodic withdrawal is made: more to check
    "AP_AVERAGE_BLOCK_TIME": "100ms",
    "AP_RECOVERY_WINDOW": "2s",
}
CLUSTER_ENV = {
    "AP_MONITOR_RETRY_PERIOD": "500ms",
    "AP_MONITOR_HEALTHCHECK_PERIOD": "1s",
}
MANIFEST_ENV = {"AP_MANIFEST_TIMEOUT": "90s"}  # tenants give up delivering after 60 s
DELIVERY_DEADLINE_S = 60.0
HOLD_S = (3.0, 25.0)
CLOSED_BY_OTHERS = {LeaseClosedReason.OWNER, LeaseClosedReason.INSUFFICIENT_FUNDS}
PROGRESS_S = 90.0  # how long a failover's recovery is watched
Server = EmbeddedRedis | SentinelRedis


# -- the tenants ----------------------------------------------------------------------------


@dataclass
class Book:
    """What the tenants did and saw."""

    accepted: dict[LeaseID, SDL] = field(default_factory=dict)  # the last manifest accepted
    undelivered: set[LeaseID] = field(default_factory=set)
    deployments: int = 0
    updates: int = 0
    closed: int = 0
    retries: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    won_at: dict[int, float] = field(default_factory=dict)  # dseq: when its bid was accepted
    delivered_at: dict[int, float] = field(default_factory=dict)  # dseq: its first manifest in


def shape_text(rng: random.Random) -> str:
    return sdl_text(cpu=rng.choice((0.1, 0.25, 0.5)), memory="256Mi", count=rng.choice((1, 1, 2)))


def with_image(text: str, version: int) -> SDL:
    return parse_sdl(text.replace("nginx:1.27", f"nginx:1.{27 + version}"))


@dataclass
class Tenants:
    chain: DevnetClients
    provider: str
    gateways: list[str]
    book: Book
    stop: asyncio.Event
    seed: int

    async def deliver(
        self, tenant: Tenant, cert: ClientCertificate, leases: list[LeaseID], shape: SDL
    ) -> bool:
        """PUT the manifest until a gateway accepts it (a gateway down, Redis down, the
        manifest service not yet aware of an update: try again, the other gateway first)."""
        dseq = leases[0].dseq
        deadline = time.monotonic() + DELIVERY_DEADLINE_S
        urls = list(self.gateways)
        while time.monotonic() < deadline:
            try:
                status, answer = await tenant.send_manifest_answer(
                    dseq, shape, urls[0], certificate=cert, provider=self.provider, timeout=20
                )
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                status, answer = 0, type(exc).__name__
            if status == 200:
                self.book.delivered_at.setdefault(dseq, time.monotonic())
                for lease in leases:
                    self.book.accepted[lease] = shape
                    self.book.undelivered.discard(lease)
                return True
            self.book.retries += 1
            self.book.errors[f"manifest answer {status}"] += 1
            if 400 <= status < 500 and "version" not in json.dumps(answer):
                print(f"  dseq {dseq}: manifest refused: {status} {answer}", flush=True)
            urls.append(urls.pop(0))
            await asyncio.sleep(0.5)
        self.book.undelivered.update(lease for lease in leases if lease not in self.book.accepted)
        return False

    async def one_round(
        self, tenant: Tenant, cert: ClientCertificate, rng: random.Random
    ) -> list[LeaseID]:
        """Deploy, lease, deliver, maybe update, hold; the leases (still open)."""
        text = shape_text(rng)
        shape = with_image(text, 0)
        deployment = await tenant.deploy(shape)
        self.book.deployments += 1
        try:
            await tenant.wait_for_bids(deployment.dseq, provider=self.provider, timeout=60)
            leases = await tenant.accept(deployment.dseq, self.provider)
            self.book.won_at[deployment.dseq] = time.monotonic()
        except (TimeoutError, LookupError) as exc:
            self.book.errors[f"no lease: {type(exc).__name__}"] += 1
            print(f"  dseq {deployment.dseq}: {exc}", flush=True)
            await tenant.close(deployment.dseq)
            return []
        if await self.deliver(tenant, cert, leases, shape) and rng.random() < 0.4:
            await self.pause(rng.uniform(1.0, 5.0))
            updated = with_image(text, rng.randint(1, 5))
            await tenant.wallet.send(msgs.update_deployment(deployment, updated.manifest_version))
            self.book.updates += 1
            await self.deliver(tenant, cert, leases, updated)
        await self.pause(rng.uniform(*HOLD_S))
        return leases

    async def pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), seconds)

    async def live(self, name: str, cert: ClientCertificate, index: int) -> None:
        tenant = self.chain.tenant(name)
        rng = random.Random(self.seed + index)
        while not self.stop.is_set():
            try:
                leases = await self.one_round(tenant, cert, rng)
                if self.stop.is_set():
                    return  # the last lease stays open: the audit checks it is deployed
                if leases:
                    await tenant.close(leases[0].dseq)
                    self.book.closed += 1
            except ChainError as exc:
                self.book.errors[f"chain: {type(exc).__name__}"] += 1
                print(f"  {name}: {exc}", flush=True)
                await asyncio.sleep(1.0)


# -- the chaos ----------------------------------------------------------------------------


@dataclass
class Chaos:
    provider: Provider
    redis: Server
    rng: random.Random
    kills: collections.Counter[str] = field(default_factory=collections.Counter)
    crashes: collections.Counter[str] = field(default_factory=collections.Counter)
    restart_failures: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def targets(self) -> list[str]:
        services = [name for name in self.provider.processes if name != "kubesim"]
        return services if isinstance(self.redis, SentinelRedis) else ["redis", *services]

    def kill_and_restart(self, name: str, pause: float) -> None:
        with self.lock:
            self._kill_and_restart(name, pause)

    def _kill_and_restart(self, name: str, pause: float) -> None:
        if name == "redis" and isinstance(self.redis, EmbeddedRedis):
            self.redis.kill()
            time.sleep(pause)
            self.redis.socket_path.unlink(missing_ok=True)
            self.redis.start()
        else:
            process = self.provider.processes[name]
            process.kill()
            time.sleep(pause)
            self.start(name)
        self.kills[name] += 1

    def start(self, name: str) -> None:
        process = self.provider.processes[name]
        for attempt in range(5):
            try:
                process.start(timeout=60)
                return
            except (RuntimeError, TimeoutError) as exc:
                self.restart_failures += 1
                print(f"  {name} did not start (attempt {attempt + 1}): {exc}"[:2000], flush=True)
                process.kill()
                time.sleep(1.0)
        raise RuntimeError(f"{name} does not start again")

    async def run(self, count: int, seconds: float) -> None:
        begin = time.monotonic()
        for k in range(count):
            moment = begin + seconds * (k + self.rng.random()) / count
            await asyncio.sleep(max(0.0, moment - time.monotonic()))
            name = self.rng.choice(self.targets())
            pause = self.rng.uniform(0.0, 2.0)
            await asyncio.to_thread(self.kill_and_restart, name, pause)
            print(f"  kill {k + 1}/{count}: {name} at {time.monotonic() - begin:.0f}s", flush=True)

    def revive(self) -> None:
        """Start again what exited on its own, as a container's restart policy would; each
        such exit is counted (a service should ride out an outage, not die of it)."""
        with self.lock:
            for name, process in self.provider.processes.items():
                if not process.running():
                    self.crashes[name] += 1
                    print(f"  {name} exited by itself: {process.log()[-1500:]}", flush=True)
                    self.start(name)

    async def watch(self) -> None:
        while True:
            await asyncio.to_thread(self.revive)
            await asyncio.sleep(1.0)


@dataclass
class Recovery:
    """One failover: seconds from the kill to each sign of recovery (None: not seen)."""

    write_s: float
    relay_s: float | None
    tx_s: float | None
    lease_s: float | None  # a lease won after the kill, and its manifest accepted


@dataclass
class Failovers:
    """SIGKILLs of the Sentinel primary, each timed until the suite makes progress again."""

    chaos: Chaos
    sentinel: SentinelRedis
    bus: Bus
    book: Book
    rng: random.Random
    done: list[Recovery] = field(default_factory=list)

    async def run(self, count: int, seconds: float) -> None:
        begin = time.monotonic()
        for k in range(count):
            moment = begin + seconds * (k + 0.25 + 0.5 * self.rng.random()) / count
            await asyncio.sleep(max(0.0, moment - time.monotonic()))
            at = time.monotonic() - begin
            found = await self.once()
            self.done.append(found)
            print(
                f"  failover {k + 1}/{count} at {at:.0f}s: the new primary took a write after "
                f"{found.write_s:.2f}s, the relay's cursor moved after {_s(found.relay_s)}, "
                f"a transaction was committed through the relay after {_s(found.tx_s)}, "
                f"a new lease was won and its manifest accepted after {_s(found.lease_s)}",
                flush=True,
            )

    async def once(self) -> Recovery:
        cursor = int(await self.bus.backend.get(CURSOR_KEY) or 0)
        results = await self.bus.backend.entries(CHAIN_RESULTS, count=1, reverse=True)
        last_result = results[0].id if results else "0-0"
        with self.chaos.lock:  # no other kill meanwhile
            killed = await asyncio.to_thread(self.sentinel.kill_primary)
        began = time.monotonic()

        async def probe(tx: BusTx) -> None:
            tx.state.set("chaos:probe", str(began))

        await until_reachable("probe", lambda: self.bus.transact(probe))
        write_s = time.monotonic() - began
        relay_s = tx_s = lease_s = None
        rejoined = False
        while time.monotonic() - began < PROGRESS_S and None in (relay_s, tx_s, lease_s):
            if relay_s is None and int(await self.bus.backend.get(CURSOR_KEY) or 0) > cursor:
                relay_s = time.monotonic() - began
            if tx_s is None and await self.bus.backend.entries(
                CHAIN_RESULTS, start=f"({last_result}", count=1
            ):
                tx_s = time.monotonic() - began
            if lease_s is None and any(
                won > began and dseq in self.book.delivered_at
                for dseq, won in list(self.book.won_at.items())
            ):
                lease_s = time.monotonic() - began
            if not rejoined and relay_s is not None:  # the old primary back, as a replica
                await asyncio.to_thread(self.sentinel.rejoin, killed)
                rejoined = True
            await asyncio.sleep(0.05)
        if not rejoined:
            await asyncio.to_thread(self.sentinel.rejoin, killed)
        return Recovery(write_s, relay_s, tx_s, lease_s)

    def summary(self) -> str:
        """``failovers=<n> unrecovered=<m> write_s=… relay_s=… tx_s=… lease_s=…`` (max and
        mean of each; unrecovered: signs of recovery not seen within 90 s)."""
        parts = [f"failovers={len(self.done)}"]
        missing = 0
        for name in ("write_s", "relay_s", "tx_s", "lease_s"):
            seen = [v for r in self.done if (v := getattr(r, name)) is not None]
            missing += len(self.done) - len(seen)
            mean = sum(seen) / max(len(seen), 1)
            parts.append(f"{name}=max:{max(seen, default=0):.2f},mean:{mean:.2f}")
        return f"{parts[0]} unrecovered={missing} " + " ".join(parts[1:])


def _s(seconds: float | None) -> str:
    return "(not within 90 s)" if seconds is None else f"{seconds:.2f}s"


# -- the audit ----------------------------------------------------------------------------


@dataclass
class Audit:
    counts: dict[str, int]
    details: dict[str, list[str]]

    @property
    def clean(self) -> bool:
        return not any(self.counts.values())


def committed_provider_txs(db: Path, provider: str) -> list[tuple[float, bool, Any]]:
    """``(block time, succeeded, message)`` of every message in the provider's committed
    transactions, read from the devnet's own store."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        times = dict(con.execute("SELECT height, time FROM blocks"))
        rows = con.execute("SELECT height, tx, result FROM txs").fetchall()
    found = []
    for height, raw, result in rows:
        decoded = decode_tx(base64.b64decode(raw))
        if decoded.signer_address != provider:
            continue
        ok = int(json.loads(result).get("code", 0)) == 0
        moment = dt.datetime.fromisoformat(times[height].replace("Z", "+00:00")).timestamp()
        found += [
            (moment, ok, MESSAGE_TYPES[item.type_url].FromString(item.value))
            for item in decoded.messages
        ]
    return found


def members(redis: Server, key: str) -> set[str]:
    """The members of a set, or the fields of a hash, in Redis."""
    with contextlib.closing(redis.client()) as client:
        found = client.smembers(key) if client.type(key) == b"set" else client.hkeys(key)
        return {member.decode() for member in found}  # type: ignore[union-attr]


def order_of(pb: Any) -> str:
    """``owner/dseq/gseq/oseq`` of a bid's or a lease's protobuf id."""
    return str(OrderID(owner=pb.owner, dseq=pb.dseq, gseq=pb.gseq, oseq=pb.oseq))


def kube_clients(provider: Provider) -> tuple[Any, Any]:
    client = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        str(provider.kubesim.kubeconfig)
    )
    return kubernetes.client.CoreV1Api(client), kubernetes.client.AppsV1Api(client)


def deployed_as_sent(core: Any, apps: Any, lease: LeaseID, shape: SDL) -> str:
    """Why the lease's workloads differ from the manifest ("" when they do not)."""
    namespace = lease_namespace(lease)
    group = shape.manifest.groups[lease.gseq - 1]
    want = {s.name: (s.count, s.image) for s in group.services or ()}
    have = {
        d.metadata.name: (
            d.spec.replicas,
            d.spec.template.spec.containers[0].image,
            d.status.available_replicas or 0,
        )
        for d in apps.list_namespaced_deployment(namespace).items
    }
    have_sets = [s.metadata.name for s in apps.list_namespaced_stateful_set(namespace).items]
    if set(have) != set(want) or have_sets:
        return f"workloads {sorted(have) + have_sets}, manifest {sorted(want)}"
    for name, (count, image) in want.items():
        replicas, running_image, available = have[name]
        if (replicas, running_image, available) != (count, image, count):
            return (
                f"{name}: {replicas}×{running_image} ({available} available), sent {count}×{image}"
            )
        pods = [
            p
            for p in core.list_namespaced_pod(
                namespace, label_selector=f"akash.network/manifest-service={name}"
            ).items
            if p.metadata.deletion_timestamp is None
        ]
        if len(pods) != count or {p.spec.containers[0].image for p in pods} != {image}:
            return f"{name}: {len(pods)} pods, sent {count}×{image}"
    return ""


async def audit(  # noqa: PLR0917 - what the audit compares
    chain: DevnetClients, provider: Provider, me: str, book: Book, bus: Bus, redis: Server
) -> Audit:
    details: dict[str, list[str]] = collections.defaultdict(list)
    leases = await chain.lcd.leases(provider=me)
    active = {lease.id: lease for lease in leases if lease.state == "active"}
    closed = [lease for lease in leases if lease.state != "active"]
    recorded = members(redis, LEASES_KEY)
    for lease in closed:
        if lease.reason not in CLOSED_BY_OTHERS:
            details["lost_leases"].append(f"{lease.id} closed: {lease.reason}")
    for lease_id in active:
        if lease_id in book.accepted and str(lease_id) not in recorded:
            details["lost_leases"].append(f"{lease_id} active, no record in the cluster service")

    # the provider's transactions on chain: bids per order, withdrawals per lease
    txs = committed_provider_txs(provider.devnet.settings.state_path, me)
    bids: collections.Counter[str] = collections.Counter()
    withdrawals: dict[LeaseID, list[tuple[float, bool]]] = collections.defaultdict(list)
    for moment, ok, message in txs:
        kind = type(message).__name__
        if kind == "MsgCreateBid":
            bids[order_of(message.id)] += 1
        elif kind == "MsgWithdrawLease":
            withdrawals[LeaseID.parse(f"{order_of(message.id)}/{message.id.provider}")].append(
                (moment, ok)
            )
    for order, count in bids.items():
        if count > 1:
            details["duplicate_bids"].append(f"{order}: {count} CreateBid")
    asked = collections.Counter(
        e.payload.lease_id
        for e in await stream(bus, BALANCE_EVENTS)
        if isinstance(e.payload, WithdrawalRequested)
    )
    for lease_id, done in withdrawals.items():
        if len(done) > asked[lease_id]:
            details["double_withdrawals"].append(
                f"{lease_id}: {len(done)} on chain, {asked[lease_id]} asked for"
            )
        moments = sorted(moment for moment, ok in done if ok)
        for earlier, later in itertools.pairwise(moments):
            if later - earlier < WITHDRAWAL_PERIOD_S / 2:
                details["double_withdrawals"].append(
                    f"{lease_id}: withdrawn {later - earlier:.1f}s after the previous one"
                )

    # reservations: only for active leases and orders open with our bid
    open_bids = await chain.lcd.bids(provider=me, state="open")
    legit = {str(lease_id.order_id) for lease_id in active}
    legit |= {str(bid.id.order_id) for bid in open_bids}
    reserved = members(redis, RESERVATIONS_KEY)
    details["leaked_reservations"] = [f"{order} reserved" for order in sorted(reserved - legit)]

    # Kubernetes: what was sent runs, what was closed is gone
    core, apps = kube_clients(provider)

    def look() -> tuple[list[str], list[str]]:
        undeployed = []
        for lease_id in active:
            if lease_id in book.undelivered:
                undeployed.append(f"{lease_id}: the manifest was never accepted")
            elif lease_id in book.accepted:
                why = deployed_as_sent(core, apps, lease_id, book.accepted[lease_id])
                if why:
                    undeployed.append(f"{lease_id}: {why}")
        namespaces = {
            ns.metadata.name
            for ns in core.list_namespace(label_selector="akash.network=true").items
        }
        stale = sorted(namespaces - {lease_namespace(lease_id) for lease_id in active})
        return undeployed, [f"{ns} still there" for ns in stale]

    details["undeployed_manifests"], details["not_torn_down"] = await asyncio.to_thread(look)
    names = (
        "lost_leases",
        "duplicate_bids",
        "leaked_reservations",
        "double_withdrawals",
        "undeployed_manifests",
        "not_torn_down",
    )
    summary = {
        "leases": len(leases),
        "active": len(active),
        "bids": sum(bids.values()),
        "withdrawals": sum(len(w) for w in withdrawals.values()),
    }
    print(f"  audit: {summary} " + " ".join(f"{n}={len(details[n])}" for n in names), flush=True)
    return Audit({n: len(details[n]) for n in names}, dict(details))


async def settle(check: Callable[[], Any], seconds: float) -> Audit:
    """Audit until everything agrees or ``seconds`` pass; the last audit."""
    deadline = time.monotonic() + seconds
    while True:
        found: Audit = await check()
        if found.clean or time.monotonic() > deadline:
            return found
        await asyncio.sleep(5.0)


# -- the run ------------------------------------------------------------------------------


async def chaos(args: argparse.Namespace, tmp: Path) -> int:
    rng = random.Random(args.seed)  # which process dies when
    print(
        f"chaos: {args.minutes:g} min, {args.kills} kills, {args.failovers} failovers, "
        f"{args.tenants} tenants, {args.replicas} replicas of each service, seed {args.seed}, "
        f"in {tmp}",
        flush=True,
    )
    with (
        tempfile.TemporaryDirectory(prefix="c", dir="/tmp") as sock_dir,  # short socket path
        (
            SentinelRedis(Path(sock_dir))
            if args.failovers
            else EmbeddedRedis(Path(sock_dir), aof=True)
        ) as redis,
        DevnetProcess(tmp / "devnet", block_time="100ms", tenants=args.tenants) as devnet,
    ):
        provider = Provider(
            devnet,
            redis.url,
            tmp,
            replicas=args.replicas,
            cluster_env=dict(CLUSTER_ENV),
            manifest_env=dict(MANIFEST_ENV),
            balance_env=dict(BALANCE_ENV),
        )
        try:
            starting = time.monotonic()
            provider.start()
            print(f"the suite started in {time.monotonic() - starting:.0f}s", flush=True)
            me = devnet.signer("provider").address
            bus = Bus.connect(RedisSettings(url=redis.url), producer="chaos")
            async with devnet.clients() as chain:
                names = [f"tenant-{i + 1}" for i in range(args.tenants)]
                certs = [await certified(chain.tenant(name), provider) for name in names]
                gateways = [
                    p.url for p in provider.replicas_of("gateway") if isinstance(p, GatewayProcess)
                ]
                book = Book()
                stop = asyncio.Event()
                tenants = Tenants(chain, me, gateways, book, stop, args.seed)
                lives = [
                    asyncio.create_task(tenants.live(name, cert, i))
                    for i, (name, cert) in enumerate(zip(names, certs, strict=True))
                ]
                monkey = Chaos(provider, redis, rng)
                watcher = asyncio.create_task(monkey.watch())
                began = time.monotonic()
                failovers = None
                chaos_runs = [monkey.run(args.kills, args.minutes * 60)]
                if isinstance(redis, SentinelRedis):
                    failovers = Failovers(monkey, redis, bus, book, random.Random(args.seed + 1))
                    chaos_runs.append(failovers.run(args.failovers, args.minutes * 60))
                await asyncio.gather(*chaos_runs)
                await asyncio.sleep(max(0.0, began + args.minutes * 60 - time.monotonic()))
                stop.set()
                print("time is up: the tenants finish their rounds", flush=True)
                await asyncio.wait_for(asyncio.gather(*lives), DELIVERY_DEADLINE_S * 3)
                print(f"the tenants finished after {time.monotonic() - began:.0f}s", flush=True)
                final = await settle(
                    lambda: audit(chain, provider, me, book, bus, redis), args.settle
                )
                watcher.cancel()
            await bus.close()
        finally:
            provider.stop()
    print(
        f"tenants: {book.deployments} deployments, {len(book.accepted)} manifests accepted, "
        f"{book.updates} updates, {book.closed} closed, {book.retries} delivery retries; "
        f"{dict(book.errors)}"
    )
    print(
        f"kills: {dict(sorted(monkey.kills.items()))}; exits on their own: "
        f"{dict(monkey.crashes)}; restarts that failed at first: {monkey.restart_failures}"
    )
    if failovers is not None:
        print(f"chaos {failovers.summary()}")
    for name, found in final.details.items():
        for line in found[:20]:
            print(f"  {name}: {line}")
    counts = final.counts
    print(f"chaos closed_leases={book.closed} not_torn_down={counts['not_torn_down']}")
    print(
        f"chaos kills={sum(monkey.kills.values())} lost_leases={counts['lost_leases']} "
        f"duplicate_bids={counts['duplicate_bids']} "
        f"leaked_reservations={counts['leaked_reservations']} "
        f"double_withdrawals={counts['double_withdrawals']} "
        f"undeployed_manifests={counts['undeployed_manifests']}"
    )
    return 0 if final.clean else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the chaos lasts")
    parser.add_argument("--kills", type=int, default=100, help="SIGKILLs over that time")
    parser.add_argument("--tenants", type=int, default=3, help="simulated tenants")
    parser.add_argument("--replicas", type=int, default=2, help="replicas of each service")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="random seed")
    parser.add_argument("--settle", type=float, default=240.0, help="seconds to agree at the end")
    parser.add_argument(
        "--failovers", type=int, default=0, help="SIGKILLs of the primary, on Sentinel"
    )
    parser.add_argument("--keep", action="store_true", help="keep the logs and data")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="akash-chaos-"))
    code = asyncio.run(chaos(args, tmp))
    if not args.keep and code == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    elif code:
        print(f"logs and data kept in {tmp}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
