"""Recovery of the cluster service at scale: ``--leases`` leases (10,000 by default) held in
Kubernetes (kubesim) and in Redis, the cluster service SIGKILLed and started again.

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
monitor's steady work.

**RSS**: VmRSS (and the peak, VmHWM) of the cluster service once it has published its
status after the restart (its reservations loaded), and of kubesim and Redis, which are not
the provider's; ``max_rss_mb`` is the cluster service's, the one service this runs.

**Baseline**, on the same kubesim right before the kill: what any recovery must at least
read — every object the leases hold, and the pods the inventory counts — with one LIST per
kind across all namespaces (pages of 500, label-selected as the service selects them, the
JSON not turned into models), through the official client.

The last line is::

    recovery leases=<n> seconds=<s> max_rss_mb=<m>

    uv run python bench/recovery.py [--leases 10000] [--check-period 600]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes
import redis

from akbus.embedded import EmbeddedRedis
from akcluster.adapters.kube_deploy import KubeDeployments
from akcluster.adapters.kube_rules import created, fingerprint
from akcluster.adapters.null import parse_inventory
from akcluster.deployments import desired_objects
from akcluster.domain.leases import LEASES_KEY, WORK_KEY, LeaseRecord, lease_key
from akcluster.domain.ledger import Ledger, Reservation
from akcluster.domain.objects import crds, scheduler_params
from akcluster.domain.placement import NoFit, place
from akcluster.handlers import RESERVATIONS_KEY, VERSION_KEY
from akcluster.service import build_settings, commit_levels
from akcluster.settings import ClusterSettings
from akcluster.testing import ClusterProcess
from aktypes.events.streams import status_stream
from aktypes.ids import LeaseID
from aktypes.sdl import parse_sdl
from aktypes.testing import address
from kubesim.testing import KubeSimProcess

TINY = """
version: "2.0"
services:
  web:
    image: nginx:1.27
    expose:
      - port: 80
        to:
          - global: true
profiles:
  compute:
    web:
      resources: {cpu: {units: 0.1}, memory: {size: 64Mi}, storage: {size: 64Mi}}
  placement:
    dc:
      pricing:
        web: {denom: uakt, amount: 100}
deployment:
  web:
    dc: {profile: web, count: 1}
"""
NODES = """
nodes:
  - {name: big-a, cpu: "2048", memory: 8Ti, ephemeral-storage: 64Ti, pods: 20000}
  - {name: big-b, cpu: "2048", memory: 8Ti, ephemeral-storage: 64Ti, pods: 20000}
"""
OWNER, PROVIDER = address(11), address(12)
FIRST_DSEQ = 100_000
BATCH = 500  # Redis commands per pipeline
CONCURRENCY = 16  # requests in flight to kubesim while seeding
PLURALS = {"Ingress": "ingresses", "NetworkPolicy": "networkpolicies"}
SELECTOR = "akash.network=true"
BASELINE = (  # what the leases hold, and the pods the inventory lists
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
def deployed_leases(leases: int) -> list[tuple[LeaseRecord, Reservation]]:
    """Each lease as the service leaves it deployed: its record, its active reservation."""
    sdl = parse_sdl(TINY)
    group, spec, version = sdl.manifest.groups[0], sdl.groups[0], sdl.manifest.version_hex()
    placed = place(spec, Ledger().free(parse_inventory(NODES), node_ports=0, ips=0))
    if isinstance(placed, NoFit):
        sys.exit(f"the lease does not fit the nodes: {placed.reasons}")
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


def status_leases(client: redis.Redis) -> int:
    """The lease count of the service's latest retained status (-1: none yet)."""
    entries = client.xrevrange(status_stream("cluster"), count=1)
    return int(json.loads(entries[0][1][b"payload"])["leases"]) if entries else -1


async def measure(server: EmbeddedRedis, work: Path, leases: int, period: float) -> str:
    nodes = work / "nodes.yaml"
    nodes.write_text(NODES)
    kube = KubeSimProcess(work / "kubesim", None, "--nodes", str(nodes))
    kube.start(timeout=60)
    env = {
        "AP_CLUSTER_BACKEND": "kube",
        "AP_KUBECONFIG": str(kube.kubeconfig.resolve()),
        "AP_LOG_LEVEL": "warning",
        "AP_CLUSTER_STATUS_INTERVAL": "5s",
        "AP_MONITOR_HEALTHCHECK_PERIOD": f"{period:g}s",
        "AP_MONITOR_HEALTHCHECK_PERIOD_JITTER": f"{period:g}s",
    }
    cluster = ClusterProcess(redis_url=server.url, log_path=work / "cluster.log", extra_env=env)
    client = redis.Redis.from_url(server.url)
    api = kubernetes.config.new_client_from_config(str(kube.kubeconfig))
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
        seed_redis(server.url, seeded, period)
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
        before = resource_version(api)
        cluster.kill()
        load = os.getloadavg()[0]  # the machine may be shared: say how busy it was
        restart = time.monotonic()
        cluster.start(timeout=600)
        ready_s = seconds = time.monotonic() - restart
        while not all_deployed(client, leases):
            if time.monotonic() - restart > 1800:
                sys.exit("not every lease deployed again within 1800 s")
            await asyncio.sleep(0.2)
            seconds = time.monotonic() - restart
        counts = recovered(cluster)
        writes = resource_version(api) - before
        while status_leases(client) != leases:
            await asyncio.sleep(0.2)
        print(
            f"recovery of {leases} leases: {seconds:.2f} s (ready after {ready_s:.2f} s); "
            + ", ".join(f"{count} {what}" for what, count in counts.items())
            + f"; {writes} Kubernetes writes meanwhile; load average {load:.2f} at the restart"
        )
        print(
            f"baseline (one LIST per kind of {len(BASELINE)}, pages of 500): {baseline:.2f} s; "
            f"recovery/baseline {seconds / baseline:.2f}"
        )
        rss = {
            "cluster": memory(cluster.pid),
            "kubesim": memory(kube.pid),
            "redis": memory(server.process.pid if server.process else None),
        }
        for name, (now, peak) in rss.items():
            print(f"rss {name}: {now:.0f} MB (peak {peak:.0f} MB)")
        return f"recovery leases={leases} seconds={seconds:.2f} max_rss_mb={rss['cluster'][0]:.0f}"
    finally:
        api.close()
        client.close()
        cluster.stop()
        kube.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leases", type=int, default=10_000, help="leases held and recovered")
    parser.add_argument(
        "--check-period", type=float, default=600.0, help="health-check period (seconds)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis() as server:
        line = asyncio.run(measure(server, Path(tmp), args.leases, args.check_period))
    print(line)


if __name__ == "__main__":
    main()
