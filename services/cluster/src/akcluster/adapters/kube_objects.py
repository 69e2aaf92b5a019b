"""Reading Kubernetes objects for the inventory: quantities, pod requests, nodes, claims.

Pure functions over the JSON of nodes, pods, persistent volume claims and storage classes,
as the ``kube`` inventory backend (:mod:`akcluster.adapters.kube`) receives them from the
API: what a node offers, what a pod takes (as the scheduler counts it), which GPU model and
storage classes the inventory operator's labels announce, what a claim uses.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

import kubernetes

from akcluster.domain.inventory import Capacity, GPUModel, Node

log = logging.getLogger("akcluster.kube")

AKASH_LABEL = "akash.network"
STORAGE_LABEL = "akash.network/capabilities.storage.class."
GPU_LABEL = "akash.network/capabilities.gpu.vendor."
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
FINISHED = frozenset({"Succeeded", "Failed"})

# <vendor>.model.<model>[.ram.<size>][.interface.<interface>], after GPU_LABEL
_GPU_KEY = re.compile(
    r"(?P<vendor>[^.]+)\.model\.(?P<model>.+?)"
    r"(?:\.ram\.(?P<ram>[^.]+))?(?:\.interface\.(?P<interface>[^.]+))?"
)
# What resource.ParseQuantity accepts: a decimal number, then a binary or decimal SI suffix
# or a decimal exponent. kubernetes.utils.parse_quantity computes every such value exactly
# but also takes what the API server refuses ("1K", "NaN", "1_000"), hence the check first.
_QUANTITY = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?"
)

Obj = dict[str, Any]


def parse_quantity(text: object) -> Decimal:
    """A Kubernetes quantity ("7500m", "32Gi", "1e3") as an exact Decimal; ValueError if
    the API server would not take it."""
    return _parse_quantity(str(text).strip())


@functools.lru_cache(maxsize=1024)
def _parse_quantity(value: str) -> Decimal:
    """Remembered: the same few quantities come back in every pod of a big cluster."""
    if _QUANTITY.fullmatch(value) is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    parsed: Decimal = kubernetes.utils.parse_quantity(value)  # type: ignore[no-untyped-call]
    return parsed


def _amount(resources: Mapping[str, Any], name: str, scale: int = 1) -> int:
    """A resource as a whole number (rounded up, as Quantity.Value does); 0 if unusable."""
    value = resources.get(name)
    if value is None:
        return 0
    try:
        amount = parse_quantity(value) * scale
    except ValueError:
        log.warning("ignoring resource %s: %s", name, value, extra={"resource": name})
        return 0
    return max(int(amount.to_integral_value(ROUND_CEILING)), 0)


def capacity_of(resources: Mapping[str, Any]) -> Capacity:
    """A Kubernetes resource list (``allocatable``, ``requests``…) as a Capacity."""
    return Capacity(
        cpu=_amount(resources, "cpu", 1000),
        memory=_amount(resources, "memory"),
        ephemeral=_amount(resources, "ephemeral-storage"),
        gpu=sum(_amount(resources, name) for name in GPU_RESOURCES),
    )


def _most(a: Capacity, b: Capacity) -> Capacity:
    return Capacity(
        max(a.cpu, b.cpu), max(a.memory, b.memory), max(a.ephemeral, b.ephemeral), max(a.gpu, b.gpu)
    )


def _asked(container: Mapping[str, Any]) -> Capacity:
    """A container's requests; its limits stand in for those it leaves out, as the API
    server's defaulting makes them."""
    resources = container.get("resources") or {}
    return capacity_of({**(resources.get("limits") or {}), **(resources.get("requests") or {})})


def pod_requests(pod: Mapping[str, Any]) -> Capacity:
    """What the scheduler reserves for a pod, plus memory-backed emptyDir size limits.

    Containers add up; an init container runs alone (with the sidecars started before it),
    so the pod needs the larger of the two; sidecars (init containers that restart
    ``Always``) run throughout; the runtime class's ``overhead`` comes on top.
    """
    spec = pod.get("spec") or {}
    total = sum((_asked(c) for c in spec.get("containers") or []), Capacity())
    sidecars = init_peak = Capacity()
    for container in spec.get("initContainers") or []:
        asked = _asked(container)
        if container.get("restartPolicy") == "Always":
            total += asked
            sidecars += asked
            asked = sidecars
        else:
            asked += sidecars
        init_peak = _most(init_peak, asked)
    total = _most(total, init_peak) + capacity_of(spec.get("overhead") or {})
    in_memory = sum(
        _amount(volume["emptyDir"], "sizeLimit")
        for volume in spec.get("volumes") or []
        if (volume.get("emptyDir") or {}).get("medium") == "Memory"
    )
    return total + Capacity(memory=in_memory)


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
    """(node, requests) of a pod that holds resources on a node; None for any other."""
    node = (obj.get("spec") or {}).get("nodeName")
    if not node or (obj.get("status") or {}).get("phase") in FINISHED:
        return None
    return node, pod_requests(obj)


def claim_of(obj: Obj) -> tuple[str | None, int]:
    """(storage class, bytes) of a claim: the larger of its request and what it was given.
    The class is None when the claim names none (the default class applies)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    size = max(
        _amount((spec.get("resources") or {}).get("requests") or {}, "storage"),
        _amount(status.get("capacity") or {}, "storage"),
    )
    return spec.get("storageClassName"), size


def is_default_class(obj: Obj) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(DEFAULT_CLASS) == "true")


def uid_of(obj: Obj) -> str:
    return str(obj["metadata"]["uid"])


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])
