"""The simulated cluster's nodes, read from a YAML file, and the Node objects they become.

```yaml
nodes:
  - name: node-a
    cpu: "8"
    memory: 32Gi
    ephemeral-storage: 200Gi
    storage-classes: [beta2]
    gpus: {vendor: nvidia, model: a100, count: 2, memory: 80Gi, interface: sxm}
    labels: {zone: a}        # optional, added to the generated ones
```

Nodes carry the labels a real provider cluster has once its inventory operator and GPU
feature discovery have run: `kubernetes.io/hostname`, `nvidia.com/gpu.product` and friends,
and Akash's `akash.network/capabilities.*` labels, so that node affinity written for a real
cluster schedules the same way here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from kubesim import quantity
from kubesim.validation import is_dns_subdomain, label_causes


class GpuSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    vendor: Literal["nvidia", "amd"] = "nvidia"
    model: str
    count: int = Field(ge=1)
    memory: str | None = None
    interface: Literal["pcie", "sxm"] | None = None


class NodeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    name: str
    cpu: str = "8"
    memory: str = "32Gi"
    ephemeral_storage: str = Field("100Gi", alias="ephemeral-storage")
    storage_classes: tuple[str, ...] = Field((), alias="storage-classes")
    gpus: GpuSpec | None = None
    pods: int = Field(110, ge=0)
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not is_dns_subdomain(name):
            raise ValueError(
                f"{name!r} is not a valid node name: a lowercase RFC 1123 subdomain must "
                "consist of lower case alphanumeric characters, '-' or '.', and must start "
                "and end with an alphanumeric character"
            )
        return name

    @field_validator("storage_classes")
    @classmethod
    def _classes(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not is_dns_subdomain(name):
                raise ValueError(f"{name!r} is not a valid storage class name (a DNS subdomain)")
        return names

    @field_validator("cpu", "memory", "ephemeral_storage", mode="before")
    @classmethod
    def _quantity(cls, value: Any) -> str:
        text = str(value)
        try:
            amount = quantity.parse(text)
        except ValueError as exc:
            raise ValueError(f"{text!r}: {exc}") from None
        if amount < 0:
            raise ValueError(f"{text!r}: must not be negative")
        return text

    @model_validator(mode="after")
    def _labels(self) -> NodeSpec:
        """The labels a node gets, the generated ones included, must be valid labels."""
        causes = label_causes(self.node_labels())
        if causes:
            raise ValueError("; ".join(f"labels: {message}" for _, _, message in causes[:3]))
        return self

    def node_labels(self) -> dict[str, str]:
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "akash.network": "true",
        }
        for cls in self.storage_classes:
            labels[f"akash.network/capabilities.storage.class.{cls}"] = "1"
        if self.gpus is not None:
            gpu = self.gpus
            base = f"akash.network/capabilities.gpu.vendor.{gpu.vendor}.model.{gpu.model}"
            count = str(gpu.count)
            labels[base] = count
            if gpu.memory:
                labels[f"{base}.ram.{gpu.memory}"] = count
            if gpu.interface:
                labels[f"{base}.interface.{gpu.interface}"] = count
            vendor = "nvidia.com" if gpu.vendor == "nvidia" else "amd.com"
            labels[f"{vendor}/gpu.present"] = "true"
            labels[f"{vendor}/gpu.product"] = gpu.model
            labels[f"{vendor}/gpu.count"] = count
            if gpu.memory:
                labels[f"{vendor}/gpu.memory"] = str(int(quantity.parse(gpu.memory) / 2**20))
        labels.update(self.labels)
        return labels

    def resources(self) -> dict[str, str]:
        found = {
            "cpu": self.cpu,
            "memory": self.memory,
            "ephemeral-storage": self.ephemeral_storage,
            "pods": str(self.pods),
        }
        if self.gpus is not None:
            vendor = "nvidia.com/gpu" if self.gpus.vendor == "nvidia" else "amd.com/gpu"
            found[vendor] = str(self.gpus.count)
        return found

    def node_object(self, index: int, kubelet_version: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": self.node_labels()},
            "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
            "status": {
                "capacity": self.resources(),
                "allocatable": self.resources(),
                "addresses": [
                    {"type": "InternalIP", "address": f"10.0.0.{index + 10}"},
                    {"type": "Hostname", "address": self.name},
                ],
                "nodeInfo": {
                    "architecture": "amd64",
                    "operatingSystem": "linux",
                    "osImage": "kubesim",
                    "kernelVersion": "6.1.0-kubesim",
                    "containerRuntimeVersion": "containerd://1.7.0",
                    "kubeletVersion": kubelet_version,
                    "kubeProxyVersion": kubelet_version,
                    "machineID": "",
                    "systemUUID": "",
                    "bootID": "",
                },
                "conditions": [],
            },
        }


class ClusterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    nodes: tuple[NodeSpec, ...] = ()

    @field_validator("nodes")
    @classmethod
    def _unique(cls, nodes: tuple[NodeSpec, ...]) -> tuple[NodeSpec, ...]:
        names = [n.name for n in nodes]
        if len(names) != len(set(names)):
            raise ValueError(f"node names must be unique: {names}")
        return nodes

    @property
    def storage_classes(self) -> list[str]:
        return sorted({c for node in self.nodes for c in node.storage_classes})

    @classmethod
    def load(cls, path: Path) -> ClusterSpec:
        """Read a nodes file; ValueError says, on one line, which file and what is wrong."""
        try:
            data = yaml.safe_load(path.read_bytes())
        except OSError as exc:
            raise ValueError(f"cannot read nodes file {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise ValueError(
                f"{path}: not valid YAML: {' '.join(problem.split())}{where}"
            ) from None
        if data is None:
            raise ValueError(f'{path}: the file is empty; it needs a "nodes:" list')
        if not isinstance(data, dict):
            found = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
            raise ValueError(f'{path}: expected a mapping with a "nodes:" list, found {found}')
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'nodes'}: "
                f"{' '.join(e['msg'].removeprefix('Value error, ').split())}"
                for e in exc.errors()
            )
            raise ValueError(f"{path}: {problems}") from None


DEFAULT_CLUSTER = ClusterSpec(
    nodes=(
        NodeSpec(
            name="node-a",
            cpu="8",
            memory="32Gi",
            ephemeral_storage="200Gi",
            storage_classes=("beta2",),
        ),
        NodeSpec(
            name="node-b",
            cpu="8",
            memory="32Gi",
            ephemeral_storage="200Gi",
            storage_classes=("beta2",),
        ),
    )
)
