"""The ``kube`` inventory backend against kubesim, over real HTTP with the real client.

The simulated cluster has a plain node, an NVIDIA node and an AMD node, and one node that
is not an Akash node; tests change it through the API (as kubectl would), or, to stage
what the API cannot (an outage with changes behind it, a compacted history), through the
simulator's own store on its loop. Nothing of the ``kubernetes`` client is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api, StorageV1Api

from akcluster.adapters.kube import KubeInventory
from akcluster.adapters.kube_objects import gpu_model
from akcluster.domain.inventory import Capacity, GPUModel, Inventory, Node, StoragePool
from akservice.testing import eventually, free_port
from kubesim import kubeconfig
from kubesim.cluster import ClusterSpec, GpuSpec, NodeSpec
from kubesim.patch import MERGE_PATCH
from kubesim.testing import FAST, ThreadedKubeSim

MiB, GiB = 2**20, 2**30

CLUSTER = ClusterSpec(
    nodes=(
        NodeSpec(
            name="node-a",
            cpu="8",
            memory="32Gi",
            ephemeral_storage="200Gi",
            storage_classes=("beta2",),
        ),
        NodeSpec(
            name="gpu-1",
            cpu="7500m",
            memory="64G",
            ephemeral_storage="1e12",
            storage_classes=("beta2", "beta3"),
            gpus=GpuSpec(vendor="nvidia", model="a100", count=2, memory="80Gi", interface="sxm"),
        ),
        NodeSpec(
            name="amd-1",
            cpu="16",
            memory="128Gi",
            ephemeral_storage="500Gi",
            gpus=GpuSpec(vendor="amd", model="mi210", count=1, memory="64Gi", interface="pcie"),
        ),
        NodeSpec(name="edge", labels={"akash.network": "false"}),  # not an Akash node
    )
)
POOLS = {"beta2": 100 * GiB, "beta3": 50 * GiB, "fast": 10 * GiB}  # no StorageClass "fast"

EXPECTED = Inventory(
    nodes=(
        Node(
            "amd-1",
            Capacity(cpu=16000, memory=128 * GiB, ephemeral=500 * GiB, gpu=1),
            gpu_model=GPUModel("amd", "mi210", "64Gi", "pcie"),
        ),
        Node(
            "gpu-1",
            Capacity(cpu=7500, memory=64 * 10**9, ephemeral=10**12, gpu=2),
            gpu_model=GPUModel("nvidia", "a100", "80Gi", "sxm"),
            storage_classes=frozenset({"beta2", "beta3"}),
        ),
        Node(
            "node-a",
            Capacity(cpu=8000, memory=32 * GiB, ephemeral=200 * GiB),
            storage_classes=frozenset({"beta2"}),
        ),
    ),
    storage={"beta2": StoragePool(100 * GiB), "beta3": StoragePool(50 * GiB)},
)


# -- fixtures and helpers ----------------------------------------------------------------
@pytest.fixture
def kubesim_thread() -> Iterator[ThreadedKubeSim]:
    """The plugin's fixture, on this module's cluster (``kubesim_kubeconfig`` follows)."""
    with ThreadedKubeSim(CLUSTER) as sim:
        yield sim


@pytest.fixture
def api(kubesim_kubeconfig: Path) -> Iterator[ApiClient]:
    """The test's own client, for the changes kubectl would make."""
    client = kubernetes.config.new_client_from_config(config_file=str(kubesim_kubeconfig))
    yield client
    client.close()


@contextlib.asynccontextmanager
async def following(inventory: KubeInventory) -> AsyncIterator[KubeInventory]:
    task = asyncio.create_task(inventory.run())
    try:
        await inventory.wait_synced(10)
        yield inventory
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        inventory.close()


def make(path: Path, **options: Any) -> KubeInventory:
    options.setdefault("storage_pools", POOLS)
    options.setdefault("backoff_s", (0.05, 0.5))
    return KubeInventory.from_kubeconfig(path, **options)


@pytest.fixture
def changes() -> list[Inventory]:
    return []


@pytest.fixture
async def inventory(
    kubesim_kubeconfig: Path, changes: list[Inventory]
) -> AsyncIterator[KubeInventory]:
    async with following(make(kubesim_kubeconfig, on_change=changes.append)) as inventory:
        yield inventory


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A blocking client call, off the event loop (the inventory's threads post to it)."""
    return await asyncio.to_thread(fn, *args, **kwargs)


def node(inventory: KubeInventory, name: str) -> Node | None:
    snapshot = inventory.snapshot()
    return None if snapshot is None else snapshot.node(name)


async def allocated(inventory: KubeInventory, name: str, expected: Capacity) -> None:
    found = await eventually(
        lambda: node(inventory, name),
        what=f"{name} to have {expected} allocated",
        until=lambda n: n is not None and n.allocated == expected,
    )
    assert found is not None
    assert found.available == found.allocatable - expected


def container(
    name: str = "app",
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": name, "image": "nginx", "resources": resources, **extra}


def pod(name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": list(containers) or [container()], **spec},
    }


def store_call(sim: ThreadedKubeSim, action: Callable[[Any], Any]) -> Any:
    """Run ``action(store)`` on the simulator's loop, in one step no request can split."""
    return sim.call(lambda: action(sim.running.store))


def rtype(store: Any, group: str, plural: str) -> Any:
    return store.catalog.get(group, "v1", plural)


# -- labels ------------------------------------------------------------------------------
def test_gpu_model_from_combined_labels_and_the_largest_model() -> None:
    base = "akash.network/capabilities.gpu.vendor.nvidia.model"
    labels = {
        f"{base}.t4": "1",
        f"{base}.h100.ram.80Gi.interface.sxm": "8",
        f"{base}.h100": "8",
        "nvidia.com/gpu.product": "h100",
    }
    assert gpu_model(labels) == GPUModel("nvidia", "h100", "80Gi", "sxm")
    assert gpu_model({"zone": "a"}) is None


# -- the inventory -----------------------------------------------------------------------
async def test_initial_snapshot_is_the_nodes_file(
    inventory: KubeInventory, changes: list[Inventory]
) -> None:
    assert inventory.snapshot() == EXPECTED
    assert inventory.error == ""
    await eventually(lambda: changes, what="the first inventory", until=lambda c: c == [EXPECTED])


async def test_nodes_without_the_akash_label_count_when_it_is_not_required(
    kubesim_kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubesim_kubeconfig))
    plain = KubeInventory.from_kubeconfig(None, require_akash_label=False)
    async with following(plain) as inventory:
        assert node(inventory, "edge") == Node("edge", Capacity(8000, 32 * GiB, 100 * GiB))
        snapshot = inventory.snapshot()
        assert snapshot is not None
        assert snapshot.storage == {}  # no pools configured


async def test_wait_synced_times_out_naming_the_failure(tmp_path: Path) -> None:
    nowhere = kubeconfig.write(tmp_path / "kubeconfig", f"http://127.0.0.1:{free_port()}")
    inventory = make(nowhere)
    task = asyncio.create_task(inventory.run())
    try:
        with pytest.raises(
            TimeoutError, match="did not sync within 0.5s: .*nodes: .*Connection refused"
        ):
            await inventory.wait_synced(0.5)
        assert inventory.snapshot() is None
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        inventory.close()


async def test_deployment_pods_take_capacity_until_deleted(
    inventory: KubeInventory, api: ApiClient
) -> None:
    apps = AppsV1Api(api)
    template = pod(
        "web",
        container(requests={"cpu": "1500m", "memory": "1Gi", "ephemeral-storage": "2Gi"}),
        nodeSelector={"kubernetes.io/hostname": "node-a"},
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": template["spec"]},
        },
    }
    await call(apps.create_namespaced_deployment, "default", deployment)
    await allocated(inventory, "node-a", Capacity(3000, 2 * GiB, 4 * GiB))
    assert node(inventory, "gpu-1") == EXPECTED.node("gpu-1")  # other nodes untouched

    await call(apps.patch_namespaced_deployment_scale, "web", "default", {"spec": {"replicas": 1}})
    await allocated(inventory, "node-a", Capacity(1500, 1 * GiB, 2 * GiB))
    await call(apps.delete_namespaced_deployment, "web", "default")
    await allocated(inventory, "node-a", Capacity())


async def test_gpu_pods_take_gpus_of_their_vendor(inventory: KubeInventory, api: ApiClient) -> None:
    core = CoreV1Api(api)
    nvidia = pod("cuda", container(limits={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}))
    amd = pod("rocm", container(limits={"cpu": "1", "memory": "1Gi", "amd.com/gpu": "1"}))
    await call(core.create_namespaced_pod, "default", nvidia)
    await call(core.create_namespaced_pod, "default", amd)
    await allocated(inventory, "gpu-1", Capacity(1000, GiB, 0, 1))
    await allocated(inventory, "amd-1", Capacity(1000, GiB, 0, 1))
    await call(core.delete_namespaced_pod, "cuda", "default")
    await allocated(inventory, "gpu-1", Capacity())


async def test_pod_requests_are_counted_as_the_scheduler_counts_them(
    inventory: KubeInventory, api: ApiClient
) -> None:
    """Containers add up; an init container runs alone with the sidecars before it; the
    larger wins; a memory-backed emptyDir takes memory, a disk one nothing."""
    spec = pod(
        "mixed",
        container("a", requests={"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "1Gi"}),
        container("b", limits={"cpu": "1", "memory": "1Gi"}),  # limits stand in for requests
        nodeName="node-a",
        initContainers=[
            container(
                "setup", requests={"cpu": "2", "memory": "128Mi", "ephemeral-storage": "3Gi"}
            ),
            container("proxy", requests={"cpu": "250m", "memory": "64Mi"}, restartPolicy="Always"),
        ],
        volumes=[
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "512Mi"}},
            {"name": "scratch", "emptyDir": {"sizeLimit": "5Gi"}},
        ],
    )
    await call(CoreV1Api(api).create_namespaced_pod, "default", spec)
    # cpu: max(0.5 + 1 + 0.25 sidecar, 2 setup) = 2; memory: 256 + 1024 + 64 + 512 shm
    await allocated(inventory, "node-a", Capacity(2000, 1856 * MiB, 3 * GiB))


async def test_finished_pods_give_capacity_back(tmp_path: Path, changes: list[Inventory]) -> None:
    """Go counts Succeeded and Failed pods until they are deleted; here they stop counting.
    kubesim's kubelet is off, so that the test can play it and end the pods."""
    no_kubelet = dataclasses.replace(FAST, enabled=FAST.enabled - {"kubelet"})
    with ThreadedKubeSim(CLUSTER, controllers=no_kubelet) as sim:
        path = sim.write_kubeconfig(tmp_path / "kubeconfig")
        client = kubernetes.config.new_client_from_config(config_file=str(path))
        core = CoreV1Api(client)
        try:
            async with following(make(path)) as inventory:
                for name in ("job-1", "job-2", "job-3"):
                    body = pod(name, container(requests={"cpu": "1"}), nodeName="node-a")
                    await call(core.create_namespaced_pod, "default", body)
                await allocated(inventory, "node-a", Capacity(cpu=3000))
                for name, phase in (("job-1", "Succeeded"), ("job-2", "Failed")):
                    status = {"status": {"phase": phase}}
                    await call(core.patch_namespaced_pod_status, name, "default", status)
                await allocated(inventory, "node-a", Capacity(cpu=1000))
                await call(core.delete_namespaced_pod, "job-3", "default")
                await allocated(inventory, "node-a", Capacity())
        finally:
            client.close()


async def test_cordoned_and_not_ready_nodes_leave_the_inventory(
    inventory: KubeInventory, api: ApiClient, kubesim_thread: ThreadedKubeSim
) -> None:
    core = CoreV1Api(api)

    async def present(name: str, expected: bool) -> None:
        await eventually(
            lambda: node(inventory, name),
            what=f"{name} {'in' if expected else 'out of'} the inventory",
            until=lambda n: n == EXPECTED.node(name) if expected else n is None,
        )

    await call(core.patch_node, "gpu-1", {"spec": {"unschedulable": True}})
    await present("gpu-1", False)
    await call(core.patch_node, "gpu-1", {"spec": {"unschedulable": False}})
    await present("gpu-1", True)

    kubesim_thread.call(lambda: kubesim_thread.faults.node_ready("node-a", False))
    await present("node-a", False)
    kubesim_thread.call(lambda: kubesim_thread.faults.node_ready("node-a", True))
    await present("node-a", True)

    await call(core.patch_node, "amd-1", {"metadata": {"labels": {"akash.network": None}}})
    await present("amd-1", False)


async def test_a_new_node_appears_and_a_deleted_one_goes(
    inventory: KubeInventory, api: ApiClient
) -> None:
    core = CoreV1Api(api)
    spec = NodeSpec(
        name="node-c", cpu="4", memory="16Gi", ephemeral_storage="50Gi", storage_classes=("beta2",)
    )
    body = spec.node_object(7, "v1.32.0")
    # as a kubelet registers: the node, then its status (kubesim drops status on create;
    # its node controller makes the node Ready)
    await call(core.create_node, body)
    resources = {
        "capacity": body["status"]["capacity"],
        "allocatable": body["status"]["allocatable"],
    }
    await call(core.patch_node_status, "node-c", {"status": resources})
    expected = Node(
        "node-c", Capacity(4000, 16 * GiB, 50 * GiB), storage_classes=frozenset({"beta2"})
    )
    await eventually(
        lambda: node(inventory, "node-c"), what="node-c", until=lambda n: n == expected
    )
    await call(core.delete_node, "node-c")
    await eventually(
        lambda: node(inventory, "node-c"), what="node-c gone", until=lambda n: n is None
    )


async def test_claims_use_the_pool_of_their_storage_class(
    inventory: KubeInventory, api: ApiClient
) -> None:
    core, storage = CoreV1Api(api), StorageV1Api(api)

    def claim(name: str, size: str, cls: str | None) -> dict[str, Any]:
        spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": spec | ({"storageClassName": cls} if cls else {}),
        }

    async def pools(expected: dict[str, StoragePool]) -> None:
        await eventually(
            inventory.snapshot,
            what=f"pools {expected}",
            until=lambda s: s is not None and s.storage == expected,
        )

    await call(
        core.create_namespaced_persistent_volume_claim, "default", claim("a", "10Gi", "beta2")
    )
    await call(
        core.create_namespaced_persistent_volume_claim, "default", claim("b", "5Gi", "beta3")
    )
    await call(core.create_namespaced_persistent_volume_claim, "default", claim("c", "1Gi", None))
    await pools(
        {"beta2": StoragePool(100 * GiB, 10 * GiB), "beta3": StoragePool(50 * GiB, 5 * GiB)}
    )

    # a claim naming no class takes the default class's pool
    default = {"metadata": {"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}
    await call(storage.patch_storage_class, "beta3", default)
    await pools(
        {"beta2": StoragePool(100 * GiB, 10 * GiB), "beta3": StoragePool(50 * GiB, 6 * GiB)}
    )

    await call(core.delete_namespaced_persistent_volume_claim, "a", "default")
    await pools({"beta2": StoragePool(100 * GiB), "beta3": StoragePool(50 * GiB, 6 * GiB)})

    # a configured pool counts once its StorageClass exists
    fast = {"metadata": {"name": "fast"}, "provisioner": "kubesim.io/local"}
    await call(storage.create_storage_class, fast)
    await pools(
        {
            "beta2": StoragePool(100 * GiB),
            "beta3": StoragePool(50 * GiB, 6 * GiB),
            "fast": StoragePool(10 * GiB),
        }
    )


# refuse=True closes kubesim's listening socket too; connections the client keeps alive
# still reach the server and get 503s, so refused connections proper are covered by
# test_wait_synced_times_out_naming_the_failure
@pytest.mark.parametrize("refuse", [False, True], ids=["503", "listener-closed"])
async def test_watches_resume_after_the_api_server_was_unavailable(
    inventory: KubeInventory, api: ApiClient, kubesim_thread: ThreadedKubeSim, refuse: bool
) -> None:
    kubesim_thread.call(lambda: kubesim_thread.faults.unavailable(1.0, refuse=refuse))
    await eventually(lambda: inventory.error, what="the outage to be reported")
    # what changes meanwhile is replayed by the resumed watch
    cordon = {"spec": {"unschedulable": True}}
    store_call(
        kubesim_thread,
        lambda s: s.patch(rtype(s, "", "nodes"), "", "gpu-1", MERGE_PATCH, cordon),
    )
    await eventually(
        lambda: inventory.error, what="recovery", until=lambda e: e == "", timeout_s=15
    )
    await eventually(lambda: node(inventory, "gpu-1"), what="gpu-1 gone", until=lambda n: n is None)
    body = pod("late", container(requests={"cpu": "1"}), nodeName="node-a")
    await call(CoreV1Api(api).create_namespaced_pod, "default", body)
    await allocated(inventory, "node-a", Capacity(cpu=1000))


async def test_an_expired_watch_lists_again(
    inventory: KubeInventory,
    api: ApiClient,
    kubesim_thread: ThreadedKubeSim,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="akcluster.kube")
    core = CoreV1Api(api)
    body = pod("old", container(requests={"cpu": "1"}), nodeName="node-a")
    await call(core.create_namespaced_pod, "default", body)
    await allocated(inventory, "node-a", Capacity(cpu=1000))

    def expire(store: Any) -> None:
        """Drop the watches, delete the pod, forget the history: only a new list can tell
        the inventory that the pod is gone, and a watch from its version gets 410 Gone."""
        store.close_watches()
        store.delete(rtype(store, "", "pods"), "default", "old")
        store.compact()

    store_call(kubesim_thread, expire)
    await allocated(inventory, "node-a", Capacity())
    assert any("pods: " in r.message and "listing again" in r.message for r in caplog.records)
    assert inventory.error == ""
    body = pod("new", container(requests={"cpu": "2"}), nodeName="node-a")
    await call(core.create_namespaced_pod, "default", body)
    await allocated(inventory, "node-a", Capacity(cpu=2000))


async def test_on_change_is_debounced_and_only_for_changes(
    kubesim_kubeconfig: Path, api: ApiClient
) -> None:
    changes: list[Inventory] = []
    core = CoreV1Api(api)
    async with following(make(kubesim_kubeconfig, on_change=changes.append, debounce_s=0.3)) as inv:
        await eventually(lambda: changes, what="the first inventory", until=lambda c: len(c) == 1)

        def burst() -> None:
            for index in range(4):
                body = pod(f"p{index}", container(requests={"cpu": "500m"}), nodeName="node-a")
                core.create_namespaced_pod("default", body)
            # a change the inventory does not care about
            core.patch_namespaced_pod("p0", "default", {"metadata": {"labels": {"x": "y"}}})

        await call(burst)
        await eventually(
            lambda: changes[-1].node("node-a"),
            what="the burst in an inventory",
            until=lambda n: n is not None and n.allocated == Capacity(cpu=2000),
        )
        assert changes[-1] == inv.snapshot()
    assert len(changes) < 1 + 4, "four pods, fewer inventories"
    assert all(a != b for a, b in itertools.pairwise(changes)), "no repeats"
