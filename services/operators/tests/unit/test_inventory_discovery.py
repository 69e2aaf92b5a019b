"""The inventory operator's pure parts: discovery from Kubernetes JSON, GPU naming with the
registry, the labels it writes, its settings, and the tables' version ordering."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from akoperators.domain.gpus import (
    GPURegistry,
    RegistryError,
    derived_model,
    memory_of_mib,
    node_gpus,
    pci_devices,
)
from akoperators.domain.inventory import (
    InventoryConfig,
    discover,
    label_patch,
    node_changes,
    node_labels,
    same,
)
from akoperators.inventory import registry as registry_files
from akoperators.inventory.settings import InventorySettings, node_storage, pools
from akoperators.inventory.state import Table, node_row
from akservice import StartupError
from aktypes.events import GPUInfo, NodeInventory

Obj = dict[str, Any]
GiB = 2**30
REGISTRY = registry_files.bundled()
A100 = "akash.network/capabilities.gpu.vendor.nvidia.model.a100"


def node(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    cordoned: bool = False,
    gpus: dict[str, str] | None = None,
) -> Obj:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi"}
            | (gpus or {}),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(on: str | None, *containers: Obj, phase: str = "Running", **spec: Any) -> Obj:
    return {
        "metadata": {"name": "p", "namespace": "n", "uid": f"uid-{id(containers)}"},
        "spec": {"nodeName": on, "containers": list(containers), **spec},
        "status": {"phase": phase},
    }


def box(cpu: str = "0", memory: str = "0", **more: Any) -> Obj:
    return {
        "name": "c",
        "image": "x",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
        **more,
    }


GFD_A100 = {
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
    "nvidia.com/gpu.memory": "81920",
    "nvidia.com/gpu.count": "2",
    "feature.node.kubernetes.io/pci-10de.present": "true",
}


# -- discovery -----------------------------------------------------------------------------


def test_nodes_are_offered_or_excluded_with_a_reason() -> None:
    config = InventoryConfig(exclude=(re.compile("control-.*"),))
    found = discover(
        [
            node("a"),
            node("b", ready=False),
            node("c", cordoned=True),
            node("control-1"),
        ],
        [pod("a", box("1500m", "1Gi")), pod("b", box("1"))],
        [],
        [],
        config=config,
        registry=REGISTRY,
    )
    [offered] = found.cluster.nodes
    assert offered.name == "a"
    assert (offered.allocatable.cpu, offered.allocatable.memory) == (8000, 32 * GiB)
    assert (offered.allocated.cpu, offered.allocated.memory) == (1500, GiB)
    assert {e.name: e.reason for e in found.cluster.excluded} == {
        "b": "not ready",
        "c": "cordoned",
        "control-1": "excluded by configuration",
    }
    assert found.labels == {"a": {"akash.network": "true"}, "b": {}, "c": {}, "control-1": {}}


def test_storage_pools_exist_with_their_class_and_count_claims() -> None:
    config = InventoryConfig(
        pools={"beta2": 100 * GiB, "beta3": 50 * GiB, "gone": GiB},
        node_storage=((re.compile("gpu-.*"), frozenset({"beta3"})),),
    )
    classes = [
        {
            "metadata": {
                "name": "beta2",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            }
        },
        {"metadata": {"name": "beta3"}},
    ]
    claims = [
        {"metadata": {"uid": "1"}, "spec": {"storageClassName": "beta3", "resources": {"requests": {"storage": "10Gi"}}}},
        {"metadata": {"uid": "2"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}, "status": {"capacity": {"storage": "2Gi"}}},
    ]  # fmt: skip
    found = discover(
        [node("gpu-1"), node("cpu-1")], [], claims, classes, config=config, registry=REGISTRY
    )
    pools_found = {p.storage_class: (p.capacity, p.allocated) for p in found.cluster.storage}
    assert pools_found == {"beta2": (100 * GiB, 2 * GiB), "beta3": (50 * GiB, 10 * GiB)}
    classes_of = {n.name: n.storage_classes for n in found.cluster.nodes}
    assert classes_of == {"cpu-1": ["beta2", "beta3"], "gpu-1": ["beta3"]}
    assert found.labels["gpu-1"] == {
        "akash.network": "true",
        "akash.network/capabilities.storage.class.beta3": "1",
    }


def test_a_gpu_node_offers_its_model_and_labels_it() -> None:
    found = discover(
        [node("g", labels=GFD_A100, gpus={"nvidia.com/gpu": "2"})],
        [pod("g", {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}})],
        [],
        [],
        config=InventoryConfig(),
        registry=REGISTRY,
    )
    [offered] = found.cluster.nodes
    assert (offered.allocatable.gpu, offered.allocated.gpu) == (2, 1)
    assert offered.gpus == [
        GPUInfo(
            vendor="nvidia", model="a100", memory="80Gi", interface="sxm", count=2,
            physical=2, replicas=1, product="NVIDIA-A100-SXM4-80GB", known=True,
        )
    ]  # fmt: skip
    assert found.labels["g"] == {
        "akash.network": "true",
        A100: "2",
        f"{A100}.ram.80Gi": "2",
        f"{A100}.interface.sxm": "2",
    }
    assert found.cluster.unknown_gpus == []


# -- GPUs ----------------------------------------------------------------------------------


def test_a_time_sliced_gpu_offers_every_replica() -> None:
    labels = {
        "nvidia.com/gpu.product": "Tesla-T4-SHARED",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.memory": "15360",
    }
    [gpu] = node_gpus("n", labels, {"nvidia.com/gpu": 8}, REGISTRY).gpus
    assert (gpu.model, gpu.memory, gpu.interface, gpu.product) == ("t4", "16Gi", "pcie", "Tesla-T4")
    assert (gpu.count, gpu.physical, gpu.replicas) == (8, 2, 4)


@pytest.mark.parametrize(
    ("product", "expected"),
    [
        ("NVIDIA-A100-SXM4-80GB", ("a100", "80Gi", "sxm")),
        ("A100-SXM4-40GB", ("a100", "40Gi", "sxm")),  # older drivers: no vendor prefix
        ("NVIDIA-A100-80GB-PCIe", ("a100", "80Gi", "pcie")),
        ("NVIDIA-H100-80GB-HBM3", ("h100", "80Gi", "sxm")),
        ("NVIDIA-H100-NVL", ("h100", "94Gi", "pcie")),
        ("NVIDIA-GeForce-RTX-4090", ("rtx4090", "24Gi", "pcie")),
        ("NVIDIA-L4", ("l4", "24Gi", "pcie")),
        ("NVIDIA-L40S", ("l40s", "48Gi", "pcie")),
        ("NVIDIA-A10G", ("a10g", "24Gi", "pcie")),
        ("NVIDIA-RTX-6000-Ada-Generation", ("rtx6000ada", "48Gi", "pcie")),
    ],
)
def test_the_bundled_registry_names_common_cards(product: str, expected: tuple[str, ...]) -> None:
    gpu = REGISTRY.by_product("nvidia", product)
    assert gpu is not None
    assert (gpu.model, gpu.memory, gpu.interface) == expected


def test_an_amd_gpu_is_named_from_the_labeller_or_its_device_id() -> None:
    labels = {"amd.com/gpu.product-name": "AMD_Instinct_MI210", "amd.com/gpu.vram": "64G"}
    [gpu] = node_gpus("n", labels, {"amd.com/gpu": 4}, REGISTRY).gpus
    assert (gpu.vendor, gpu.model, gpu.memory, gpu.interface, gpu.known) == (
        "amd",
        "mi210",
        "64Gi",
        "pcie",
        True,
    )
    [by_id] = node_gpus("n", {"amd.com/gpu.device-id": "74a1"}, {"amd.com/gpu": 8}, REGISTRY).gpus
    assert (by_id.model, by_id.memory, by_id.count) == ("mi300x", "192Gi", 8)


def test_nfd_device_labels_name_a_gpu_without_gfd_but_not_a_switch() -> None:
    labels = {
        "feature.node.kubernetes.io/pci-0302_10de_20b2.present": "true",
        "feature.node.kubernetes.io/pci-0680_10de_1af1.present": "true",  # NVSwitch
    }
    assert pci_devices(labels, "10de") == ["20b2"]
    [gpu] = node_gpus("n", labels, {"nvidia.com/gpu": 8}, REGISTRY).gpus
    assert (gpu.model, gpu.memory, gpu.interface, gpu.count) == ("a100", "80Gi", "sxm", 8)


def test_an_unknown_product_is_offered_under_a_derived_name() -> None:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-9090-SXM9-96GB",
        "nvidia.com/gpu.memory": "98304",
    }
    [gpu] = node_gpus("n", labels, {"nvidia.com/gpu": 1}, REGISTRY).gpus
    assert (gpu.model, gpu.memory, gpu.interface, gpu.known) == ("rtx9090", "96Gi", "sxm", False)
    found = discover(
        [node("n", labels=labels, gpus={"nvidia.com/gpu": "1"})], [], [], [],
        config=InventoryConfig(), registry=REGISTRY,
    )  # fmt: skip
    assert found.cluster.unknown_gpus == ["NVIDIA-GeForce-RTX-9090-SXM9-96GB"]


@pytest.mark.parametrize(
    ("product", "model"),
    [
        ("NVIDIA-GeForce-RTX-5090", "rtx5090"),
        ("NVIDIA-H100-80GB-HBM3", "h100"),
        ("Tesla-T4-SHARED", "t4"),
        ("AMD_Instinct_MI325X", "mi325x"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "rtxpro6000blackwe"),
        ("---", "unknown"),
    ],
)
def test_derived_names_are_short_dns_safe_model_names(product: str, model: str) -> None:
    assert derived_model(product) == model
    assert re.fullmatch(r"[a-z0-9]{1,17}", derived_model(product))


def test_gpus_that_cannot_be_offered_are_told_not_counted() -> None:
    down = node_gpus("n", GFD_A100, {}, REGISTRY)  # GFD ran, the device plugin did not
    assert down.gpus == () and "device plugin" in down.problems[0]
    nameless = node_gpus("n", {}, {"nvidia.com/gpu": 4}, REGISTRY)
    assert nameless.gpus == () and "no label names the model" in nameless.problems[0]
    assert node_gpus("n", {}, {}, REGISTRY) == node_gpus("n", {"x": "y"}, {}, REGISTRY)


def test_gpu_memory_in_mib_becomes_whole_gibibytes() -> None:
    assert [memory_of_mib(m) for m in ("81920", "81559", "15360", "512", "", "x")] == [
        "80Gi", "80Gi", "15Gi", "512Mi", "", "",
    ]  # fmt: skip


def test_an_operators_registry_comes_first(tmp_path: Path) -> None:
    extra = tmp_path / "gpus.yaml"
    extra.write_text(
        "version: v1\ngpus:\n"
        "  - {vendor: nvidia, model: a100x, memory: 80Gi, interface: sxm, products: [a100-sxm4-80gb]}\n"
        "  - {vendor: nvidia, model: z9, pci: ['10de:ffff']}\n"
    )
    merged = registry_files.load(extra)
    assert len(merged) == len(REGISTRY) + 2
    assert merged.by_product("nvidia", "NVIDIA-A100-SXM4-80GB").model == "a100x"  # type: ignore[union-attr]
    assert merged.by_product("nvidia", "NVIDIA-A100-SXM4-40GB").model == "a100"  # type: ignore[union-attr]
    assert merged.by_pci("10de", "FFFF").model == "z9"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("gpus: [{vendor: nvidia, model: X1, products: [x]}]", "model"),
        ("gpus: [{vendor: nvidia, model: x1}]", "products"),
        ("gpus: [{vendor: nvidia, model: x1, pci: [nvidia]}]", "vendor:device"),
        ("gpus: [{vendor: nvidia, model: x1, products: [x], interface: nvlink}]", "interface"),
        ("version: v9", "version"),
        ("gpus: [", "YAML"),
    ],
)
def test_a_bad_registry_file_stops_the_start_naming_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    extra = tmp_path / "gpus.yaml"
    extra.write_text(text)
    with pytest.raises(StartupError, match=problem) as caught:
        registry_files.load(extra)
    assert "AP_INVENTORY_GPU_REGISTRY" in str(caught.value)
    with pytest.raises(StartupError, match="cannot read"):
        registry_files.load(tmp_path / "missing.yaml")


def test_the_bundled_registry_is_valid_and_unambiguous() -> None:
    assert len(REGISTRY) > 40
    pci = [p for e in REGISTRY.entries for p in e.pci]
    assert len(pci) == len(set(pci))
    with pytest.raises(RegistryError):
        GPURegistry.parse({"gpus": [{"vendor": "nvidia"}]}, "inline")


# -- labels --------------------------------------------------------------------------------


def test_the_patch_sets_what_is_missing_and_removes_only_owned_stale_labels() -> None:
    current = {
        "akash.network": "true",
        f"{A100}": "4",
        f"{A100}.ram.40Gi": "4",
        "akash.network/role": "ingress",  # set by hand: not the operator's
        "kubernetes.io/hostname": "g",
    }
    wanted = {"akash.network": "true", A100: "2", f"{A100}.ram.80Gi": "2"}
    assert label_patch(current, wanted) == {
        f"{A100}.ram.40Gi": None,
        A100: "2",
        f"{A100}.ram.80Gi": "2",
    }
    done = {k: v for k, v in current.items() if not k.startswith("akash.network/cap")} | wanted
    assert label_patch(done, wanted) == {}  # nothing to write: no request at all
    assert label_patch(done, {}) == {
        "akash.network": None,
        A100: None,
        f"{A100}.ram.80Gi": None,
    }


def test_a_label_too_long_for_kubernetes_is_skipped_and_told() -> None:
    gpu = GPUInfo(vendor="nvidia", model="rtx4000sffada", memory="20Gi", interface="pcie", count=1)
    labels, skipped = node_labels(NodeInventory(name="n", gpus=[gpu]))
    assert f"akash.network/capabilities.gpu.vendor.nvidia.model.{gpu.model}" in labels
    assert skipped == [
        f"akash.network/capabilities.gpu.vendor.nvidia.model.{gpu.model}.interface.pcie"
    ]
    assert all(len(k.partition("/")[2]) <= 63 for k in labels)


def test_changes_name_nodes_that_changed_or_left() -> None:
    a, b, b2 = (
        NodeInventory(name="a"),
        NodeInventory(name="b"),
        NodeInventory(name="b", storage_classes=["x"]),
    )
    assert node_changes([a, b], [b2, NodeInventory(name="c")]) == (
        [b2, NodeInventory(name="c")],
        ["a"],
    )
    found = discover([node("a")], [], [], [], config=InventoryConfig(), registry=REGISTRY).cluster
    assert same(found, found.model_copy(update={"generation": 7}))
    assert not same(found, found.model_copy(update={"nodes": []}))


# -- settings and tables -------------------------------------------------------------------


def test_settings_read_akash_choices_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AP_INVENTORY_STORAGE", "beta2=1Ti, beta3=512Gi")
    monkeypatch.setenv("AP_INVENTORY_EXCLUDE_NODES", "control-.*,edge")
    monkeypatch.setenv("AP_INVENTORY_NODE_STORAGE", "gpu-.*=beta3;edge-.*=")
    config = InventorySettings().config()
    assert config.pools == {"beta2": 2**40, "beta3": 512 * GiB}
    assert (
        config.excluded("control-7") and config.excluded("edge") and not config.excluded("edge-1")
    )
    assert config.classes_for("gpu-1") == {"beta3"}
    assert config.classes_for("edge-1") == frozenset()
    assert config.classes_for("cpu-1") == {"beta2", "beta3"}


@pytest.mark.parametrize("text", ["beta2", "beta2=lots", "Beta2=1Gi", "beta2=1.5"])
def test_a_storage_setting_that_makes_no_sense_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="beta2|Beta2|quantity"):
        pools(text)


def test_a_node_storage_setting_needs_patterns_and_classes() -> None:
    with pytest.raises(ValueError, match="regex"):
        node_storage("beta3")
    with pytest.raises(ValueError, match="regular expression"):
        node_storage("gpu-(=beta3")


def versioned(name: str, version: int, **labels: str) -> Obj:
    obj = node(name, labels=labels)
    obj["metadata"]["resourceVersion"] = str(version)
    return obj


def test_a_table_keeps_the_newest_version_whatever_the_order() -> None:
    table: Table[Obj] = Table("nodes", "/api/v1/nodes", lambda o: o["metadata"]["name"], node_row)
    assert table.upsert(versioned("a", 5, x="new"))
    assert not table.upsert(versioned("a", 3, x="old"))  # a list answered before the event
    assert table.rows["a"]["metadata"]["labels"] == {"x": "new"}
    assert table.delete(versioned("a", 6))
    assert not table.upsert(versioned("a", 5, x="late"))  # a late event of a deleted node
    assert table.upsert(versioned("a", 9, x="again"))  # made again
    # a list at version 8 lacks "b" (seen at 7: deleted before the list), keeps "c" (10)
    table.upsert(versioned("b", 7))
    table.upsert(versioned("c", 10))
    assert table.replace_all([versioned("a", 9, x="again")], 8)
    assert sorted(table.rows) == ["a", "c"]


def test_a_node_row_ignores_heartbeats() -> None:
    beat = node("a")
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "2025-01-01T00:00:00Z"
    assert node_row(beat) == node_row(node("a"))
