"""Reading Kubernetes objects for the inventory: nodes, and pods' requests as capacities.

Pure functions over the JSON of nodes and pods, as the ``kube`` inventory backend
(:mod:`akcluster.adapters.kube`) receives them from the API: what a node offers, what a pod
takes (as the scheduler counts it: :mod:`akkube.pods`, which also reads claims and storage
classes), which GPU model and storage classes the inventory operator's labels announce.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from akcluster.domain.inventory import Capacity, GPUModel, Node
from akkube import pods
from akkube.pods import Use, use_of

AKASH_LABEL = "akash.network"
STORAGE_LABEL = "akash.network/capabilities.storage.class."
GPU_LABEL = "akash.network/capabilities.gpu.vendor."

# <vendor>.model.<model>[.ram.<size>][.interface.<interface>], after GPU_LABEL
_GPU_KEY = re.compile(
    r"(?P<vendor>[^.]+)\.model\.(?P<model>.+?)"
    r"(?:\.ram\.(?P<ram>[^.]+))?(?:\.interface\.(?P<interface>[^.]+))?"
)

Obj = dict[str, Any]


def _capacity(use: Use) -> Capacity:
    return Capacity(cpu=use.cpu, memory=use.memory, ephemeral=use.ephemeral, gpu=use.gpu)


def capacity_of(resources: Mapping[str, Any]) -> Capacity:
    """A Kubernetes resource list (``allocatable``, ``requests``…) as a Capacity."""
    return _capacity(use_of(resources))


def gpu_model(labels: Mapping[str, str]) -> GPUModel | None:
    """The GPU model from Akash's capability labels; of several, the one with most GPUs."""
    found: dict[tuple[str, str], tuple[int, str, str]] = {}
    for key, value in labels.items():
        if not key.startswith(GPU_LABEL):
            continue
        match = _GPU_KEY.fullmatch(key.removeprefix(GPU_LABEL))
        if match is None:
            continue
        known = found.get((match["vendor"], match["model"]), (0, "", ""))
        count = int(value) if value.isdigit() else 0
        found[match["vendor"], match["model"]] = (
            max(known[0], count),
            match["ram"] or known[1],
            match["interface"] or known[2],
        )
    if not found:
        return None
    (vendor, model), (_, memory, interface) = max(sorted(found.items()), key=lambda i: i[1][0])
    return GPUModel(vendor, model, memory, interface)


def node_of(obj: Obj, *, require_akash_label: bool = True) -> Node | None:
    """A Node object as the inventory sees it; None unless it may take workloads."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    labels: dict[str, str] = meta.get("labels") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    if (
        not ready
        or spec.get("unschedulable")
        or (require_akash_label and labels.get(AKASH_LABEL) != "true")
    ):
        return None
    classes = frozenset(
        key.removeprefix(STORAGE_LABEL)
        for key, value in labels.items()
        if key.startswith(STORAGE_LABEL) and value in ("1", "true")
    )
    return Node(
        name=meta["name"],
        allocatable=capacity_of(status.get("allocatable") or {}),
        gpu_model=gpu_model(labels),
        storage_classes=classes,
    )


def pod_use(obj: Obj) -> tuple[str, Capacity] | None:
    """(node, requests) of a pod that holds resources on a node (:mod:`akkube.pods`);
    None for any other."""
    found = pods.pod_use(obj)
    return None if found is None else (found[0], _capacity(found[1]))


def uid_of(obj: Obj) -> str:
    return str(obj["metadata"]["uid"])


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])
