"""What the inventory operator tells the rest of the provider about the cluster.

The operator publishes on ``akash.provider.inventory.events``: ``inventory.cluster`` (every
node and storage pool, whenever anything changes), ``inventory.nodes`` (only the nodes that
changed, and the names of those that left) and ``inventory.storage`` (the pools, when they
change). Its retained status (``akash.provider.inventory.status``) is the latest
``inventory.cluster``, so a reader that starts late has the whole picture at once.

Amounts are whole numbers: CPU in millicpu, memory and storage in bytes, GPUs in the units
the device plugin exposes (a time-sliced GPU counts as the replicas it is shared into).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aktypes.events.base import Count, Payload


class Amounts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    cpu: Count = 0  # millicpu
    memory: Count = 0
    ephemeral: Count = 0
    gpu: Count = 0


class GPUInfo(BaseModel):
    """A kind of GPU on a node, with Akash's names (``vendor``/``model``/``memory``/
    ``interface``, as in the ``akash.network/capabilities.gpu.*`` labels).

    ``count`` is what the node's device plugin exposes; ``physical`` the cards behind it
    (smaller when the GPU is time-sliced or shared into ``replicas``). ``product`` is what
    GPU feature discovery names it; ``known`` says whether the bundled or configured GPU
    registry recognised that name (an unknown model is still offered, under a name derived
    from the product, and reported so the operator can add it).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    vendor: str
    model: str
    memory: str = ""  # e.g. "80Gi"
    interface: str = ""  # "pcie" or "sxm"
    count: Count = 0
    physical: Count = 0
    replicas: Count = 1
    product: str = ""
    known: bool = True


class NodeInventory(BaseModel):
    """One schedulable node: what it offers, what its pods already take, what it carries."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str
    allocatable: Amounts = Amounts()
    allocated: Amounts = Amounts()
    gpus: list[GPUInfo] = Field(default_factory=list)
    storage_classes: list[str] = Field(default_factory=list)


class StorageInventory(BaseModel):
    """A cluster-wide persistent storage pool (one storage class)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    storage_class: str
    capacity: Count = 0
    allocated: Count = 0


class ExcludedNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str
    reason: str  # "not ready", "cordoned", "excluded by configuration"


class InventoryCluster(Payload):
    """The whole cluster as the inventory operator sees it."""

    type: Literal["inventory.cluster"] = "inventory.cluster"
    nodes: list[NodeInventory] = Field(default_factory=list)
    storage: list[StorageInventory] = Field(default_factory=list)
    excluded: list[ExcludedNode] = Field(default_factory=list)
    unknown_gpus: list[str] = Field(default_factory=list)  # products the registry lacks
    generation: Count = 0  # grows by one with every change the operator publishes


class InventoryNodes(Payload):
    """Nodes that changed (added or different) and the names of those that left."""

    type: Literal["inventory.nodes"] = "inventory.nodes"
    changed: list[NodeInventory] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    generation: Count = 0


class InventoryStorage(Payload):
    type: Literal["inventory.storage"] = "inventory.storage"
    storage: list[StorageInventory] = Field(default_factory=list)
    generation: Count = 0
