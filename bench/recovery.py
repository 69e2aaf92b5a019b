"""Recovery of the cluster service at scale, and the memory of every provider service at
that scale: ``--leases`` leases (10,000 by default) held in Kubernetes (kubesim) and in Redis,
the cluster service (its inventory the inventory operator's) SIGKILLed and started again;
then the bid engine, the manifest service, the balance service and the gateway started on
their own state for the same leases.

**Seeding** leaves everything as the cluster service leaves a deployed lease, without
deploying through it (at its first-deploy rate that would take many minutes): each lease's
record (:class:`akcluster.domain.leases.LeaseRecord`: deployed at its manifest version),
its active reservation and its place in the work queue (its next health check one to two
``--check-period`` ahead, as the monitor schedules it) are written to Redis in pipelined
batches; its objects, made by the service's
own builders (:func:`akcluster.deployments.desired_objects`) and stamped as its apply stamps
what it creates, are posted to kubesim concurrently, whose controllers then run a pod per
lease. The service is started once on that state — its recovery must find every lease
unchanged, which checks that the seeding is what the service would apply — then killed.

**Measured**: from the restart (the process spawned) to every lease's manager rebuilt and
ready. The signal is the service's ``/readyz``: it answers 200 only once start-up is over,
and start-up includes recovery, which reads every lease's record and compares its objects
with what the cluster holds, so that each lease is then either ready (objects as they
should be, nothing written) or queued to be deployed again; plus every lease record
``deployed`` at its manifest version, which a re-queued lease reaches once re-applied. The
service's ``provider_deployment_recovered`` metric tells how many leases recovery found
unchanged and how many it re-queued, and kubesim's resourceVersion whether anything was
written meanwhile; the load average at the restart says how busy the machine was. Health
checks come every ``--check-period`` (600 s) so that what is measured is recovery, not the
monitor's steady work. The service is killed and restarted ``--restarts`` times (3) on the
same state, each time after ``REST_S`` at rest, each restart printed with when its log says recovery ended and the service was
ready; the median is the result.

**Baseline**, on the same kubesim right before the kill: what any recovery must at least
read — every object the leases hold, and the pods the inventory operator counts — with one
LIST per kind across all namespaces (pages of 500, label-selected as the service selects
them, the JSON not turned into models), through the official client.

**RSS per service** (the target: under 150 MB each at 10,000 leases), VmRSS and its peak
VmHWM. The cluster service's is read once it has published its status after the restart
(its reservations loaded). The other four are then started one after another as real
processes on the same Redis, the cluster still running, each on its own state for the
leases, written in pipelined batches as the service itself writes it:

- bid engine: each lease's order record, ``won``, with its group, the price its pricing
  gives, the deposit and the cluster's allocation, kept ``FINAL_TTL_S`` as a won order is
  (:mod:`akbidengine.domain.order`; a won order is in no other key);
- manifest service: each lease's deployment record, its manifest accepted and sent to the
  lease, and the deployment in the set of those with a manifest; none waiting for one
  (:mod:`akmanifest.domain.records`);
- balance service: each lease monitored (checked lately, what it owes since its last
  periodic withdrawal), its next check (in its record and on the schedule) — 10 to 20
  minutes ahead, beyond the run, so that no check, and so no chain, is needed while
  measuring — the chain's total paid for it so far, and the sum earned
  (:mod:`akbalance.domain.records`);
- gateway: nothing, for it keeps no state (its dashboard folds a bounded window of the
  streams); it serves what the others' statuses say.

The bid engine and the gateway read the chain before they are ready (the provider's
attributes; the on-chain certificates), so a devnet runs for them (a block a second). The
provider (``AP_PROVIDER_ADDRESS``, the leases' provider) is not registered on it: the bid
engine finds no attributes, the gateway's certificate is generated but not on chain. Each
is read once it is ready (``/readyz``) and shows the leases: the manifest service's status
counts every deployment record, the balance service's every monitored lease, the bid
engine's its orders in play, and the gateway's ``/status`` the cluster's leases and the
manifest service's deployments. Kubesim and Redis (holding every service's state by then)
are printed too, not counted: ``max_rss_mb`` is the largest VmRSS of the five provider
services, named on the line before.

The last line is::

    recovery leases=<n> seconds=<s> max_rss_mb=<m>

    uv run python bench/recovery.py [--leases 10000] [--check-period 600] [--restarts 3]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import re
import ssl
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes
import redis

from akbalance.domain.records import DUE, EARNED, WITHDRAWN, Watched
from akbalance.domain.records import LEASES as MONITORED_KEY
from akbalance.settings import BalanceSettings
from akbalance.testing import BalanceProcess
from akbidengine.domain.order import FINAL_TTL_S, OrderRecord
from akbidengine.domain.order import record_key as order_key
from akbidengine.domain.pricing import PriceRequest
from akbidengine.settings import BidSettings
from akbidengine.testing import BidEngineProcess
from akbus.embedded import EmbeddedRedis
from akcluster.adapters.kube_deploy import KubeDeployments
from akcluster.adapters.kube_rules import created, fingerprint
from akcluster.adapters.null import parse_inventory
from akcluster.deployments import desired_objects
from akcluster.domain.leases import LEASES_KEY, WORK_KEY, LeaseRecord, lease_key
from akcluster.domain.ledger import Ledger, Reservation
from akcluster.domain.objects import crds, scheduler_params
from akcluster.domain.placement import NoFit, Placement, place
from akcluster.reservations import RESERVATIONS_KEY, VERSION_KEY
from akcluster.service import build_settings, commit_levels
from akcluster.settings import ClusterSettings
from akcluster.testing import TINY_SDL as TINY
from akcluster.testing import ClusterProcess
from akdevnet.testing import DevnetProcess
from akgateway.testing import GatewayProcess
from akmanifest.domain.records import DEPLOYMENTS_KEY, DeploymentRecord
from akmanifest.domain.records import record_key as deployment_key
from akmanifest.testing import ManifestProcess
from akoperators.testing import OperatorProcess
from akservice.testing import RuntimeProcess, ServiceProcess
from aktypes.coin import DecCoin
from aktypes.events.streams import status_stream
from aktypes.ids import LeaseID
from aktypes.sdl import SDL, parse_sdl
from aktypes.testing import address
from kubesim.testing import KubeSimProcess

NODES = """
nodes:
  - {name: big-a, cpu: "2048", memory: 8Ti, ephemeral-storage: 64Ti, pods: 20000}
  - {name: big-b, cpu: "2048", memory: 8Ti, ephemeral-storage: 64Ti, pods: 20000}
"""
OWNER, PROVIDER = address(11), address(12)
FIRST_DSEQ = 100_000
SERVICES = ("cluster", "bidengine", "manifest", "balance", "gateway")  # the provider's
CPU_SCALE = "0.001"  # the bid engine's price per millicpu: the seeded bids' price
NEXT_CHECK_S = 600.0  # the balance service's next checks: one to two of these ahead
REST_S = 20.0  # before each restart
BATCH = 500  # Redis commands per pipeline
CONCURRENCY = 16  # requests in flight to kubesim while seeding
PLURALS = {"Ingress": "ingresses", "NetworkPolicy": "networkpolicies"}
SELECTOR = "akash.network=true"
BASELINE = (  # what the leases hold, and the pods the inventory operator lists
    "/api/v1/namespaces",
    "/apis/akash.network/v2beta2/manifests",
    "/apis/networking.k8s.io/v1/networkpolicies",
    "/apis/apps/v1/deployments",
    "/api/v1/services",
    "/api/v1/pods",
)


def lease(i: int) -> LeaseID:
    return LeaseID.parse(f"{OWNER}/{FIRST_DSEQ + i}/1/1/{PROVIDER}")


# -- seeding -----------------------------------------------------------------------------
def shape() -> tuple[SDL, Placement]:
    """Every lease's SDL, and where the cluster places its group."""
    sdl = parse_sdl(TINY)
    placed = place(sdl.groups[0], Ledger().free(parse_inventory(NODES), node_ports=0, ips=0))
    if isinstance(placed, NoFit):
        sys.exit(f"the lease does not fit the nodes: {placed.reasons}")
    return sdl, placed


def deployed_leases(leases: int) -> list[tuple[LeaseRecord, Reservation]]:
    """Each lease as the service leaves it deployed: its record, its active reservation."""
    sdl, placed = shape()
    group, spec, version = sdl.manifest.groups[0], sdl.groups[0], sdl.manifest.version_hex()
    now = time.time()
    found = []
    for i in range(leases):
        lease_id = lease(i)
        reservation = Reservation.of(str(lease_id.order_id), spec, placed, now)
        record = LeaseRecord(
            lease_id=lease_id,
            group=group,
            version=version,
            applied=version,
            state="deployed",
            health="deployed",
            monitored=True,
            updated_at=now,
        )
        found.append((record, reservation.model_copy(update={"state": "active"})))
    return found


def seed_redis(url: str, seeded: Sequence[tuple[LeaseRecord, Reservation]], period: float) -> None:
    """Records, reservations and the work queue, written as the service writes them."""
    client = redis.Redis.from_url(url)
    now = time.time()
    for start in range(0, len(seeded), BATCH):
        pipe = client.pipeline(transaction=False)
        for record, reservation in seeded[start : start + BATCH]:
            member = str(record.lease_id)
            pipe.set(lease_key(member), record.model_dump_json())
            pipe.sadd(LEASES_KEY, member)
            pipe.zadd(WORK_KEY, {member: now + period * (1 + random.random())})
            pipe.hset(RESERVATIONS_KEY, reservation.order_id, reservation.model_dump_json())
        pipe.execute()
    client.set(VERSION_KEY, "1")
    client.close()


def pipelined(url: str, leases: int, write: Callable[[Any, int], None]) -> None:
    """``write(pipeline, i)`` for every lease, in pipelined batches."""
    client = redis.Redis.from_url(url)
    for start in range(0, leases, BATCH):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(start + BATCH, leases)):
            write(pipe, i)
        pipe.execute()
    client.close()


def seed_bidengine(url: str, leases: int, bid: BidSettings) -> DecCoin:
    """Each lease's order as the bid engine leaves it once the lease is won: its record,
    ``won``, with what the bid carried (the group, the price its pricing gives for the
    cluster's allocation, the deposit), kept ``FINAL_TTL_S`` and in no other key (the set
    of orders in play and the bid deadlines hold only open bids); the price."""
    sdl, placed = shape()
    spec, allocated = sdl.groups[0], placed.allocated
    price = bid.scale().compute(PriceRequest(OWNER, spec, allocated))
    won = OrderRecord(
        order_id="",
        state="won",
        owner=OWNER,
        group=spec,
        price=price,
        deposit=bid.deposit(),
        allocated=list(allocated),
        updated_at=time.time(),
    )

    def write(pipe: Any, i: int) -> None:
        order = str(lease(i).order_id)
        record = won.model_copy(update={"order_id": order})
        pipe.set(order_key(order), record.model_dump_json(), ex=FINAL_TTL_S)

    pipelined(url, leases, write)
    return price


def seed_manifest(url: str, leases: int) -> None:
    """Each lease's deployment as the manifest service leaves it once its manifest is
    accepted and sent: its record (the manifest's canonical JSON, the lease) and its place
    in the set of deployments with a manifest; no lease left waiting for one."""
    manifest = parse_sdl(TINY).manifest
    now = time.time()

    def write(pipe: Any, i: int) -> None:
        lease_id = lease(i)
        deployment = lease_id.deployment_id
        record = DeploymentRecord.accepted(deployment, manifest, [lease_id], now)
        pipe.set(deployment_key(deployment), record.model_dump_json())
        pipe.sadd(DEPLOYMENTS_KEY, str(deployment))

    pipelined(url, leases, write)


def seed_balance(url: str, leases: int, price: DecCoin, balance: BalanceSettings) -> None:
    """Each lease as the balance service leaves it between checks, one to thirty days after
    it was first monitored: its record (when added, when last checked, its next periodic
    withdrawal, what it owes since the last one, its next check), its next check on the
    schedule (one to two ``NEXT_CHECK_S`` ahead, beyond the run, so that no check comes due)
    and the chain's total paid for it; the sum of those, earned."""
    now, day = time.time(), 24 * 3600.0
    period, block_s = balance.withdrawal_period or day, balance.average_block_time
    per_block, denom = price.amount.to_decimal(), price.denom
    rng = random.Random(leases)
    earned = 0

    def write(pipe: Any, i: int) -> None:
        nonlocal earned
        member = str(lease(i))
        added = now - day * (1 + 29 * rng.random())
        withdrawn_at = now - period * rng.random()  # the last periodic withdrawal
        at = now + NEXT_CHECK_S * (1 + rng.random())
        record = Watched(
            added=added,
            next_periodic=withdrawn_at + period,
            checked=now - balance.lease_funds_monitor_interval * rng.random(),
            unpaid=(denom, int(per_block * Decimal((now - withdrawn_at) / block_s))),
            due=at,
        )
        paid = int(per_block * Decimal((withdrawn_at - added) / block_s))
        earned += paid
        pipe.hset(MONITORED_KEY, member, str(record))
        pipe.zadd(DUE, {member: at})
        pipe.set(f"{WITHDRAWN}:{member}", f"{denom}:{paid}")

    pipelined(url, leases, write)
    client = redis.Redis.from_url(url)
    client.hset(EARNED, denom, earned)
    client.close()


def path_of(obj: dict[str, Any]) -> str:
    """Where ``obj`` is created (the kinds the builders make)."""
    api, kind = str(obj["apiVersion"]), str(obj["kind"])
    base = "/api/v1" if api == "v1" else f"/apis/{api}"
    namespace = obj["metadata"].get("namespace")
    if namespace:
        base += f"/namespaces/{namespace}"
    return f"{base}/{PLURALS.get(kind, kind.lower() + 's')}"


async def post_all(url: str, objects: Sequence[dict[str, Any]]) -> None:
    """Create every object, ``CONCURRENCY`` at a time, stamped as the service's apply
    stamps what it creates."""
    slots = asyncio.Semaphore(CONCURRENCY)
    async with aiohttp.ClientSession(url) as session:

        async def create(obj: dict[str, Any]) -> None:
            body = created(obj, fingerprint(obj))
            async with slots, session.post(path_of(obj), json=body) as reply:
                if reply.status >= 300:
                    sys.exit(
                        f"kubesim refused {obj['kind']} {obj['metadata']}: {await reply.text()}"
                    )

        await asyncio.gather(*(create(obj) for obj in objects))


async def seed_kubernetes(kube: KubeSimProcess, objects: Sequence[dict[str, Any]]) -> None:
    """The CRDs and manifest namespace as the service installs them, then the namespaces,
    then the objects in them; workloads last, which keeps kubesim's controllers (each pass
    reads every workload and pod) idle while the rest is posted."""
    backend = KubeDeployments.from_kubeconfig(kube.kubeconfig)
    await backend.install(crds())
    backend.close()
    workloads = ("Deployment", "StatefulSet")
    await post_all(kube.url, [o for o in objects if o["kind"] == "Namespace"])
    await post_all(kube.url, [o for o in objects if o["kind"] not in ("Namespace", *workloads)])
    await post_all(kube.url, [o for o in objects if o["kind"] in workloads])


def pages(api: Any, path: str, selector: str = "") -> Iterator[dict[str, Any]]:
    """The pages of one LIST, as JSON."""
    token = ""
    while True:
        query: list[tuple[str, Any]] = [("limit", 500)]
        if selector:
            query.append(("labelSelector", selector))
        if token:
            query.append(("continue", token))
        request = api.param_serialize(
            "GET",
            path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        page: dict[str, Any] = json.loads(api.call_api(*request).read())
        yield page
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return


def resource_version(api: Any) -> int:
    """The cluster's resourceVersion now: it moves with every write."""
    page = next(pages(api, "/api/v1/namespaces", "bench.recovery/none=x"))
    return int(page["metadata"]["resourceVersion"])


def settled(api: Any, leases: int, timeout_s: float) -> int:
    """Wait for the controllers (a pod per lease, then three seconds without a write); how
    many Deployments are available."""
    deadline, last, quiet = time.monotonic() + timeout_s, -1, 0
    while quiet < 3:
        if time.monotonic() > deadline:
            sys.exit(f"kubesim still busy after {timeout_s} s")
        page = next(pages(api, "/api/v1/pods"))
        count = len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)
        version = int(page["metadata"]["resourceVersion"])
        quiet = quiet + 1 if version == last and count >= leases else 0
        last = version
        time.sleep(1.0)
    return sum(
        1
        for page in pages(api, "/apis/apps/v1/deployments", SELECTOR)
        for d in page["items"]
        if (d.get("status") or {}).get("availableReplicas") == d["spec"]["replicas"]
    )


# -- measuring ---------------------------------------------------------------------------
def list_everything(api: Any) -> float:
    started = time.monotonic()
    for path in BASELINE:
        for _ in pages(api, path, "" if path.endswith("/pods") else SELECTOR):
            pass
    return time.monotonic() - started


def memory(pid: int | None) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process, in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB$", status, re.M))
    return int(found["VmRSS"]) / 1024, int(found["VmHWM"]) / 1024


def recovered(cluster: ClusterProcess) -> dict[str, int]:
    """What the service's recovery did, lease by lease (its metric)."""
    with urllib.request.urlopen(f"{cluster.health_url}/metrics", timeout=10) as reply:  # noqa: S310
        text = reply.read().decode()
    pattern = r'^provider_deployment_recovered_total\{result="(\w+)"\} (\S+)$'
    return {m[1]: int(float(m[2])) for m in re.finditer(pattern, text, re.M)}


def all_deployed(client: redis.Redis, leases: int) -> bool:
    """Whether every lease record is deployed at its manifest version."""
    for start in range(0, leases, BATCH):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(start + BATCH, leases)):
            pipe.get(lease_key(lease(i)))
        for raw in pipe.execute():
            record = json.loads(raw) if raw else {}
            if record.get("state") != "deployed" or record.get("applied") != record["version"]:
                return False
    return True


def latest_status(client: redis.Redis, service: str) -> dict[str, Any] | None:
    """The payload of ``service``'s latest retained status (None: none yet)."""
    entries: Any = client.xrevrange(status_stream(service), count=1)
    return dict(json.loads(entries[0][1][b"payload"])) if entries else None


def counted(client: redis.Redis, service: str, field: str, leases: int) -> Callable[[], str]:
    """What ``service``'s status says once its ``field`` counts the leases ("": not yet)."""

    def shown() -> str:
        status = latest_status(client, service) or {}
        return f"its status: {field}={leases}" if status.get(field) == leases else ""

    return shown


def public_status(gateway: GatewayProcess) -> dict[str, Any]:
    """The gateway's ``GET /status`` ({} while it cannot answer)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # its certificate is self-signed, not on chain
    try:
        with urllib.request.urlopen(f"{gateway.url}/status", context=context, timeout=10) as reply:  # noqa: S310
            return dict(json.loads(reply.read()))
    except (OSError, ValueError):
        return {}


def bring_up(process: RuntimeProcess, shown: Callable[[], str], timeout_s: float = 600) -> str:
    """Start ``process``; once it is ready and ``shown()`` tells what it holds, that and
    how long it took."""
    began = time.monotonic()
    process.start(timeout=timeout_s)
    while not (seen := shown()):
        if time.monotonic() - began > timeout_s:
            sys.exit(f"{process.name} did not show its state in {timeout_s} s: {process.log()}")
        time.sleep(0.1)
    return f"{process.name} ready in {time.monotonic() - began:.1f} s, {seen}"


async def restart_once(
    client: redis.Redis, api: Any, cluster: ClusterProcess, leases: int
) -> float:
    """Kill the service and start it again; the seconds until it is ready with every lease
    deployed, what it did and when, from its log."""
    # a restart meets a cluster at rest: the baseline's lists and the last start's listing
    # leave kubesim (one Python process holding every object) collecting garbage a while
    await asyncio.sleep(REST_S)
    before = resource_version(api)
    cluster.kill()
    load = os.getloadavg()[0]  # the machine may be shared: say how busy it was
    spawned, restart = time.time(), time.monotonic()
    cluster.start(timeout=600)
    ready_s = seconds = time.monotonic() - restart
    while not all_deployed(client, leases):
        if time.monotonic() - restart > 1800:
            sys.exit("not every lease deployed again within 1800 s")
        await asyncio.sleep(0.2)
        seconds = time.monotonic() - restart
    counts = recovered(cluster)
    writes = resource_version(api) - before
    while (latest_status(client, "cluster") or {}).get("leases") != leases:
        await asyncio.sleep(0.2)
    print(
        f"recovery of {leases} leases: {seconds:.2f} s (ready after {ready_s:.2f} s); "
        + ", ".join(f"{count} {what}" for what, count in counts.items())
        + f"; {writes} Kubernetes writes meanwhile; load average {load:.2f} at the restart"
    )
    print("  " + "; ".join(f"{at:.2f} s {what}" for at, what in phases(cluster, spawned)))
    return seconds


def phases(cluster: ClusterProcess, spawned: float) -> list[tuple[float, str]]:
    """When the service, started at ``spawned`` (epoch seconds), logged the steps of its
    start (from its JSON log lines)."""
    steps = []
    for line in cluster.log().splitlines():
        try:
            entry = json.loads(line)
            at = dt.datetime.fromisoformat(entry["timestamp"]).timestamp() - spawned
        except (ValueError, KeyError, TypeError):
            continue
        event = str(entry.get("event", ""))
        if at >= 0 and event.startswith(
            ("recovering ", "recovered ", "cluster service ready", "waiting for")
        ):
            steps.append((at, event.split(";", maxsplit=1)[0].split(",", maxsplit=1)[0]))
    return steps


async def measure_cluster(
    url: str,
    kube: KubeSimProcess,
    cluster: ClusterProcess,
    leases: int,
    period: float,
    *,
    restarts: int,
) -> float:
    """Seed, start, then kill and restart the cluster service ``restarts`` times (left
    running); the median recovery's seconds."""
    client = redis.Redis.from_url(url)
    api = kubernetes.config.new_client_from_config(str(kube.kubeconfig))  # type: ignore[no-untyped-call]
    try:
        started = time.monotonic()
        seeded = deployed_leases(leases)
        settings = ClusterSettings()  # the service's, with the bench's environment
        build, levels = build_settings(settings), commit_levels(settings)
        objects = [
            obj
            for record, reservation in seeded
            for obj in desired_objects(
                record, scheduler_params(record.group, reservation.allocated), build, levels
            )
        ]
        seed_redis(url, seeded, period)
        redis_s = time.monotonic() - started
        await seed_kubernetes(kube, objects)
        posted = time.monotonic()
        available = settled(api, leases, timeout_s=1800)
        print(
            f"seeded {leases} leases: Redis {redis_s:.1f} s; {len(objects)} objects posted to "
            f"kubesim {posted - started - redis_s:.1f} s, its controllers settled "
            f"{time.monotonic() - posted:.1f} s later ({available}/{leases} Deployments "
            "available)"
        )
        del objects, seeded
        cluster.start(timeout=600)
        first = recovered(cluster)
        print(f"first start on the seeded state: {first}")
        if first.get("unchanged") != leases:
            sys.exit("the seeded leases are not what the service would apply")
        baseline = min(list_everything(api) for _ in range(2))
        timings = [await restart_once(client, api, cluster, leases) for _ in range(restarts)]
        seconds = statistics.median(timings)
        print(
            f"baseline (one LIST per kind of {len(BASELINE)}, pages of 500): {baseline:.2f} s; "
            f"recovery/baseline {seconds / baseline:.2f}"
            + (f" (the median of {restarts} restarts)" if restarts > 1 else "")
        )
        return seconds
    finally:
        api.close()
        client.close()


def measure_services(
    url: str,
    work: Path,
    kube: KubeSimProcess,
    leases: int,
    running: list[ServiceProcess],
) -> dict[str, tuple[float, float]]:
    """Seed the bid engine's, the manifest service's and the balance service's state for the
    leases, start them and the gateway one after another (left running, in ``running``);
    each one's (VmRSS, VmHWM) once it is ready and shows the leases."""
    began = time.monotonic()
    bid = BidSettings(bid_price_cpu_scale=CPU_SCALE)  # the service's, with this environment
    price = seed_bidengine(url, leases, bid)
    seed_manifest(url, leases)
    seed_balance(url, leases, price, BalanceSettings())
    print(
        f"seeded the bid engine's, manifest service's and balance service's state for {leases} "
        f"leases: {time.monotonic() - began:.1f} s"
    )
    devnet = DevnetProcess(work / "devnet", block_time="1s")
    running.append(devnet)
    devnet.start(timeout=120)
    common = {"AP_PROVIDER_ADDRESS": PROVIDER, "AP_LOG_LEVEL": "warning"}
    client = redis.Redis.from_url(url)
    bidengine = BidEngineProcess(
        redis_url=url,
        api=devnet.lcd_url,
        log_path=work / "bidengine.log",
        extra_env={
            **common,
            "AP_BID_PRICE_CPU_SCALE": CPU_SCALE,
            "AP_BIDENGINE_STATUS_INTERVAL": "5s",
        },
    )
    manifest = ManifestProcess(
        redis_url=url,
        api=devnet.lcd_url,
        log_path=work / "manifest.log",
        extra_env={**common, "AP_MANIFEST_STATUS_INTERVAL": "5s"},
    )
    balance = BalanceProcess(
        redis_url=url,
        api=devnet.lcd_url,
        node=devnet.rpc_url,
        log_path=work / "balance.log",
        extra_env={**common, "AP_BALANCE_STATUS_INTERVAL": "5s"},
    )
    gateway = GatewayProcess(
        redis_url=url,
        api=devnet.lcd_url,
        tls_dir=work / "gateway-tls",
        log_path=work / "gateway.log",
        extra_env={
            **common,
            "AP_CLUSTER_BACKEND": "kube",  # as the suite runs it: lease logs, events, shell
            "AP_KUBECONFIG": str(kube.kubeconfig.resolve()),
            "AP_GATEWAY_CERT_SYNC_INTERVAL": "2s",  # the defaults, not the tests' 200 ms
            "AP_GATEWAY_CERT_CACHE_TTL": "5s",
        },
    )

    def bids() -> str:
        status = latest_status(client, "bidengine")
        return "" if status is None else f"its status: orders={status['orders']} in play"

    def statuses() -> str:
        found = public_status(gateway)
        cluster, deployments = found.get("cluster") or {}, found.get("manifest") or {}
        if cluster.get("leases") != leases or deployments.get("deployments") != leases:
            return ""
        return f"/status: cluster leases={leases}, manifest deployments={leases}"

    made = gateway.cert("generate")
    if made.returncode != 0:
        sys.exit(f"gateway cert generate: {made.stdout}{made.stderr}")
    found: dict[str, tuple[float, float]] = {}
    try:
        for process, shown in (
            (bidengine, bids),
            (manifest, counted(client, "manifest", "deployments", leases)),
            (balance, counted(client, "balance", "leases", leases)),
            (gateway, statuses),
        ):
            running.append(process)
            print(bring_up(process, shown))
            found[process.name] = memory(process.pid)
    finally:
        client.close()
    return found


async def measure(
    server: EmbeddedRedis, work: Path, leases: int, period: float, restarts: int
) -> str:
    nodes = work / "nodes.yaml"
    nodes.write_text(NODES)
    kube = KubeSimProcess(work / "kubesim", None, "--nodes", str(nodes))
    kube.start(timeout=60)
    env = {
        "AP_CLUSTER_BACKEND": "kube",
        "AP_KUBECONFIG": str(kube.kubeconfig.resolve()),
        "AP_LOG_LEVEL": "info",  # the steps of its start, with their times
        "AP_CLUSTER_STATUS_INTERVAL": "5s",
        "AP_MONITOR_HEALTHCHECK_PERIOD": f"{period:g}s",
        "AP_MONITOR_HEALTHCHECK_PERIOD_JITTER": f"{period:g}s",
    }
    inventory = OperatorProcess(
        "inventory",
        redis_url=server.url,
        log_path=work / "inventory.log",
        kubeconfig=kube.kubeconfig.resolve(),
        # its Lease renewed once an hour, not every 2 s: kubesim at rest is what tells the
        # seeding is over (a quiet resourceVersion), and a renewal is a write
        env={
            "AP_LOG_LEVEL": "warning",
            "AP_LEADER_ELECTION_LEASE_DURATION": "3h",
            "AP_LEADER_ELECTION_RENEW_INTERVAL": "1h",
        },
    )
    inventory.start(wait_ready=False)  # the cluster's start awaits its first inventory
    cluster = ClusterProcess(redis_url=server.url, log_path=work / "cluster.log", extra_env=env)
    running: list[ServiceProcess] = [kube, inventory, cluster]
    try:
        seconds = await measure_cluster(
            server.url, kube, cluster, leases, period, restarts=restarts
        )
        rss = {"cluster": memory(cluster.pid)}
        rss |= measure_services(server.url, work, kube, leases, running)
        rss["kubesim"] = memory(kube.pid)
        rss["redis"] = memory(server.process.pid if server.process else None)
        for name, (now, peak) in rss.items():
            print(f"rss {name}: {now:.0f} MB (peak {peak:.0f} MB)")
        most = max(SERVICES, key=lambda name: rss[name][0])
        print(f"max rss: {most}, {rss[most][0]:.0f} MB (of the {len(SERVICES)} provider services)")
        return f"recovery leases={leases} seconds={seconds:.2f} max_rss_mb={rss[most][0]:.0f}"
    finally:
        for process in reversed(running):
            process.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leases", type=int, default=10_000, help="leases held and recovered")
    parser.add_argument(
        "--check-period", type=float, default=600.0, help="health-check period (seconds)"
    )
    parser.add_argument(
        "--restarts", type=int, default=3, help="restarts measured (the median is reported)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis() as server:
        line = asyncio.run(
            measure(server, Path(tmp), args.leases, args.check_period, max(args.restarts, 1))
        )
    print(line)


if __name__ == "__main__":
    main()
