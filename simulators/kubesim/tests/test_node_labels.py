"""Nodes as a cluster file describes them: Akash's labels by default, or only what GPU
feature discovery, the device plugin and NFD set (``akash-labels: false``), time-sliced
GPUs, and a scheduler that follows labels an operator writes while pods wait."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kubesim.cluster import ClusterSpec, GpuSpec, NodeSpec
from kubesim.testing import ThreadedKubeSim, wait_until

CLUSTER = """
nodes:
  - name: labelled
    gpus: {model: a100, count: 2, replicas: 4, memory: 80Gi, interface: sxm}
    storage-classes: [beta3]
  - name: raw
    akash-labels: false
    storage-classes: [beta3]
    gpus: {model: a100, count: 2, replicas: 4, memory: 80Gi, interface: sxm}
  - name: raw-amd
    akash-labels: false
    gpus: {vendor: amd, model: mi210, count: 1, memory: 64Gi}
"""
AKASH = "akash.network/capabilities.gpu.vendor.nvidia.model.a100"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    workdir = tmp_path_factory.mktemp("labels")
    (workdir / "nodes.yaml").write_text(CLUSTER)
    with ThreadedKubeSim(ClusterSpec.load(workdir / "nodes.yaml")) as sim:
        api = config.new_client_from_config(str(sim.write_kubeconfig(Path(workdir / "kc"))))
        try:
            yield api
        finally:
            api.close()


def labels_of(api: client.ApiClient, name: str) -> dict[str, str]:
    return dict(client.CoreV1Api(api).read_node(name).metadata.labels)


def test_the_default_node_keeps_its_labels() -> None:
    node = NodeSpec(
        name="gpu",
        storage_classes=("beta2",),
        gpus=GpuSpec(model="a100", count=2, memory="80Gi", interface="sxm"),
    )
    assert node.node_labels() == {
        "kubernetes.io/hostname": "gpu",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "akash.network": "true",
        "akash.network/capabilities.storage.class.beta2": "1",
        AKASH: "2",
        f"{AKASH}.ram.80Gi": "2",
        f"{AKASH}.interface.sxm": "2",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "a100",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.memory": "81920",
    }
    assert node.resources()["nvidia.com/gpu"] == "2"


def test_a_raw_node_carries_only_what_discovery_sets(api: client.ApiClient) -> None:
    labels = labels_of(api, "raw")
    assert not [k for k in labels if k.startswith("akash.network")]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-SHARED"
    assert labels["nvidia.com/gpu.memory"] == "81920"
    assert labels["nvidia.com/gpu.count"] == "2"
    assert labels["nvidia.com/gpu.replicas"] == "4"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    amd = labels_of(api, "raw-amd")
    assert amd["amd.com/gpu.product-name"] == "AMD_Instinct_MI210"
    assert amd["amd.com/gpu.vram"] == "64G"
    assert amd["feature.node.kubernetes.io/pci-1002.present"] == "true"
    assert not [k for k in amd if k.startswith("akash.network")]


def test_time_slicing_multiplies_the_device_plugin_units(api: client.ApiClient) -> None:
    nodes = {n.metadata.name: n for n in client.CoreV1Api(api).list_node().items}
    assert nodes["raw"].status.allocatable["nvidia.com/gpu"] == "8"
    assert nodes["labelled"].status.allocatable["nvidia.com/gpu"] == "8"
    assert nodes["labelled"].metadata.labels[AKASH] == "8"  # as the operator counts them
    assert nodes["labelled"].metadata.labels["nvidia.com/gpu.count"] == "2"
    assert nodes["raw-amd"].status.allocatable["amd.com/gpu"] == "1"


def test_the_scheduler_follows_labels_written_while_a_pod_waits(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "wait"}})
    affinity: dict[str, Any] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "example.com/late", "operator": "Exists"}]}
                ]
            }
        }
    }
    pod = {
        "metadata": {"name": "late"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "affinity": affinity},
    }
    core.create_namespaced_pod("wait", pod)
    pending = wait_until(
        lambda: core.read_namespaced_pod("late", "wait"),
        lambda p: bool(p.status.conditions),
    )
    assert pending.spec.node_name is None
    assert "didn't match Pod's node affinity" in pending.status.conditions[0].message
    core.patch_node("raw", {"metadata": {"labels": {"example.com/late": "yes"}}})
    placed = wait_until(
        lambda: core.read_namespaced_pod("late", "wait"), lambda p: p.spec.node_name is not None
    )
    assert placed.spec.node_name == "raw"


def test_the_cluster_file_rejects_a_gpu_without_replicas() -> None:
    with pytest.raises(ValueError, match="replicas"):
        GpuSpec(model="a100", count=1, replicas=0)
