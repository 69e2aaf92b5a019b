"""The ``null`` inventory backend: a cluster described by a YAML file, for runs without one.

The file uses kubesim's node format plus the cluster's storage pools::

    nodes:
      - name: solo
        cpu: "5"
        memory: 32Gi
        ephemeral-storage: 512Gi
        storage-classes: [beta2]
        gpus: {vendor: nvidia, model: a100, count: 2, memory: 80Gi, interface: pcie}
    storage:
      beta2: 512Gi

Without a file the cluster is the Go provider's null inventory: one node ``solo`` with
5 CPU, 2 GPUs, 32 GiB of memory and 512 GiB of ephemeral storage, and a 512 GiB ``beta2``
pool. Nothing is ever deployed on it, so nothing is ever allocated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from akcluster.domain.inventory import Capacity, GPUModel, Inventory, Node, StoragePool
from akcluster.errors import InventoryFileError
from aktypes.errors import InvalidQuantityError
from aktypes.quantity import parse_bytes, parse_cpu


def _bytes(value: Any) -> int:
    try:
        return parse_bytes(str(value)).value
    except InvalidQuantityError as exc:
        raise ValueError(str(exc)) from exc


class _GPUs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    vendor: str = "nvidia"
    model: str
    count: Annotated[int, Field(ge=1)]
    memory: str = ""
    interface: str = ""


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: Annotated[str, Field(min_length=1)]
    cpu: int
    memory: int
    ephemeral_storage: int = Field(default=0, alias="ephemeral-storage")
    storage_classes: list[str] = Field(default_factory=list, alias="storage-classes")
    gpus: _GPUs | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    pods: int | None = None

    @field_validator("cpu", mode="before")
    @classmethod
    def _cpu(cls, value: Any) -> int:
        try:
            return parse_cpu(str(value)).value
        except InvalidQuantityError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("memory", "ephemeral_storage", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return _bytes(value)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodes: Annotated[list[_Node], Field(min_length=1)]
    storage: dict[str, int] = Field(default_factory=dict)

    @field_validator("storage", mode="before")
    @classmethod
    def _pools(cls, value: Any) -> dict[str, int]:
        if not isinstance(value, dict):
            raise ValueError("must be a mapping of storage class to size")
        return {str(k): _bytes(v) for k, v in value.items()}


SOLO = Inventory(
    nodes=(
        Node(
            name="solo",
            allocatable=Capacity(cpu=5000, memory=32 * 2**30, ephemeral=512 * 2**30, gpu=2),
            gpu_model=GPUModel(vendor="nvidia", model="a100", memory="80Gi", interface="pcie"),
            storage_classes=frozenset({"beta2"}),
        ),
    ),
    storage={"beta2": StoragePool(capacity=512 * 2**30)},
)


def parse_inventory(text: str, where: str = "inventory file") -> Inventory:
    """An inventory from the YAML text of a nodes file; one clear error when it is wrong."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InventoryFileError(f"{where} is not valid YAML: {exc}") from exc
    try:
        parsed = _File.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
        )
        raise InventoryFileError(f"{where}: {problems}") from exc
    nodes = []
    for node in parsed.nodes:
        gpus = node.gpus
        nodes.append(
            Node(
                name=node.name,
                allocatable=Capacity(
                    cpu=node.cpu,
                    memory=node.memory,
                    ephemeral=node.ephemeral_storage,
                    gpu=gpus.count if gpus else 0,
                ),
                gpu_model=GPUModel(gpus.vendor, gpus.model, gpus.memory, gpus.interface)
                if gpus
                else None,
                storage_classes=frozenset(node.storage_classes),
            )
        )
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise InventoryFileError(f"{where}: node names must be unique")
    pools = {cls: StoragePool(capacity=size) for cls, size in parsed.storage.items()}
    return Inventory(nodes=tuple(nodes), storage=pools)


def load_inventory(path: Path | None) -> Inventory:
    """The null backend's inventory: the file's, or the single ``solo`` node."""
    if path is None:
        return SOLO
    try:
        text = path.read_text()
    except OSError as exc:
        raise InventoryFileError(f"inventory file {path}: {exc.strerror or exc}") from exc
    return parse_inventory(text, f"inventory file {path}")
