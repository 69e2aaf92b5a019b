"""GPU names: what a node's GPU discovery reports, as Akash names the model.

Akash bids, prices and places GPUs by ``vendor``/``model``/``memory``/``interface``
(``nvidia``/``a100``/``80Gi``/``sxm``). A node only says what NVIDIA's GPU feature
discovery (``nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB``), AMD's node labeller
(``amd.com/gpu.product-name``) or NFD (``feature.node.kubernetes.io/pci-10de_20b2.present``)
found; the registry maps those names and PCI ids to Akash's. It is a YAML file::

    version: v1
    gpus:
      - vendor: nvidia
        model: a100
        memory: 80Gi
        interface: sxm
        products: ["a100-sxm4-80gb"]    # GFD product names (or their ends): globs
        pci: ["10de:20b2"]              # vendor:device, for nodes with NFD but no GFD

The bundled one (``akoperators/gpus.yaml``) knows the common cards; a file of the operator's
own (``AP_INVENTORY_GPU_REGISTRY``) is consulted first, so a new model needs no release.
A product no entry matches is still offered, under a name derived from the product
(``NVIDIA-GeForce-RTX-5090`` → ``rtx5090``) with ``known=False``, rather than dropped: the
Go operator's users waited for registry releases (provider-configs#27, #37, #39).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from aktypes.events import GPUInfo

VENDOR_IDS = {"nvidia": "10de", "amd": "1002"}
RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
NFD_PCI = "feature.node.kubernetes.io/pci-"
GPU_CLASSES = frozenset({"0300", "0302", "0380"})  # VGA, 3D, other display controllers
MAX_DERIVED = 17  # model names this long keep `…model.<m>.ram.<size>` a valid label key

_SHARED = re.compile(r"-shared$", re.IGNORECASE)
_NOISE = frozenset(
    {"nvidia", "amd", "ati", "geforce", "tesla", "radeon", "instinct", "gpu", "graphics"}
)
_DETAIL = re.compile(r"\d+gb?|sxm\d*|pcie|hbm\d*e?|oam")
_HEX4 = re.compile(r"[0-9a-f]{4}")


class RegistryError(ValueError):
    """A registry file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class GPUModel:
    """A GPU as Akash names it."""

    vendor: str
    model: str
    memory: str = ""
    interface: str = ""


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    vendor: str = Field(pattern=r"^[a-z0-9]+$")
    model: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=40)
    memory: str = Field(default="", pattern=r"^([0-9]+(Mi|Gi|Ti))?$")
    interface: Literal["", "pcie", "sxm"] = ""
    products: list[str] = Field(default_factory=list)
    pci: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _matchable(self) -> _Entry:
        if not self.products and not self.pci:
            raise ValueError("an entry needs `products` or `pci` to be recognised by")
        for pci in self.pci:
            if re.fullmatch(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}", pci) is None:
                raise ValueError(f"pci {pci!r} is not vendor:device in hex (10de:20b2)")
        return self


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal["v1"] = "v1"
    gpus: list[_Entry] = Field(default_factory=list)


@dataclass(frozen=True)
class RegistryEntry:
    gpu: GPUModel
    products: tuple[str, ...]  # lowercase globs
    pci: tuple[str, ...]  # lowercase vendor:device


class GPURegistry:
    """Product names and PCI ids → Akash's GPU names; the first matching entry wins."""

    def __init__(self, entries: Sequence[RegistryEntry] = ()) -> None:
        self.entries = tuple(entries)
        self._pci = {}
        for entry in reversed(self.entries):  # the first entry naming an id wins
            for pci in entry.pci:
                self._pci[pci] = entry.gpu

    @classmethod
    def parse(cls, data: object, source: str) -> GPURegistry:
        """The registry in ``data`` (the YAML file, loaded); RegistryError if invalid."""
        try:
            parsed = _File.model_validate(data if data is not None else {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'file'}: "
                f"{str(e['msg']).removeprefix('Value error, ')}"
                for e in exc.errors()[:5]
            )
            raise RegistryError(f"GPU registry {source}: {problems}") from None
        return cls(
            [
                RegistryEntry(
                    GPUModel(e.vendor, e.model, e.memory, e.interface),
                    tuple(p.lower() for p in e.products),
                    tuple(p.lower() for p in e.pci),
                )
                for e in parsed.gpus
            ]
        )

    def over(self, base: GPURegistry) -> GPURegistry:
        """This registry's entries first, then ``base``'s."""
        return GPURegistry([*self.entries, *base.entries])

    def __len__(self) -> int:
        return len(self.entries)

    def by_product(self, vendor: str, product: str) -> GPUModel | None:
        """The entry whose pattern matches the product name, or the end of it after a
        dash (``a100-sxm4-80gb`` matches ``NVIDIA-A100-SXM4-80GB`` and ``A100-SXM4-80GB``;
        ``_`` and spaces count as dashes, letter case does not matter)."""
        name = re.sub(r"[\s_]+", "-", normalised_product(product).lower())
        tails = [name] + [name[i + 1 :] for i, c in enumerate(name) if c == "-"]
        for entry in self.entries:
            if entry.gpu.vendor == vendor and any(
                fnmatch.fnmatchcase(tail, pattern) for pattern in entry.products for tail in tails
            ):
                return entry.gpu
        return None

    def by_pci(self, vendor_id: str, device_id: str) -> GPUModel | None:
        return self._pci.get(f"{vendor_id}:{device_id}".lower())


def normalised_product(product: str) -> str:
    """GFD's product name without the ``-SHARED`` it appends to a time-sliced GPU's."""
    return _SHARED.sub("", product.strip())


def derived_model(product: str) -> str:
    """A model name for a product the registry lacks: lowercase letters and digits, the
    vendor's brand words and memory/interface details left out (``NVIDIA-GeForce-RTX-5090``
    → ``rtx5090``, ``NVIDIA-H100-80GB-HBM3`` → ``h100``)."""
    tokens = re.split(r"[^a-z0-9]+", normalised_product(product).lower())
    kept = [t for t in tokens if t and t not in _NOISE and not _DETAIL.fullmatch(t)]
    return "".join(kept)[:MAX_DERIVED] or "unknown"


def interface_of(product: str) -> str:
    tokens = re.split(r"[^a-z0-9]+", product.lower())
    if any(t.startswith("sxm") for t in tokens):
        return "sxm"
    return "pcie" if "pcie" in tokens else ""


def memory_of_mib(mib: str) -> str:
    """GFD's ``gpu.memory`` (MiB) as Akash writes sizes: whole GiB, rounded (81559 → 80Gi)."""
    if not mib.isdigit() or int(mib) == 0:
        return ""
    value = int(mib)
    return f"{round(value / 1024)}Gi" if value >= 1024 else f"{value}Mi"


def _memory_of_vram(vram: str) -> str:
    """AMD's labeller's ``gpu.vram`` (``64G``) as ``64Gi``."""
    match = re.fullmatch(r"(\d+)\s*G[iB]?", vram.strip(), re.IGNORECASE)
    return f"{match.group(1)}Gi" if match else ""


def pci_devices(labels: Mapping[str, str], vendor_id: str) -> list[str]:
    """Device ids of ``vendor_id`` GPUs that NFD's ``pci-…present`` labels name (when NFD
    is configured with the ``device`` field; the default ``class,vendor`` names none)."""
    found = []
    for key, value in labels.items():
        if not key.startswith(NFD_PCI) or not key.endswith(".present") or value != "true":
            continue
        fields = key.removeprefix(NFD_PCI).removesuffix(".present").lower().split("_")
        if not all(_HEX4.fullmatch(f) for f in fields) or vendor_id not in fields:
            continue
        at = fields.index(vendor_id)
        if at == 1 and fields[0] not in GPU_CLASSES:
            continue  # a bridge or switch of the vendor (NVSwitch), not a GPU
        if at + 1 < len(fields):
            found.append(fields[at + 1])
    return sorted(set(found))


def has_pci_vendor(labels: Mapping[str, str], vendor_id: str) -> bool:
    return any(
        key.startswith(NFD_PCI)
        and vendor_id in key.removeprefix(NFD_PCI).removesuffix(".present").lower().split("_")
        for key in labels
    )


@dataclass(frozen=True)
class NodeGPUs:
    """What a node's labels and allocatable say about its GPUs."""

    gpus: tuple[GPUInfo, ...] = ()
    problems: tuple[str, ...] = ()  # GPUs that cannot be offered, and why


def _int(text: str | None, default: int) -> int:
    return int(text) if text and text.isdigit() and int(text) > 0 else default


def node_gpus(
    name: str, labels: Mapping[str, str], units: Mapping[str, int], registry: GPURegistry
) -> NodeGPUs:
    """The GPUs of node ``name``: one kind per vendor (GPU discovery assumes a node's
    cards are alike), counted in the device plugin's ``units`` (``nvidia.com/gpu``…)."""
    gpus: list[GPUInfo] = []
    problems: list[str] = []
    for vendor in ("nvidia", "amd"):
        found = _vendor_gpu(name, vendor, labels, units.get(RESOURCES[vendor], 0), registry)
        if isinstance(found, GPUInfo):
            gpus.append(found)
        elif found:
            problems.append(found)
    return NodeGPUs(tuple(gpus), tuple(problems))


def _vendor_gpu(
    node: str, vendor: str, labels: Mapping[str, str], units: int, registry: GPURegistry
) -> GPUInfo | str | None:
    vendor_id = VENDOR_IDS[vendor]
    if vendor == "nvidia":
        product = labels.get("nvidia.com/gpu.product", "")
        replicas = _int(labels.get("nvidia.com/gpu.replicas"), 1)
        physical_label = labels.get("nvidia.com/gpu.count")
        memory = memory_of_mib(labels.get("nvidia.com/gpu.memory", ""))
        devices = pci_devices(labels, vendor_id)
    else:
        product = labels.get("amd.com/gpu.product-name", "")
        replicas = 1
        physical_label = labels.get("amd.com/gpu.count")
        memory = _memory_of_vram(labels.get("amd.com/gpu.vram", ""))
        device = labels.get("amd.com/gpu.device-id", "").lower()
        devices = [device] if _HEX4.fullmatch(device) else pci_devices(labels, vendor_id)
    seen = bool(product or devices or has_pci_vendor(labels, vendor_id))
    resource = RESOURCES[vendor]
    if units <= 0:
        if not seen:
            return None
        what = product or f"{vendor} GPU"
        return f"node {node}: {what} found but no {resource} allocatable (device plugin down?)"
    known: GPUModel | None = None
    if product:
        known = registry.by_product(vendor, product)
    elif devices:
        known = registry.by_pci(vendor_id, devices[0])
        product = f"{vendor_id}:{devices[0]}"
    else:
        return (
            f"node {node}: {units} {resource} allocatable but no label names the model "
            "(install GPU feature discovery, or NFD with the pci device field): not offered"
        )
    physical = _int(physical_label, max(units // replicas, 1))
    if known is not None:
        model, memory, interface = known.model, known.memory or memory, known.interface
    else:
        model, interface = derived_model(product), interface_of(product)
    return GPUInfo(
        vendor=vendor,
        model=model,
        memory=memory,
        interface=interface,
        count=units,
        physical=physical,
        replicas=replicas,
        product=normalised_product(product),
        known=known is not None,
    )


def unknown_products(gpus: Iterable[GPUInfo]) -> list[str]:
    return sorted({g.product for g in gpus if not g.known})
