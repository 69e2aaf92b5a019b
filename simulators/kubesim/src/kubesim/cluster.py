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
  - name: gpu-raw
    akash-labels: false      # as before the inventory operator has run
    gpus: {model: a100, count: 2, replicas: 4, memory: 80Gi, interface: sxm}
```

By default nodes carry the labels a real provider cluster has once its inventory operator
and GPU feature discovery have run: `kubernetes.io/hostname`, `nvidia.com/gpu.product` and
friends, and Akash's `akash.network/capabilities.*` labels, so that node affinity written
for a real cluster schedules the same way here.

A node with `akash-labels: false` carries only what a real cluster's GPU feature discovery,
device plugin and node feature discovery set — `nvidia.com/gpu.product` as GFD names the
card (`NVIDIA-A100-SXM4-80GB`, or the GPU's `product`), `nvidia.com/gpu.memory` (MiB),
`gpu.count` (physical cards), `gpu.replicas`, `gpu.sharing-strategy`,
`feature.node.kubernetes.io/pci-10de.present` (AMD: `amd.com/gpu.product-name`,
`amd.com/gpu.vram`, `pci-1002`) — and waits for an inventory operator to label it.

`replicas` time-slices each GPU: the device plugin offers `count × replicas` units
(`nvidia.com/gpu` allocatable) and GFD appends `-SHARED` to the product name.
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
    count: int = Field(ge=1)  # physical cards
    memory: str | None = None
    interface: Literal["pcie", "sxm"] | None = None
    replicas: int = Field(1, ge=1, le=1024)  # time-slicing: device plugin units per card
    product: str | None = None  # the name GPU feature discovery reports (default: derived)

    @property
    def units(self) -> int:
        """What the device plugin offers: every card shared into its replicas."""
        return self.count * self.replicas

    def product_name(self) -> str:
        """The card's name as GFD (NVIDIA) or AMD's node labeller reports it."""
        if self.product:
            return self.product
        if self.vendor == "amd":
            return f"AMD_Instinct_{self.model.upper()}"
        name = f"NVIDIA-{self.model.upper()}"
        if self.interface:
            name += "-SXM4" if self.interface == "sxm" else "-PCIE"
        if self.memory:
            name += f"-{round(quantity.parse(self.memory) / 2**30)}GB"
        return name

    def akash_labels(self) -> dict[str, str]:
        """Akash's capability labels, as the inventory operator writes them."""
        base = f"akash.network/capabilities.gpu.vendor.{self.vendor}.model.{self.model}"
        count = str(self.units)
        labels = {base: count}
        if self.memory:
            labels[f"{base}.ram.{self.memory}"] = count
        if self.interface:
            labels[f"{base}.interface.{self.interface}"] = count
        return labels

    def discovery_labels(self, *, akash: bool) -> dict[str, str]:
        """What GPU feature discovery (or AMD's labeller) and NFD set; with ``akash`` the
        short form kubesim has always written beside Akash's labels."""
        vendor = "nvidia.com" if self.vendor == "nvidia" else "amd.com"
        mib = str(int(quantity.parse(self.memory) / 2**20)) if self.memory else ""
        if akash:
            labels = {
                f"{vendor}/gpu.present": "true",
                f"{vendor}/gpu.product": self.product or self.model,
                f"{vendor}/gpu.count": str(self.count),
            }
            if mib:
                labels[f"{vendor}/gpu.memory"] = mib
        elif self.vendor == "amd":
            labels = {
                "amd.com/gpu.product-name": self.product_name(),
                "amd.com/gpu.count": str(self.count),
                "feature.node.kubernetes.io/pci-1002.present": "true",
            }
            if self.memory:
                labels["amd.com/gpu.vram"] = f"{round(quantity.parse(self.memory) / 2**30)}G"
        else:
            shared = self.replicas > 1
            labels = {
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": self.product_name() + ("-SHARED" if shared else ""),
                "nvidia.com/gpu.count": str(self.count),
                "nvidia.com/gpu.replicas": str(self.replicas),
                "nvidia.com/gpu.sharing-strategy": "time-slicing" if shared else "none",
                "feature.node.kubernetes.io/pci-10de.present": "true",
            }
            if mib:
                labels["nvidia.com/gpu.memory"] = mib
        if akash and self.replicas > 1:
            labels[f"{vendor}/gpu.replicas"] = str(self.replicas)
        return labels


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
    akash_labels: bool = Field(True, alias="akash-labels")  # false: no inventory operator yet

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
        }
        if self.akash_labels:
            labels["akash.network"] = "true"
            for cls in self.storage_classes:
                labels[f"akash.network/capabilities.storage.class.{cls}"] = "1"
            if self.gpus is not None:
                labels.update(self.gpus.akash_labels())
        if self.gpus is not None:
            labels.update(self.gpus.discovery_labels(akash=self.akash_labels))
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
            found[vendor] = str(self.gpus.units)
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
