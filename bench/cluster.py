"""Cluster deployments on kubesim: manifest → pods Running, and recovery after a restart.

One Redis (started here), kubesim (``python -m kubesim serve``) with nodes big enough for
every lease, and the cluster service as a real subprocess (``kube`` backend) with the
inventory operator it takes its inventory from. The load is
``ManifestReceived`` events published on ``akash.provider.manifest.events``, as the
manifest service publishes them once it accepts a manifest: no chain is involved.

1. **Deploy**: the first group of each of ``--sdls`` corpus SDLs (the e2e tests' shapes)
   as one lease each, all at once; a lease's latency is from its ``ManifestReceived`` to
   every one of its services available (``GetLeaseStatus``, as the gateway asks).
2. **Recovery**: ``--leases`` small leases deployed, then the cluster service SIGKILLed and
   started again; recovery time is from the restart to the process ready with every lease
   deployed (records in Redis), including the process's own start (imports, the inventory
   operator's latest inventory). Recovery compares each lease's objects with the cluster's and deploys
   again only what drifted, so here (nothing drifted) no lease is re-applied;
   ``bench/recovery.py`` does the same at 10,000 leases. The baseline, measured on the same kubesim right before the restart, is
   what any recovery must at least do: read back every object the leases hold, with one
   LIST per kind across all namespaces (the cheapest complete read with the raw client).

With ``--backend null`` there is no kubesim: the cluster's own cost of recovering (records,
work queue, guarded writes) without Kubernetes' latency; the baseline is then reading every
lease record back in one pipelined round trip with redis-py.

The last line is::

    cluster deploy_p50_s=<x> deploy_p99_s=<y> recovery_s=<z> leases=<n> backend=<b> baseline_s=<w> ratio=<z/w>

    uv run python bench/cluster.py [--sdls 20] [--leases 1000] [--backend kube|null]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import kubernetes
import redis

from akbus import Bus, RedisSettings
from akbus.embedded import EmbeddedRedis
from akbus.testing import FAST_SETTINGS
from akcluster.testing import TINY_SDL as TINY
from akcluster.testing import ClusterProcess
from akoperators.testing import OperatorProcess
from aktypes.events import GetLeaseStatus, LeaseQueryFailed, LeaseStatusReport, ManifestReceived
from aktypes.events.streams import CLUSTER_COMMANDS, MANIFEST_EVENTS
from aktypes.ids import LeaseID
from aktypes.sdl import parse_sdl
from aktypes.testing import address
from kubesim.testing import KubeSimProcess

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
SHAPES = [
    "ghost.yaml", "big-dipper.yaml", "budibase.yaml", "vaultwarden.yaml", "metabase.yaml",
    "kawpow-pool-ravencoin.yaml", "softether-vpn.yaml", "vaultwarden.yaml", "CodiMD.yaml", "snake-game.yaml",
    "matomo.yaml", "jitsi-meet.yaml", "micro-services-example.yaml", "AI-Image-App.yaml",
    "flan-t5-xxl.yaml", "ollama-gpu.yaml", "discourse.yaml", "anubis.yaml", "odoo.yaml",
    "tensorflow-webapp-mnist.yaml",
]  # fmt: skip
NODES = """
nodes:
  - {name: big-a, cpu: "512", memory: 2Ti, ephemeral-storage: 64Ti, storage-classes: [beta2, beta3]}
  - {name: big-b, cpu: "512", memory: 2Ti, ephemeral-storage: 64Ti, storage-classes: [beta2, beta3]}
  - name: gpu-a
    cpu: "128"
    memory: 1Ti
    ephemeral-storage: 16Ti
    storage-classes: [beta2, beta3]
    gpus: {vendor: nvidia, model: a100, count: 64, memory: 80Gi, interface: sxm}
"""
OWNER, PROVIDER = address(11), address(12)
KINDS = ("namespaces", "deployments", "statefulsets", "services", "networkpolicies", "pods")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def lease(dseq: int) -> LeaseID:
    return LeaseID.parse(f"{OWNER}/{dseq}/1/1/{PROVIDER}")


async def available(bus: Bus, lease_id: LeaseID) -> bool:
    reply = await bus.request(
        CLUSTER_COMMANDS,
        GetLeaseStatus(lease_id=lease_id),
        (LeaseStatusReport, LeaseQueryFailed),
        timeout_s=30,
    )
    return (
        isinstance(reply, LeaseStatusReport)
        and bool(reply.services)
        and all(s.available >= s.total > 0 for s in reply.services.values())
    )


async def deploy_latencies(bus: Bus, names: list[str]) -> list[float]:
    started: dict[LeaseID, float] = {}
    done: dict[LeaseID, float] = {}
    for i, name in enumerate(names):
        parsed = parse_sdl((CORPUS / name).read_text())
        lease_id = lease(1000 + i)
        event = ManifestReceived(
            lease_id=lease_id,
            version=parsed.manifest.version_hex(),
            group=parsed.manifest.groups[0],
        )
        started[lease_id] = time.monotonic()
        await bus.publish(MANIFEST_EVENTS, event)
    deadline = time.monotonic() + 300
    while len(done) < len(started) and time.monotonic() < deadline:
        for lease_id in [x for x in started if x not in done]:
            if await available(bus, lease_id):
                done[lease_id] = time.monotonic()
        await asyncio.sleep(0.05)
    missing = [str(x) for x in started if x not in done]
    if missing:
        sys.exit(f"not available within 300 s: {missing}")
    return [done[x] - started[x] for x in started]


async def deployed_count(bus: Bus, leases: list[LeaseID]) -> int:
    raws = await asyncio.gather(*(bus.backend.get(f"akcluster:lease:{x}") for x in leases))
    count = 0
    for raw in raws:
        record = json.loads(raw) if raw else None
        if record and record["state"] == "deployed" and record["applied"] == record["version"]:
            count += 1
    return count


async def wait_deployed(bus: Bus, leases: list[LeaseID], timeout_s: float) -> float:
    started = time.monotonic()
    while await deployed_count(bus, leases) < len(leases):
        if time.monotonic() - started > timeout_s:
            sys.exit(f"{len(leases)} leases not all deployed within {timeout_s} s")
        await asyncio.sleep(0.2)
    return time.monotonic() - started


def list_everything(kubeconfig: Path) -> float:
    client = kubernetes.config.new_client_from_config(str(kubeconfig))
    core, apps = kubernetes.client.CoreV1Api(client), kubernetes.client.AppsV1Api(client)
    net = kubernetes.client.NetworkingV1Api(client)
    custom = kubernetes.client.CustomObjectsApi(client)
    started = time.monotonic()
    core.list_namespace(label_selector="akash.network=true")
    apps.list_deployment_for_all_namespaces()
    apps.list_stateful_set_for_all_namespaces()
    core.list_service_for_all_namespaces()
    net.list_network_policy_for_all_namespaces()
    core.list_pod_for_all_namespaces()
    custom.list_namespaced_custom_object("akash.network", "v2beta2", "lease", "manifests")
    return time.monotonic() - started


def read_records(url: str, leases: list[LeaseID]) -> float:
    client = redis.Redis.from_url(url)
    started = time.monotonic()
    pipe = client.pipeline(transaction=False)
    for lease_id in leases:
        pipe.get(f"akcluster:lease:{lease_id}")
    pipe.execute()
    return time.monotonic() - started


async def measure(url: str, work: Path, sdls: int, leases: int, backend: str) -> str:
    nodes = work / "nodes.yaml"
    nodes.write_text(NODES)
    kube: KubeSimProcess | None = None
    inventory: OperatorProcess | None = None
    env = {"AP_MONITOR_HEALTHCHECK_PERIOD": "60s", "AP_LOG_LEVEL": "warning"}
    if backend == "kube":
        kube = KubeSimProcess(work / "kubesim", None, "--nodes", str(nodes))
        kube.start(timeout=60)
        env |= {"AP_CLUSTER_BACKEND": "kube", "AP_KUBECONFIG": str(kube.kubeconfig.resolve())}
        inventory = OperatorProcess(
            "inventory",
            redis_url=url,
            log_path=work / "inventory.log",
            kubeconfig=kube.kubeconfig.resolve(),
            env={"AP_INVENTORY_STORAGE": "beta2=64Ti,beta3=64Ti", "AP_LOG_LEVEL": "warning"},
        )
        inventory.start(wait_ready=False)  # the cluster's start awaits its first inventory
    else:
        env |= {"AP_CLUSTER_BACKEND": "null", "AP_CLUSTER_INVENTORY_FILE": str(nodes)}
    cluster = ClusterProcess(redis_url=url, log_path=work / "cluster.log", extra_env=env)
    cluster.start(timeout=60)
    bus = Bus.connect(RedisSettings(url=url), producer="bench", settings=FAST_SETTINGS)
    try:
        latencies = await deploy_latencies(bus, SHAPES[:sdls]) if sdls else []
        if latencies:
            print(
                f"deploy: {len(latencies)} leases, manifest → available "
                f"p50 {percentile(latencies, 0.5):.2f} s, p99 {percentile(latencies, 0.99):.2f} s"
            )
        group = parse_sdl(TINY).manifest.groups[0]
        version = parse_sdl(TINY).manifest.version_hex()
        many = [lease(10_000 + i) for i in range(leases)]
        await bus.publish_many(
            MANIFEST_EVENTS,
            [ManifestReceived(lease_id=x, version=version, group=group) for x in many],
        )
        first = await wait_deployed(bus, many, timeout_s=1800)
        print(f"first deploy of {leases} leases: {first:.1f} s ({leases / first:.0f} leases/s)")
        if kube is not None:
            baseline = min(list_everything(kube.kubeconfig) for _ in range(3))
        else:
            baseline = min(read_records(url, many) for _ in range(3))
        cluster.kill()
        restart = time.monotonic()
        cluster.start(timeout=300)
        started_s = time.monotonic() - restart
        await wait_deployed(bus, many, timeout_s=1800)
        recovery = time.monotonic() - restart
        print(
            f"recovery of {leases} leases: {recovery:.1f} s (process ready after "
            f"{started_s:.1f} s); baseline ({'one LIST per kind' if kube else 'records read, pipelined'}):"
            f" {baseline:.3f} s"
        )
        return (
            f"cluster deploy_p50_s={percentile(latencies, 0.5):.2f} "
            f"deploy_p99_s={percentile(latencies, 0.99):.2f} recovery_s={recovery:.1f} "
            f"leases={leases} backend={backend} baseline_s={baseline:.3f} "
            f"ratio={recovery / baseline:.1f}"
        )
    finally:
        await bus.close()
        cluster.stop()
        if inventory is not None:
            inventory.stop()
        if kube is not None:
            kube.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdls", type=int, default=20, help="corpus SDLs deployed at once")
    parser.add_argument("--leases", type=int, default=1000, help="leases recovered")
    parser.add_argument("--backend", choices=("kube", "null"), default="kube")
    args = parser.parse_args()
    sdls = args.sdls if args.backend == "kube" else 0
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis() as server:
        line = asyncio.run(measure(server.url, Path(tmp), sdls, args.leases, args.backend))
    print(line)


if __name__ == "__main__":
    main()
