"""The inventory operator as a real process against kubesim over HTTP and a real Redis.

The simulated cluster's nodes carry only what GPU feature discovery, the device plugin and
NFD would set (``akash-labels: false``): an A100 node, a node whose two T4s are
time-sliced four ways, a node with a card no registry knows, and a CPU node. The tests
drive the cluster as kubectl would (cordon, pods, claims) and read what the operator tells:
``/v1/inventory`` (and its watch stream), the node labels, the bus.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from akbus import Bus, RedisSettings
from akcluster.domain.objects import SchedulerParams
from akcluster.domain.objects.workloads import affinity
from akservice.testing import RuntimeProcess, eventually, eventually_sync, http_status
from aktypes.events import InventoryCluster, InventoryNodes, InventoryStorage
from aktypes.events.envelope import envelope_from_fields
from aktypes.events.streams import INVENTORY_EVENTS
from aktypes.sdl import parse_sdl
from kubesim.cluster import ClusterSpec, GpuSpec, NodeSpec
from kubesim.selectors import match_node_selector_terms
from kubesim.testing import KubeSimProcess

Obj = dict[str, Any]
GiB = 2**30
A100 = "akash.network/capabilities.gpu.vendor.nvidia.model.a100"
T4 = "akash.network/capabilities.gpu.vendor.nvidia.model.t4"
BETA2 = "akash.network/capabilities.storage.class.beta2"
NEW_PRODUCT = "NVIDIA-Z9000-PCIE-48GB"
A100_SERVICE = """
version: "2.0"
services:
  train:
    image: trainer:1
    expose: [{port: 80, to: [{global: true}]}]
    params: {storage: {data: {mount: /data}}}
profiles:
  compute:
    train:
      resources:
        cpu: {units: 1}
        memory: {size: 1Gi}
        storage: [{size: 1Gi}, {name: data, size: 10Gi, attributes: {persistent: true, class: beta2}}]
        gpu:
          units: 1
          attributes: {vendor: {nvidia: [{model: a100, ram: 80Gi, interface: sxm}]}}
  placement:
    dc: {pricing: {train: {denom: uakt, amount: 100}}}
deployment:
  train: {dc: {profile: train, count: 1}}
"""

CLUSTER = ClusterSpec(
    nodes=(
        NodeSpec(
            name="gpu-a100",
            akash_labels=False,
            storage_classes=("beta2",),
            gpus=GpuSpec(model="a100", count=2, memory="80Gi", interface="sxm"),
        ),
        NodeSpec(
            name="gpu-sliced",
            akash_labels=False,
            gpus=GpuSpec(model="t4", product="Tesla-T4", count=2, replicas=4, memory="16Gi"),
        ),
        NodeSpec(
            name="gpu-new",
            akash_labels=False,
            gpus=GpuSpec(model="z9000", product=NEW_PRODUCT, count=1, memory="48Gi"),
        ),
        NodeSpec(name="cpu-1", akash_labels=False, cpu="4", memory="16Gi"),
    )
)


class Operator(RuntimeProcess):
    """``python -m akoperators.inventory`` on the test's cluster and Redis."""

    def __init__(self, workdir: Path, kubeconfig: Path, redis_url: str, **env: str) -> None:
        super().__init__(
            "akoperators.inventory",
            "inventory",
            redis_url=redis_url,
            log_path=workdir / "inventory.log",
            env={
                "AP_KUBECONFIG": str(kubeconfig),
                "AP_INVENTORY_STORAGE": "beta2=1Ti",
                "AP_LEADER_ELECTION_NAMESPACE": "default",  # kubesim: not onboarded
                "AP_LOG_LEVEL": "info",
                **env,
            },
        )

    def inventory(self) -> Obj:
        status, body = http_status(f"{self.health_url}/v1/inventory")
        assert status == 200, body
        assert isinstance(body, dict)
        return body

    def node(self, name: str) -> Obj | None:
        return next((n for n in self.inventory()["nodes"] if n["name"] == name), None)

    def logged(self, text: str) -> list[Obj]:
        lines = [json.loads(line) for line in self.log().splitlines() if line.startswith("{")]
        return [line for line in lines if text in str(line.get("event", ""))]


class Cluster:
    def __init__(self, sim: KubeSimProcess) -> None:
        self.sim = sim
        self.api = config.new_client_from_config(str(sim.kubeconfig))
        self.core = client.CoreV1Api(self.api)

    def node(self, name: str) -> Obj:
        obj: Obj = self.api.sanitize_for_serialization(self.core.read_node(name))
        return obj

    def akash_labels(self, name: str) -> dict[str, str]:
        labels = self.node(name)["metadata"].get("labels") or {}
        return {k: v for k, v in labels.items() if k.startswith("akash.network")}

    def versions(self) -> dict[str, str]:
        return {n.metadata.name: n.metadata.resource_version for n in self.core.list_node().items}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with KubeSimProcess(tmp_path, CLUSTER) as sim:
        made = Cluster(sim)
        try:
            yield made
        finally:
            made.api.close()


@pytest.fixture
def operator(cluster: Cluster, redis_url: str, tmp_path: Path) -> Iterator[Operator]:
    with Operator(tmp_path, cluster.sim.kubeconfig, redis_url) as op:
        yield op


async def bus_payloads(redis_url: str) -> list[Any]:
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
    try:
        entries = await bus.backend.entries(INVENTORY_EVENTS)
        return [envelope_from_fields(e.fields).payload for e in entries]
    finally:
        await bus.close()


async def retained(redis_url: str) -> InventoryCluster | None:
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
    try:
        envelope = await bus.status("inventory")
    finally:
        await bus.close()
    payload = envelope.payload if envelope is not None else None
    return payload if isinstance(payload, InventoryCluster) else None


async def test_a_gfd_labelled_gpu_node_is_offered_and_labelled(
    cluster: Cluster, operator: Operator, redis_url: str
) -> None:
    node = operator.node("gpu-a100")
    assert node is not None
    assert node["gpus"] == [
        {
            "vendor": "nvidia",
            "model": "a100",
            "memory": "80Gi",
            "interface": "sxm",
            "count": 2,
            "physical": 2,
            "replicas": 1,
            "product": "NVIDIA-A100-SXM4-80GB",
            "known": True,
        }
    ]
    assert node["allocatable"] == {
        "cpu": 8000,
        "memory": 32 * GiB,
        "ephemeral": 100 * GiB,
        "gpu": 2,
    }
    assert node["storage_classes"] == ["beta2"]
    wanted = {
        "akash.network": "true",
        BETA2: "1",
        A100: "2",
        f"{A100}.ram.80Gi": "2",
        f"{A100}.interface.sxm": "2",
    }
    labels = eventually_sync(
        lambda: cluster.akash_labels("gpu-a100"), 5, "the A100 node's labels", until=wanted.__eq__
    )
    # what the cluster service's pods of an A100 service with a beta2 volume ask of their
    # node, and kubesim's scheduler places them by: only this node offers it
    [service] = parse_sdl(A100_SERVICE).manifest.groups[0].services or []
    params = SchedulerParams(
        gpu_vendor="nvidia", gpu_model="a100", gpu_ram="80Gi", gpu_interface="sxm"
    )
    required = affinity(service, params)["nodeAffinity"]
    terms = required["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert labels == cluster.akash_labels("gpu-a100")
    assert match_node_selector_terms(terms, cluster.node("gpu-a100"))
    assert not match_node_selector_terms(terms, cluster.node("cpu-1"))
    payloads = await eventually(lambda: bus_payloads(redis_url), 5, "inventory events")
    kinds = [type(p) for p in payloads]
    assert kinds == [InventoryNodes, InventoryStorage, InventoryCluster]
    nodes_event, storage_event, cluster_event = payloads
    assert sorted(n.name for n in nodes_event.changed) == [
        "cpu-1",
        "gpu-a100",
        "gpu-new",
        "gpu-sliced",
    ]
    assert storage_event.storage[0].storage_class == "beta2"
    assert storage_event.storage[0].capacity == 2**40
    assert cluster_event.generation == 1
    assert cluster_event.model_dump(mode="json") == operator.inventory()
    assert await retained(redis_url) == cluster_event


async def test_a_cordoned_node_leaves_the_inventory_and_comes_back(
    cluster: Cluster, operator: Operator, redis_url: str
) -> None:
    assert cluster.akash_labels("cpu-1") == {"akash.network": "true", BETA2: "1"}
    started = time.monotonic()
    cluster.core.patch_node("cpu-1", {"spec": {"unschedulable": True}})
    eventually_sync(lambda: operator.node("cpu-1"), 3, "cpu-1 to leave", until=lambda n: n is None)
    assert {"name": "cpu-1", "reason": "cordoned"} in operator.inventory()["excluded"]
    eventually_sync(
        lambda: cluster.akash_labels("cpu-1"),
        3,
        "cpu-1's labels to go",
        until=lambda got: got == {},
    )
    assert time.monotonic() - started < 3
    payloads = await bus_payloads(redis_url)
    assert any(isinstance(p, InventoryNodes) and p.removed == ["cpu-1"] for p in payloads)
    cluster.core.patch_node("cpu-1", {"spec": {"unschedulable": False}})
    eventually_sync(lambda: operator.node("cpu-1"), 3, "cpu-1 to return")
    eventually_sync(
        lambda: cluster.akash_labels("cpu-1"),
        3,
        "cpu-1's labels to return",
        until={"akash.network": "true", BETA2: "1"}.__eq__,
    )
    assert operator.inventory()["excluded"] == []


def test_a_node_not_ready_leaves_and_changes_after_an_api_outage_arrive(
    operator: Operator, cluster: Cluster
) -> None:
    """The cluster service's inventory is this operator's: a node that is not Ready leaves
    it, and an outage of the API server (every watch dropped, requests answered 503) loses
    nothing that changes once it is over."""
    cluster.sim.faults(node={"name": "cpu-1", "ready": False})
    eventually_sync(lambda: operator.node("cpu-1"), 5, "cpu-1 to leave", until=lambda n: n is None)
    assert {"name": "cpu-1", "reason": "not ready"} in operator.inventory()["excluded"]
    cluster.sim.faults(node={"name": "cpu-1", "ready": True})
    eventually_sync(lambda: operator.node("cpu-1"), 5, "cpu-1 to return")

    cluster.sim.faults(unavailable={"seconds": 2})
    time.sleep(2.5)  # the outage itself, by design
    cluster.core.patch_node("gpu-new", {"spec": {"unschedulable": True}})
    eventually_sync(
        lambda: operator.node("gpu-new"), 15, "gpu-new to leave", until=lambda n: n is None
    )
    assert {n["name"] for n in operator.inventory()["nodes"]} == {"gpu-a100", "gpu-sliced", "cpu-1"}


def test_a_time_sliced_gpu_counts_its_replicas(operator: Operator, cluster: Cluster) -> None:
    node = operator.node("gpu-sliced")
    assert node is not None
    assert node["allocatable"]["gpu"] == 8
    [gpu] = node["gpus"]
    assert (gpu["model"], gpu["memory"], gpu["interface"], gpu["known"]) == (
        "t4",
        "16Gi",
        "pcie",
        True,
    )
    assert (gpu["count"], gpu["physical"], gpu["replicas"]) == (8, 2, 4)
    assert gpu["product"] == "Tesla-T4"  # GFD's "-SHARED" suffix is not part of the name
    labels = eventually_sync(
        lambda: cluster.akash_labels("gpu-sliced"), 5, until=lambda got: T4 in got
    )
    assert labels[T4] == labels[f"{T4}.ram.16Gi"] == labels[f"{T4}.interface.pcie"] == "8"


def test_an_unknown_gpu_is_offered_under_a_derived_name(
    operator: Operator, cluster: Cluster, tmp_path: Path
) -> None:
    inventory = operator.inventory()
    assert inventory["unknown_gpus"] == [NEW_PRODUCT]
    node = operator.node("gpu-new")
    assert node is not None
    [gpu] = node["gpus"]
    assert (gpu["model"], gpu["memory"], gpu["interface"], gpu["known"]) == (
        "z9000",
        "48Gi",
        "pcie",
        False,
    )
    derived = "akash.network/capabilities.gpu.vendor.nvidia.model.z9000"
    eventually_sync(
        lambda: cluster.akash_labels("gpu-new"), 5, until=lambda got: got.get(derived) == "1"
    )
    [warning] = operator.logged("is not in the GPU registry")
    assert warning["level"] == "warning" and NEW_PRODUCT in warning["event"]
    assert "AP_INVENTORY_GPU_REGISTRY" in warning["event"]
    _, metrics = http_status(f"{operator.health_url}/metrics")
    assert f'provider_inventory_operator_unknown_gpus{{product="{NEW_PRODUCT}"}} 1.0' in str(
        metrics
    )

    # the operator names it in a file of its own: no release needed
    extra = tmp_path / "gpus.yaml"
    extra.write_text(
        "gpus:\n  - {vendor: nvidia, model: z9k, memory: 48Gi, interface: pcie, "
        "products: [z9000-pcie-48gb]}\n"
    )
    operator.stop()
    operator.env["AP_INVENTORY_GPU_REGISTRY"] = str(extra)
    operator.start()
    [gpu] = (operator.node("gpu-new") or {})["gpus"]
    assert (gpu["model"], gpu["known"]) == ("z9k", True)
    assert operator.inventory()["unknown_gpus"] == []
    renamed = derived.replace("z9000", "z9k")
    labels = eventually_sync(
        lambda: cluster.akash_labels("gpu-new"),
        5,
        until=lambda got: renamed in got and derived not in got,
    )
    assert not [k for k in labels if ".model.z9000" in k]


async def test_a_restarted_operator_finds_everything_as_it_left_it(
    operator: Operator, cluster: Cluster, redis_url: str, tmp_path: Path
) -> None:
    before = operator.inventory()
    eventually_sync(lambda: cluster.akash_labels("gpu-new"), 5, until=lambda got: len(got) > 1)
    eventually_sync(  # every node's label write has landed
        lambda: len(operator.logged("node labels written")), 5, until=lambda n: n >= 4
    )
    versions = cluster.versions()
    published = len(await bus_payloads(redis_url))
    written = len(operator.logged("node labels written"))  # the log goes on after a restart
    assert written == 4  # every node, once
    # a second replica stands by: ready, serving its leader's inventory, writing nothing
    standby = Operator(tmp_path / "standby", cluster.sim.kubeconfig, redis_url, AP_INSTANCE_ID="2")
    with standby:
        status, role = standby.readiness()
        assert status == 200 and isinstance(role, dict) and role["role"] == "standby"
        assert standby.inventory() == before
        assert http_status(f"{standby.health_url}/v1/inventory/watch")[0] == 503
    assert "node labels written" not in standby.log() and "Traceback" not in standby.log()
    operator.kill()
    operator.start()
    assert operator.inventory() == before  # the same generation too: nothing changed
    time.sleep(1.0)  # what a restarted operator would write, it writes within this
    assert cluster.versions() == versions
    assert len(await bus_payloads(redis_url)) == published
    assert len(operator.logged("node labels written")) == written
    assert len(operator.logged("inventory operator ready")) == 2


async def test_an_operator_killed_mid_change_converges_after_a_restart(
    operator: Operator, cluster: Cluster, redis_url: str
) -> None:
    eventually_sync(lambda: cluster.akash_labels("cpu-1"), 5, until=lambda got: len(got) == 2)
    generation = operator.inventory()["generation"]
    # the operator is stopped in its tracks, the node cordoned, then the operator killed:
    # the change reached it (or its socket) but was neither published nor labelled
    assert operator.pid is not None
    os.kill(operator.pid, signal.SIGSTOP)
    cluster.core.patch_node("cpu-1", {"spec": {"unschedulable": True}})
    operator.kill()
    assert cluster.akash_labels("cpu-1") == {"akash.network": "true", BETA2: "1"}
    # and another change while it is down
    cluster.core.patch_node("gpu-a100", {"spec": {"unschedulable": True}})
    operator.start()
    eventually_sync(
        lambda: (cluster.akash_labels("cpu-1"), cluster.akash_labels("gpu-a100")),
        5,
        "both cordoned nodes unlabelled",
        until=lambda got: got == ({}, {}),
    )
    inventory = operator.inventory()
    assert {n["name"] for n in inventory["nodes"]} == {"gpu-sliced", "gpu-new"}
    assert {e["name"] for e in inventory["excluded"]} == {"cpu-1", "gpu-a100"}
    assert inventory["generation"] == generation + 1  # one change, published once
    latest = await retained(redis_url)
    assert latest is not None and latest.generation == generation + 1
    for name in ("cpu-1", "gpu-a100"):
        cluster.core.patch_node(name, {"spec": {"unschedulable": False}})
    eventually_sync(lambda: len(operator.inventory()["nodes"]), 5, until=(4).__eq__)
    eventually_sync(  # labels are written just after the inventory is published
        lambda: cluster.akash_labels("gpu-a100").get(A100),
        5,
        "gpu-a100 labelled",
        until=lambda count: count == "2",
    )


def test_pods_claims_and_storage_classes_are_followed(operator: Operator, cluster: Cluster) -> None:
    core = cluster.core
    core.create_namespace({"metadata": {"name": "work"}})
    container = {
        "name": "app",
        "image": "nginx",
        "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}},
    }
    init = {**container, "name": "init", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}
    core.create_namespaced_pod(
        "work",
        {
            "metadata": {"name": "p"},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": "cpu-1"},
                "initContainers": [init],
                "containers": [container],
            },
        },
    )
    core.create_namespaced_persistent_volume_claim(
        "work",
        {
            "metadata": {"name": "data"},
            "spec": {
                "storageClassName": "beta2",
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Gi"}},
            },
        },
    )
    node = eventually_sync(
        lambda: operator.node("cpu-1"), 3, until=lambda n: n is not None and n["allocated"]["cpu"]
    )
    assert node is not None
    assert node["allocated"] == {"cpu": 3000, "memory": GiB, "ephemeral": 0, "gpu": 0}  # init peak
    eventually_sync(
        lambda: operator.inventory()["storage"],
        3,
        until=[{"storage_class": "beta2", "capacity": 2**40, "allocated": 10 * GiB}].__eq__,
    )
    core.delete_namespaced_pod("p", "work", grace_period_seconds=0)
    eventually_sync(
        lambda: operator.node("cpu-1"),
        3,
        until=lambda n: n is not None and not n["allocated"]["cpu"],
    )
    # a pool is offered while its StorageClass exists
    client.StorageV1Api(cluster.api).delete_storage_class("beta2")
    eventually_sync(lambda: operator.inventory()["storage"], 3, until=[].__eq__)
    eventually_sync(
        lambda: cluster.akash_labels("cpu-1"), 3, until={"akash.network": "true"}.__eq__
    )


def test_the_watch_streams_the_inventory_then_each_change(
    operator: Operator, cluster: Cluster
) -> None:
    url = f"{operator.health_url}/v1/inventory/watch"
    with urllib.request.urlopen(url, timeout=5) as stream:  # noqa: S310 - our own server
        assert stream.headers["Content-Type"].startswith("application/x-ndjson")
        first = json.loads(stream.readline())
        assert first == operator.inventory()
        cluster.core.patch_node("gpu-new", {"spec": {"unschedulable": True}})
        second = json.loads(stream.readline())
    assert second["generation"] > first["generation"]
    assert "gpu-new" not in [n["name"] for n in second["nodes"]]


def test_nothing_is_served_before_the_first_sync(tmp_path: Path, redis_url: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    op = Operator(tmp_path, kubeconfig, redis_url, AP_INVENTORY_API_TIMEOUT="1s")
    op.start(wait_ready=False)
    try:
        status, body = eventually_sync(
            lambda: _get(f"{op.health_url}/v1/inventory"), 30, until=lambda r: r[0] == 503
        )
        assert "not listed yet" in json.dumps(body)
        status, ready = op.readiness()
        assert status == 503 and "Kubernetes API" in json.dumps(ready)
    finally:
        op.stop()


def _get(url: str) -> tuple[int, object]:
    try:
        return http_status(url)
    except OSError:
        return 0, None
