"""Deployment groups as the chain stores them, their price and the chain's rules.

A ``GroupSpec`` is what a tenant's order asks for: a name, placement requirements and
resource units (resources × count at a per-replica price). Its max price is
``Σ unit price × count``. :func:`validate_groups` applies the chain's checks plus the limits
that Akash documents (counts 1–50, ≤ 20 units per group, ≤ 4 volumes per unit) and reports
every problem, not only the first.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from aktypes import limits
from aktypes.attributes import PlacementRequirements, validate_attributes
from aktypes.coin import DecCoin
from aktypes.errors import GroupSpecError
from aktypes.gojson import GoModel, UInt32
from aktypes.resources import Resources


class ResourceUnit(GoModel):
    """``count`` replicas of ``resource``, each priced at ``price`` per block."""

    resource: Resources
    count: UInt32
    price: DecCoin

    @property
    def full_price(self) -> DecCoin:
        return self.price * self.count


class GroupSpec(GoModel):
    """One deployment group: what an order asks providers for."""

    name: str
    requirements: PlacementRequirements = Field(default_factory=PlacementRequirements)
    resources: list[ResourceUnit]

    def price(self) -> DecCoin:
        """The group's max price per block: Σ unit price × count."""
        if not self.resources:
            raise GroupSpecError([f"group {self.name!r} has no resource units"])
        total = self.resources[0].full_price
        for unit in self.resources[1:]:
            total += unit.full_price
        return total

    def problems(self) -> list[str]:
        """Every way this group breaks the chain's rules; empty when it is valid."""
        where = f"group {self.name!r}"
        found: list[str] = []
        if not self.name:
            found.append("group name is empty")
        if not self.resources:
            found.append(f"{where}: has no resource units")
        if len(self.resources) > limits.GROUP_MAX_UNITS:
            found.append(
                f"{where}: {len(self.resources)} resource units, at most "
                f"{limits.GROUP_MAX_UNITS} allowed"
            )
        if message := validate_attributes(self.requirements.attributes):
            found.append(f"{where}: requirements: {message}")
        ids: set[int] = set()
        denoms = {unit.price.denom for unit in self.resources}
        if len(denoms) > 1:
            found.append(f"{where}: units priced in several denominations {sorted(denoms)}")
        for unit in self.resources:
            found.extend(f"{where}: {p}" for p in unit_problems(unit))
            if unit.resource.id in ids:
                found.append(f"{where}: duplicate resources ID {unit.resource.id}")
            ids.add(unit.resource.id)
        found.extend(f"{where}: {p}" for p in _total_problems(self.resources))
        return found


def _range(what: str, value: int, low: int, high: int) -> list[str]:
    if low <= value <= high:
        return []
    return [f"{what} {value} is outside {low}..{high}"]


def unit_problems(unit: ResourceUnit) -> list[str]:
    """Per-unit checks: resource presence, per-replica limits, count, price."""
    res = unit.resource
    where = f"resource unit {res.id}"
    found: list[str] = []
    if res.id == 0:
        found.append("resources ID must be > 0")
    found.extend(
        f"{where}: {p}"
        for p in _range("count", unit.count, limits.UNIT_MIN_COUNT, limits.UNIT_MAX_COUNT)
    )
    if res.cpu is None:
        found.append(f"{where}: CPU is missing")
    else:
        found.extend(
            f"{where}: {p}"
            for p in _range(
                "CPU (millicpu)", res.cpu.units.val, limits.UNIT_MIN_CPU, limits.UNIT_MAX_CPU
            )
        )
        if message := validate_attributes(res.cpu.attributes):
            found.append(f"{where}: CPU attributes: {message}")
    if res.gpu is None:
        found.append(f"{where}: GPU is missing")
    else:
        found.extend(
            f"{where}: {p}" for p in _range("GPU units", res.gpu.units.val, 0, limits.UNIT_MAX_GPU)
        )
        if res.gpu.units.val == 0 and res.gpu.attributes:
            found.append(f"{where}: GPU attributes given for 0 GPU units")
        if message := validate_attributes(res.gpu.attributes):
            found.append(f"{where}: GPU attributes: {message}")
    if res.memory is None:
        found.append(f"{where}: memory is missing")
    else:
        found.extend(
            f"{where}: {p}"
            for p in _range(
                "memory (bytes)",
                res.memory.size.val,
                limits.UNIT_MIN_MEMORY,
                limits.UNIT_MAX_MEMORY,
            )
        )
    if res.storage is None:
        found.append(f"{where}: storage is missing")
    else:
        if len(res.storage) > limits.UNIT_MAX_VOLUMES:
            found.append(
                f"{where}: {len(res.storage)} storage volumes, "
                f"at most {limits.UNIT_MAX_VOLUMES} allowed"
            )
        for volume in res.storage:
            found.extend(
                f"{where}: storage {volume.name!r}: {p}"
                for p in _range(
                    "size (bytes)",
                    volume.size.val,
                    limits.UNIT_MIN_STORAGE,
                    limits.UNIT_MAX_STORAGE,
                )
            )
            if message := validate_attributes(volume.attributes):
                found.append(f"{where}: storage {volume.name!r} attributes: {message}")
    if res.endpoints is None:
        found.append(f"{where}: endpoints are missing")
    if unit.price.amount.is_negative():
        found.append(f"{where}: price {unit.price} is negative")
    if unit.price.amount > limits.UNIT_MAX_PRICE:
        found.append(f"{where}: price {unit.price} exceeds {limits.UNIT_MAX_PRICE}")
    return found


def _total_problems(units: Sequence[ResourceUnit]) -> list[str]:
    cpu = sum(u.resource.cpu_millis * u.count for u in units)
    gpu = sum(u.resource.gpu_units * u.count for u in units)
    memory = sum(u.resource.memory_bytes * u.count for u in units)
    found: list[str] = []
    if units and not 0 < cpu <= limits.GROUP_MAX_CPU:
        found.append(f"total CPU {cpu} millicpu is outside 1..{limits.GROUP_MAX_CPU}")
    if gpu > limits.GROUP_MAX_GPU:
        found.append(f"total GPU {gpu} exceeds {limits.GROUP_MAX_GPU}")
    if units and not 0 < memory <= limits.GROUP_MAX_MEMORY:
        found.append(f"total memory {memory} bytes is outside 1..{limits.GROUP_MAX_MEMORY}")
    for unit in units:
        for volume in unit.resource.storage or ():
            total = volume.size.val * unit.count
            if total > limits.GROUP_MAX_STORAGE:
                found.append(f"total storage of {volume.name!r} exceeds {limits.GROUP_MAX_STORAGE}")
    return found


def validate_groups(groups: Sequence[GroupSpec]) -> None:
    """Check a deployment's groups as the chain does; raise ``GroupSpecError`` listing all."""
    found: list[str] = []
    if not groups:
        found.append("a deployment needs at least one group")
    names: set[str] = set()
    denoms: set[str] = set()
    for group in groups:
        found.extend(group.problems())
        if group.name in names:
            found.append(f"duplicate deployment group name {group.name!r}")
        names.add(group.name)
        denoms.update(unit.price.denom for unit in group.resources)
    if len(denoms) > 1:
        found.append(f"groups are priced in several denominations {sorted(denoms)}")
    if found:
        raise GroupSpecError(found)
