"""Discovery: the cluster's inventory, and the node labels that announce it, from the JSON
of its nodes, pods, persistent volume claims and storage classes.

Rules (Akash's inventory operator, with its quirks fixed):

- a node is offered unless it is NotReady, cordoned (``spec.unschedulable``) or excluded by
  the configuration; each excluded node is listed with the reason;
- it offers its ``status.allocatable`` (cpu, memory, ephemeral-storage, and GPUs as the
  device plugins count them: ``nvidia.com/gpu`` + ``amd.com/gpu``); its GPUs are named by
  :mod:`akoperators.domain.gpus`;
- a pod takes what the scheduler reserves for it while it is bound to a node and not
  finished (Go counts finished pods until they are deleted): the larger of its containers'
  and its init containers' requests (sidecars included), plus overhead and memory-backed
  emptyDir size limits;
- a storage pool (class) has the configured size and is reported while its StorageClass
  exists; claims of that class (the default class for claims naming none) use it; a node
  supports the pools configured for it (all, unless the configuration narrows it).

Labels: each offered node carries ``akash.network=true``,
``akash.network/capabilities.storage.class.<class>=1`` and, per GPU kind,
``akash.network/capabilities.gpu.vendor.<v>.model.<m>`` plus its ``.ram.<size>`` and
``.interface.<iface>`` variants, valued the GPU count; an excluded node carries none. The
operator owns ``akash.network`` and every ``akash.network/capabilities.*`` key, and no
other (``akash.network/role=ingress``, set by hand, is left alone).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any

from akoperators.domain.gpus import GPURegistry, node_gpus, unknown_products
from aktypes.events import (
    Amounts,
    ExcludedNode,
    GPUInfo,
    InventoryCluster,
    NodeInventory,
    StorageInventory,
)

Obj = dict[str, Any]

AKASH_LABEL = "akash.network"
CAPABILITIES = "akash.network/capabilities."
STORAGE_LABEL = CAPABILITIES + "storage.class."
GPU_LABEL = CAPABILITIES + "gpu.vendor."
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
FINISHED = frozenset({"Succeeded", "Failed"})
NOT_READY, CORDONED, CONFIGURED = "not ready", "cordoned", "excluded by configuration"

_QUANTITY = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?"
)
_SCALE = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15, "E": Decimal(10) ** 18, "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}  # fmt: skip
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")


def parse_quantity(text: object) -> Decimal:
    """A Kubernetes quantity (``7500m``, ``32Gi``, ``1e3``) as an exact Decimal;
    ValueError if the API server would not take it."""
    match = _QUANTITY.fullmatch(str(text).strip())
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
        return Decimal(number) * _SCALE[suffix]
    except (InvalidOperation, OverflowError):
        raise ValueError(f"{text!r} is not a Kubernetes quantity") from None


def _amount(resources: Mapping[str, Any], name: str, scale: int = 1) -> int:
    """A resource as a whole number (rounded up, as Quantity.Value does); 0 if unusable."""
    value = resources.get(name)
    if value is None:
        return 0
    try:
        amount = parse_quantity(value) * scale
    except ValueError:
        return 0
    return max(int(amount.to_integral_value(ROUND_CEILING)), 0)


@dataclass(frozen=True)
class Use:
    """Resources in whole units: millicpu, bytes, bytes, GPU units."""

    cpu: int = 0
    memory: int = 0
    ephemeral: int = 0
    gpu: int = 0

    def __add__(self, other: Use) -> Use:
        return Use(
            self.cpu + other.cpu,
            self.memory + other.memory,
            self.ephemeral + other.ephemeral,
            self.gpu + other.gpu,
        )

    def most(self, other: Use) -> Use:
        return Use(
            max(self.cpu, other.cpu),
            max(self.memory, other.memory),
            max(self.ephemeral, other.ephemeral),
            max(self.gpu, other.gpu),
        )

    def amounts(self) -> Amounts:
        return Amounts(cpu=self.cpu, memory=self.memory, ephemeral=self.ephemeral, gpu=self.gpu)


def use_of(resources: Mapping[str, Any]) -> Use:
    """A Kubernetes resource list (``allocatable``, ``requests``…) as a Use."""
    return Use(
        cpu=_amount(resources, "cpu", 1000),
        memory=_amount(resources, "memory"),
        ephemeral=_amount(resources, "ephemeral-storage"),
        gpu=sum(_amount(resources, name) for name in GPU_RESOURCES),
    )


def _asked(container: Mapping[str, Any]) -> Use:
    """A container's requests; its limits stand in for those it leaves out, as the API
    server's defaulting makes them."""
    resources = container.get("resources") or {}
    return use_of({**(resources.get("limits") or {}), **(resources.get("requests") or {})})


def pod_requests(pod: Mapping[str, Any]) -> Use:
    """What the scheduler reserves for a pod, plus memory-backed emptyDir size limits.

    Containers add up; an init container runs alone (with the sidecars started before it),
    so the pod needs the larger of the two; sidecars (init containers that restart
    ``Always``) run throughout; the runtime class's ``overhead`` comes on top.
    """
    spec = pod.get("spec") or {}
    total = sum((_asked(c) for c in spec.get("containers") or []), Use())
    sidecars = init_peak = Use()
    for container in spec.get("initContainers") or []:
        asked = _asked(container)
        if container.get("restartPolicy") == "Always":
            total += asked
            sidecars += asked
            asked = sidecars
        else:
            asked += sidecars
        init_peak = init_peak.most(asked)
    total = total.most(init_peak) + use_of(spec.get("overhead") or {})
    in_memory = sum(
        _amount(volume["emptyDir"], "sizeLimit")
        for volume in spec.get("volumes") or []
        if (volume.get("emptyDir") or {}).get("medium") == "Memory"
    )
    return total + Use(memory=in_memory)


def pod_use(pod: Mapping[str, Any]) -> tuple[str, Use] | None:
    """(node, requests) of a pod that holds resources on a node; None for any other."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("status") or {}).get("phase") in FINISHED:
        return None
    return str(node), pod_requests(pod)


def claim_of(pvc: Mapping[str, Any]) -> tuple[str | None, int]:
    """(storage class, bytes) of a claim: the larger of its request and what it was given.
    The class is None when the claim names none (the default class applies)."""
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    size = max(
        _amount((spec.get("resources") or {}).get("requests") or {}, "storage"),
        _amount(status.get("capacity") or {}, "storage"),
    )
    return spec.get("storageClassName"), size


def is_default_class(storage_class: Mapping[str, Any]) -> bool:
    annotations = (storage_class.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(DEFAULT_CLASS) == "true")


@dataclass(frozen=True)
class InventoryConfig:
    """What the provider's operator configured (``AP_INVENTORY_*``)."""

    exclude: tuple[re.Pattern[str], ...] = ()  # node names (full match)
    pools: Mapping[str, int] = field(default_factory=dict)  # storage class -> bytes
    node_storage: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = ()  # first match wins

    def excluded(self, node: str) -> bool:
        return any(pattern.fullmatch(node) for pattern in self.exclude)

    def classes_for(self, node: str) -> frozenset[str]:
        for pattern, classes in self.node_storage:
            if pattern.fullmatch(node):
                return classes
        return frozenset(self.pools)


def exclusion(node: Mapping[str, Any], config: InventoryConfig) -> str | None:
    """Why a node is not offered; None when it is."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    if config.excluded(str(meta.get("name", ""))):
        return CONFIGURED
    conditions = (node.get("status") or {}).get("conditions") or []
    if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
        return NOT_READY
    if spec.get("unschedulable"):
        return CORDONED
    return None


@dataclass(frozen=True)
class Discovery:
    """One look at the cluster: the inventory, the labels each node should carry (none on
    an excluded node), and what cannot be offered (keyed, so each is told once)."""

    cluster: InventoryCluster
    labels: dict[str, dict[str, str]]
    problems: dict[str, str] = field(default_factory=dict)


def build(
    nodes: Iterable[Mapping[str, Any]],
    used: Mapping[str, Use],
    claims: Iterable[tuple[str | None, int]],
    classes: Mapping[str, bool],
    *,
    config: InventoryConfig,
    registry: GPURegistry,
) -> Discovery:
    """The inventory from nodes (JSON), what pods use per node, claims as (class, bytes),
    and the storage classes that exist (name -> is the default)."""
    default = next((name for name, is_default in sorted(classes.items()) if is_default), None)
    claimed: dict[str, int] = {}
    for named, size in claims:
        cls = default if named is None else named
        if cls:
            claimed[cls] = claimed.get(cls, 0) + size
    pools = {cls: size for cls, size in config.pools.items() if cls in classes}
    storage = [
        StorageInventory(storage_class=cls, capacity=size, allocated=claimed.get(cls, 0))
        for cls, size in sorted(pools.items())
    ]
    offered: list[NodeInventory] = []
    excluded: list[ExcludedNode] = []
    labels: dict[str, dict[str, str]] = {}
    problems: dict[str, str] = {}
    for node in sorted(nodes, key=lambda n: str(n["metadata"]["name"])):
        name = str(node["metadata"]["name"])
        reason = exclusion(node, config)
        labels[name] = {}
        if reason is not None:
            excluded.append(ExcludedNode(name=name, reason=reason))
            continue
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        units = {resource: _amount(allocatable, resource) for resource in GPU_RESOURCES}
        node_labels_now = (node.get("metadata") or {}).get("labels") or {}
        gpus = node_gpus(name, node_labels_now, units, registry)
        for problem in gpus.problems:
            problems[f"gpu:{problem}"] = problem
        inventory = NodeInventory(
            name=name,
            allocatable=use_of(allocatable).amounts(),
            allocated=used.get(name, Use()).amounts(),
            gpus=sorted(gpus.gpus, key=lambda g: (g.vendor, g.model)),
            storage_classes=sorted(config.classes_for(name) & pools.keys()),
        )
        offered.append(inventory)
        labels[name], skipped = node_labels(inventory)
        for key in skipped:
            problems[f"label:{key}"] = f"node {name}: label {key} is too long to write; skipped"
    cluster = InventoryCluster(
        nodes=offered,
        storage=storage,
        excluded=excluded,
        unknown_gpus=unknown_products(g for n in offered for g in n.gpus),
    )
    return Discovery(cluster, labels, problems)


def discover(
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    claims: Iterable[Mapping[str, Any]],
    storage_classes: Iterable[Mapping[str, Any]],
    *,
    config: InventoryConfig,
    registry: GPURegistry,
) -> Discovery:
    """:func:`build` from the JSON of every node, pod, claim and storage class."""
    used: dict[str, Use] = {}
    for pod in pods:
        found = pod_use(pod)
        if found is not None:
            used[found[0]] = used.get(found[0], Use()) + found[1]
    return build(
        nodes,
        used,
        [claim_of(c) for c in claims],
        {str(c["metadata"]["name"]): is_default_class(c) for c in storage_classes},
        config=config,
        registry=registry,
    )


def gpu_labels(gpu: GPUInfo) -> dict[str, str]:
    """A GPU kind's capability labels, each valued the count."""
    base = f"{GPU_LABEL}{gpu.vendor}.model.{gpu.model}"
    keys = [base]
    if gpu.memory:
        keys.append(f"{base}.ram.{gpu.memory}")
    if gpu.interface:
        keys.append(f"{base}.interface.{gpu.interface}")
    return dict.fromkeys(keys, str(gpu.count))


def node_labels(node: NodeInventory) -> tuple[dict[str, str], list[str]]:
    """The labels an offered node carries, and those too long for a label key (skipped)."""
    wanted = {AKASH_LABEL: "true"}
    wanted.update((f"{STORAGE_LABEL}{cls}", "1") for cls in node.storage_classes)
    for gpu in node.gpus:
        if gpu.count > 0:
            wanted.update(gpu_labels(gpu))
    labels, skipped = {}, []
    for key, value in wanted.items():
        if _LABEL_NAME.fullmatch(key.rpartition("/")[2]):
            labels[key] = value
        else:
            skipped.append(key)
    return labels, skipped


def owned(key: str) -> bool:
    """Is ``key`` one of the labels the operator decides?"""
    return key == AKASH_LABEL or key.startswith(CAPABILITIES)


def label_patch(current: Mapping[str, str], wanted: Mapping[str, str]) -> dict[str, str | None]:
    """The merge patch of ``metadata.labels`` that makes the owned labels ``wanted``
    (null removes one); empty when they already are."""
    patch: dict[str, str | None] = {
        key: None for key in current if owned(key) and key not in wanted
    }
    patch.update((key, value) for key, value in wanted.items() if current.get(key) != value)
    return patch


def node_changes(
    before: Sequence[NodeInventory], after: Sequence[NodeInventory]
) -> tuple[list[NodeInventory], list[str]]:
    """Nodes added or different, and names of nodes gone, from ``before`` to ``after``."""
    old = {n.name: n for n in before}
    new = {n.name for n in after}
    changed = [n for n in after if old.get(n.name) != n]
    return changed, sorted(set(old) - new)


def same(a: InventoryCluster, b: InventoryCluster) -> bool:
    """The same picture of the cluster, whatever the generation."""
    return a.model_copy(update={"generation": 0}) == b.model_copy(update={"generation": 0})
