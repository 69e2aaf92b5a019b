"""Recovery of the cluster service as a process: Redis, kubesim over HTTP, SIGKILL, and the
inventory operator the cluster takes its inventory from.

At start the service compares every deployed lease's objects with what Kubernetes holds
and deploys again only the leases whose objects changed or went missing while it was
down; a lease whose objects all match is ready without a write. The service runs with
static ingress hosts, so each lease also holds its generated hostname.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api, CustomObjectsApi

from akbus import Bus
from akcluster.testing import ClusterProcess
from akoperators.testing import OperatorProcess
from akservice.testing import eventually
from aktypes.events import ManifestReceived
from aktypes.events.streams import MANIFEST_EVENTS
from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host
from aktypes.namespace import lease_namespace
from aktypes.sdl import parse_sdl
from aktypes.testing import address

SDL = """
version: "2.0"
services:
  web:
    image: nginx:1.27
    expose:
      - port: 80
        as: 80
        accept: [HOST]
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
DOMAIN = "ingress.example.net"
LEASES = [LeaseID.parse(f"{address(21)}/{dseq}/1/1/{address(22)}") for dseq in (31, 32, 33, 34)]


@pytest.fixture
def inventory(
    redis_url: str, kubesim_kubeconfig: Path, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The inventory operator, started and left to come up beside the cluster, whose
    readiness waits for its first inventory."""
    process = OperatorProcess(
        "inventory",
        redis_url=redis_url,
        log_path=tmp_path / "inventory.log",
        kubeconfig=kubesim_kubeconfig,
    )
    process.start(wait_ready=False)
    yield process
    process.stop()


@pytest.fixture
def cluster(
    redis_url: str, kubesim_kubeconfig: Path, tmp_path: Path, inventory: OperatorProcess
) -> Iterator[ClusterProcess]:
    process = ClusterProcess(
        redis_url=redis_url,
        log_path=tmp_path / "cluster.log",
        extra_env={
            "AP_CLUSTER_BACKEND": "kube",
            "AP_KUBECONFIG": str(kubesim_kubeconfig),
            "AP_DEPLOYMENT_INGRESS_STATIC_HOSTS": "true",
            "AP_DEPLOYMENT_INGRESS_DOMAIN": DOMAIN,
        },
    )
    yield process
    process.stop()


@pytest.fixture
def api(kubesim_kubeconfig: Path) -> Iterator[ApiClient]:
    client: ApiClient = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubesim_kubeconfig)
    )
    yield client
    client.close()  # type: ignore[no-untyped-call]


async def deployed(bus: Bus, lease: LeaseID) -> bool:
    raw = await bus.backend.get(f"akcluster:lease:{lease}")
    record = json.loads(raw) if raw else {}
    return record.get("state") == "deployed" and record.get("applied") == record.get("version")


def metric(process: ClusterProcess, name: str, labels: str) -> float:
    with urllib.request.urlopen(f"{process.health_url}/metrics", timeout=5) as reply:  # noqa: S310 - ours
        text = reply.read().decode()
    found = re.search(rf"^{name}\{{{labels}\}} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


async def web(api: ApiClient, lease: LeaseID) -> dict[str, Any] | None:
    """The lease's Deployment ``web`` as the server holds it (None: there is none)."""
    apps = AppsV1Api(api)
    try:
        response = await asyncio.to_thread(
            apps.read_namespaced_deployment, "web", lease_namespace(lease), _preload_content=False
        )
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    body: dict[str, Any] = json.loads(response.data)
    return body


def hostname(lease: LeaseID) -> str:
    return f"web-{lease.dseq}.example.com"


def hosts_of(leases: list[LeaseID]) -> set[str]:
    """The accepted and the generated hostname of each lease."""
    return {h for lease in leases for h in (hostname(lease), ingress_host(lease, "web", DOMAIN))}


def provider_hosts(api: ApiClient) -> set[str]:
    found = CustomObjectsApi(api).list_namespaced_custom_object(
        "akash.network", "v2beta2", "lease", "providerhosts"
    )
    return {item["metadata"]["name"] for item in found["items"]}


async def test_objects_changed_or_deleted_while_down_are_repaired_and_only_those(
    bus: Bus, cluster: ClusterProcess, api: ApiClient
) -> None:
    cluster.start(timeout=60)
    manifests = []
    for lease in LEASES:
        sdl = parse_sdl(SDL.replace("HOST", hostname(lease)))
        group, version = sdl.manifest.groups[0], sdl.manifest.version_hex()
        manifests.append(ManifestReceived(lease_id=lease, version=version, group=group))
    await bus.publish_many(MANIFEST_EVENTS, manifests)
    for lease in LEASES:
        await eventually(lambda lease=lease: deployed(bus, lease), what=f"{lease} deployed")
    assert provider_hosts(api) == hosts_of(LEASES)
    cluster.kill()
    missing, changed, unhosted, untouched = LEASES
    await asyncio.to_thread(
        CustomObjectsApi(api).delete_namespaced_custom_object,
        "akash.network",
        "v2beta2",
        "lease",
        "providerhosts",
        hostname(unhosted),
    )
    await asyncio.to_thread(
        AppsV1Api(api).delete_namespaced_deployment, "web", lease_namespace(missing)
    )
    await asyncio.to_thread(
        AppsV1Api(api).patch_namespaced_deployment,
        "web",
        lease_namespace(changed),
        {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "evil:1"}]}}}},
    )
    await asyncio.to_thread(  # not the lease's: nothing to compare, nothing to remove
        CoreV1Api(api).create_namespaced_service,
        lease_namespace(untouched),
        {
            "metadata": {"name": "other"},
            "spec": {"selector": {"app": "x"}, "ports": [{"port": 81}]},
        },
    )
    cluster.start(timeout=60)

    async def repaired() -> bool:
        found = [await web(api, lease) for lease in (missing, changed)]
        return all(
            d is not None
            and d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
            for d in found
        )

    await eventually(repaired, what="the missing and the changed Deployment as the lease has them")
    for lease in LEASES:
        await eventually(lambda lease=lease: deployed(bus, lease), what=f"{lease} deployed")
    assert provider_hosts(api) == hosts_of(LEASES)
    recovered = "provider_deployment_recovered_total"
    assert metric(cluster, recovered, 'result="reapplied"') == 3.0
    assert metric(cluster, recovered, 'result="unchanged"') == 1.0
    deploys = 'action="deploy",result="success"'
    assert metric(cluster, "provider_deployment_total", deploys) == 3.0  # not the untouched
    services = await asyncio.to_thread(
        CoreV1Api(api).list_namespaced_service, lease_namespace(untouched)
    )
    assert sorted(s.metadata.name for s in services.items) == ["other", "web"]
