"""Discovery: the cluster's inventory, and the node labels that announce it, from the JSON
of its nodes, pods, persistent volume claims and storage classes.

Rules (Akash's inventory operator, with its quirks fixed):

- a node is offered unless it is NotReady, cordoned (``spec.unschedulable``) or excluded by
  the configuration; each excluded node is listed with the reason;
- it offers its ``status.allocatable`` (cpu, memory, ephemeral-storage, and GPUs as the
  device plugins count them: ``nvidia.com/gpu`` + ``amd.com/gpu``); its GPUs are named by
  :mod:`akoperators.domain.gpus`;
- a pod takes what the scheduler reserves for it while it is bound to a node and not
  finished (:mod:`akkube.pods`, which reads claims and storage classes too);
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
from typing import Any

from akkube.pods import GPU_RESOURCES, Use, claim_of, is_default_class, pod_use, use_of
from akkube.quantity import amount
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
NOT_READY, CORDONED, CONFIGURED = "not ready", "cordoned", "excluded by configuration"

_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def amounts(use: Use) -> Amounts:
    """Resources in whole units as the inventory event carries them."""
    return Amounts(cpu=use.cpu, memory=use.memory, ephemeral=use.ephemeral, gpu=use.gpu)


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
        units = {resource: amount(allocatable, resource) for resource in GPU_RESOURCES}
        node_labels_now = (node.get("metadata") or {}).get("labels") or {}
        gpus = node_gpus(name, node_labels_now, units, registry)
        for problem in gpus.problems:
            problems[f"gpu:{problem}"] = problem
        inventory = NodeInventory(
            name=name,
            allocatable=amounts(use_of(allocatable)),
            allocated=amounts(used.get(name, Use())),
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
