"""Compute resources of a resource unit: CPU, memory, storage volumes, GPU and endpoints.

These mirror Akash's ``resources/v1beta4`` types and their JSON: every quantity travels as
``{"val": "<decimal string>"}``; CPU is in millicpu, memory and storage in bytes, GPU in
units. Endpoints are what a unit exposes (shared HTTP ingress, a random node port, a leased
IP); their kinds travel as integers and ``SHARED_HTTP`` (0) is omitted, as Go omits it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated, Any

from pydantic import Field, PlainSerializer, PlainValidator, ValidationInfo

from aktypes.attributes import Attribute
from aktypes.gojson import GoModel, UInt32

STORAGE_CLASSES = ("default", "beta1", "beta2", "beta3", "ram")
"""Storage classes an SDL may ask for; ``ram`` is memory-backed and never persistent."""

EPHEMERAL = "ephemeral"


def _resource_int(value: Any, info: ValidationInfo) -> int:
    """A decimal string in JSON (as Cosmos ``math.Int`` requires); Python code may pass ints."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if info.mode == "python" and type(value) is int and value >= 0:
        return value
    raise ValueError(f"must be a non-negative integer as a decimal string, got {value!r}")


ResourceInt = Annotated[int, PlainValidator(_resource_int), PlainSerializer(str, return_type=str)]


class ResourceValue(GoModel):
    """A non-negative quantity; ``{"val": "123"}`` in JSON."""

    val: ResourceInt


def rv(value: int) -> ResourceValue:
    """Shorthand constructor for a :class:`ResourceValue`."""
    return ResourceValue(val=value)


class CPU(GoModel):
    _omitempty = frozenset({"attributes"})

    units: ResourceValue
    attributes: list[Attribute] | None = None


class Memory(GoModel):
    _omitempty = frozenset({"attributes"})

    size: ResourceValue
    attributes: list[Attribute] | None = None


class GPU(GoModel):
    _omitempty = frozenset({"attributes"})

    units: ResourceValue
    attributes: list[Attribute] | None = None


class Storage(GoModel):
    """One storage volume of a resource unit."""

    _omitempty = frozenset({"attributes"})

    name: str
    size: ResourceValue
    attributes: list[Attribute] | None = None

    def attribute(self, key: str) -> str | None:
        for attr in self.attributes or ():
            if attr.key == key:
                return attr.value
        return None

    @property
    def persistent(self) -> bool:
        return self.attribute("persistent") == "true"

    @property
    def storage_class(self) -> str:
        """``ephemeral`` unless the volume is persistent or ``ram``; else its class."""
        cls = self.attribute("class")
        if cls == "ram":
            return "ram"
        if self.persistent:
            return cls or "default"
        return EPHEMERAL


class EndpointKind(IntEnum):
    SHARED_HTTP = 0
    RANDOM_PORT = 1
    LEASED_IP = 2


class Endpoint(GoModel):
    _omitempty = frozenset({"kind"})

    kind: Annotated[EndpointKind, Field(strict=False)] = EndpointKind.SHARED_HTTP
    sequence_number: UInt32 = 0


class Resources(GoModel):
    """What one replica of a resource unit needs."""

    _omitempty = frozenset({"cpu", "memory", "storage", "gpu"})

    id: UInt32
    cpu: CPU | None = None
    memory: Memory | None = None
    storage: list[Storage] | None = None
    gpu: GPU | None = None
    endpoints: list[Endpoint] | None = None

    @property
    def cpu_millis(self) -> int:
        return self.cpu.units.val if self.cpu else 0

    @property
    def memory_bytes(self) -> int:
        return self.memory.size.val if self.memory else 0

    @property
    def gpu_units(self) -> int:
        return self.gpu.units.val if self.gpu else 0

    def endpoint_count(self, kind: EndpointKind) -> int:
        return sum(1 for ep in self.endpoints or () if ep.kind == kind)

    def compute_mismatches(self, other: Resources) -> list[str]:
        """Names of the parts (CPU, GPU, Memory, Storage) that differ from ``other``.

        Like Akash's generated ``Equal``: quantities and attributes in order; a missing
        attribute list equals an empty one. IDs and endpoints are not compared.
        """
        parts = (
            ("CPU", _quantity_key(self.cpu), _quantity_key(other.cpu)),
            ("GPU", _quantity_key(self.gpu), _quantity_key(other.gpu)),
            ("Memory", _quantity_key(self.memory), _quantity_key(other.memory)),
            ("Storage", _storage_key(self.storage), _storage_key(other.storage)),
        )
        return [name for name, mine, theirs in parts if mine != theirs]


def _attrs_key(attributes: list[Attribute] | None) -> tuple[tuple[str, str], ...]:
    return tuple((a.key, a.value) for a in attributes or ())


def _quantity_key(part: CPU | GPU | Memory | None) -> tuple[object, ...] | None:
    if part is None:
        return None
    value = part.size.val if isinstance(part, Memory) else part.units.val
    return (value, _attrs_key(part.attributes))


def _storage_key(volumes: list[Storage] | None) -> tuple[object, ...]:
    return tuple((v.name, v.size.val, _attrs_key(v.attributes)) for v in volumes or ())
