"""The cluster's capacity as reservations see it: nodes, their GPUs, and storage pools.

An :class:`Inventory` is a snapshot of the inventory operator's ``inventory.cluster``
(:func:`from_operator`; the ``kube`` backend) or of a nodes file (the ``null`` backend): per node
what Kubernetes lets pods use (``allocatable``) and what pods already request
(``allocated``); per persistent storage class a cluster-wide pool. Reservations are
subtracted from it elsewhere (:mod:`akcluster.domain.placement`); this module only
describes capacity and adds it up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from aktypes.events import Amounts, InventoryCluster, ResourceTotals


@dataclass(frozen=True)
class Capacity:
    """CPU in millicpu, memory and ephemeral storage in bytes, GPUs in units."""

    cpu: int = 0
    memory: int = 0
    ephemeral: int = 0
    gpu: int = 0

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity(
            self.cpu + other.cpu,
            self.memory + other.memory,
            self.ephemeral + other.ephemeral,
            self.gpu + other.gpu,
        )

    def __sub__(self, other: Capacity) -> Capacity:
        """What is left; never below zero (pods may request more than a node reports)."""
        return Capacity(
            max(self.cpu - other.cpu, 0),
            max(self.memory - other.memory, 0),
            max(self.ephemeral - other.ephemeral, 0),
            max(self.gpu - other.gpu, 0),
        )

    def covers(self, other: Capacity) -> bool:
        return (
            self.cpu >= other.cpu
            and self.memory >= other.memory
            and self.ephemeral >= other.ephemeral
            and self.gpu >= other.gpu
        )

    def shortfall(self, wanted: Capacity) -> list[str]:
        """The parts of ``wanted`` this capacity does not cover, named for people."""
        parts = (
            ("cpu", self.cpu, wanted.cpu),
            ("memory", self.memory, wanted.memory),
            ("ephemeral storage", self.ephemeral, wanted.ephemeral),
            ("gpu", self.gpu, wanted.gpu),
        )
        return [name for name, have, want in parts if want > have]


@dataclass(frozen=True)
class GPUModel:
    """The GPU model a node carries (Akash labels: vendor, model, memory size, interface)."""

    vendor: str
    model: str
    memory: str = ""  # e.g. "80Gi"
    interface: str = ""  # e.g. "pcie", "sxm"


@dataclass(frozen=True)
class Node:
    name: str
    allocatable: Capacity
    allocated: Capacity = Capacity()
    gpu_model: GPUModel | None = None
    storage_classes: frozenset[str] = frozenset()

    @property
    def available(self) -> Capacity:
        return self.allocatable - self.allocated


@dataclass(frozen=True)
class StoragePool:
    """A cluster-wide persistent storage class: its size and what volumes already claim."""

    capacity: int
    allocated: int = 0

    @property
    def available(self) -> int:
        return max(self.capacity - self.allocated, 0)


@dataclass(frozen=True)
class Inventory:
    nodes: tuple[Node, ...] = ()
    storage: Mapping[str, StoragePool] = field(default_factory=dict)

    def node(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    def allocatable(self) -> ResourceTotals:
        total = sum((n.allocatable for n in self.nodes), Capacity())
        return _totals(total, {c: p.capacity for c, p in self.storage.items()})

    def available(self) -> ResourceTotals:
        total = sum((n.available for n in self.nodes), Capacity())
        return _totals(total, {c: p.available for c, p in self.storage.items()})


def _totals(capacity: Capacity, storage: Mapping[str, int]) -> ResourceTotals:
    return ResourceTotals(
        cpu=capacity.cpu,
        gpu=capacity.gpu,
        memory=capacity.memory,
        storage_ephemeral=capacity.ephemeral,
        storage=dict(storage),
    )


def from_operator(cluster: InventoryCluster) -> Inventory:
    """The inventory operator's picture (``inventory.cluster``) as reservations see it: per
    node its allocatable and allocated amounts, the GPU model it offers most of, its storage
    classes; the storage pools."""
    nodes = []
    for node in cluster.nodes:
        gpu = max(node.gpus, key=lambda g: (g.count, g.vendor, g.model), default=None)
        nodes.append(
            Node(
                name=node.name,
                allocatable=_capacity(node.allocatable),
                allocated=_capacity(node.allocated),
                gpu_model=(
                    GPUModel(gpu.vendor, gpu.model, gpu.memory, gpu.interface)
                    if gpu is not None and gpu.count > 0
                    else None
                ),
                storage_classes=frozenset(node.storage_classes),
            )
        )
    storage = {s.storage_class: StoragePool(s.capacity, s.allocated) for s in cluster.storage}
    return Inventory(tuple(sorted(nodes, key=lambda n: n.name)), storage)


def _capacity(amounts: Amounts) -> Capacity:
    return Capacity(amounts.cpu, amounts.memory, amounts.ephemeral, amounts.gpu)
