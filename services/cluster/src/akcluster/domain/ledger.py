"""Reservations: their records, and what they hold back from the inventory.

A :class:`Reservation` is the cluster's promise to an order: where its replicas would run,
what they draw from storage pools, node ports and leased IPs, and the offer (concrete GPU
model…) the bid carries. Records are stored as JSON in Redis (one hash field per order)
and the :class:`Ledger` is the in-memory view of all of them at one version of that hash:
what each holds back and its totals (:class:`Held`), the record itself kept as stored and
read back only when asked for — ten thousand reservations as models would take well over a
hundred megabytes, and seconds to read.

*Pending* reservations (not deployed yet) are subtracted from every fresh inventory; once a
lease is deployed its pods' requests show in the inventory itself, so an *active*
reservation only keeps its node ports and IPs, which Kubernetes does not count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from akcluster.domain.inventory import Capacity, Inventory
from akcluster.domain.placement import Free, Placement
from aktypes.coin import Dec, DecCoin
from aktypes.events import ResourceOffer, ResourceTotals
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.manifest.models import Group
from aktypes.resources import EPHEMERAL, EndpointKind

_NOTHING: Mapping[str, Any] = MappingProxyType({})


class NodeUse(BaseModel):
    model_config = ConfigDict(frozen=True)

    cpu: int = 0
    memory: int = 0
    ephemeral: int = 0
    gpu: int = 0

    def capacity(self) -> Capacity:
        return Capacity(self.cpu, self.memory, self.ephemeral, self.gpu)


class Reservation(BaseModel):
    """One order's reservation, as stored."""

    model_config = ConfigDict(frozen=True)

    order_id: str
    group: GroupSpec
    allocated: list[ResourceOffer] = Field(default_factory=list)
    nodes: dict[str, NodeUse] = Field(default_factory=dict)
    storage: dict[str, int] = Field(default_factory=dict)
    node_ports: int = 0
    ips: int = 0
    state: Literal["pending", "active"] = "pending"
    created_at: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def totals(self) -> ResourceTotals:
        """What its group asks for in all (Akash's per-reservation figure), stored with it."""
        return group_totals(self.group)

    @classmethod
    def of(cls, order_id: str, group: GroupSpec, placement: Placement, now: float) -> Reservation:
        return cls(
            order_id=order_id,
            group=group,
            allocated=list(placement.allocated),
            nodes={
                name: NodeUse(cpu=c.cpu, memory=c.memory, ephemeral=c.ephemeral, gpu=c.gpu)
                for name, c in placement.nodes.items()
            },
            storage=dict(placement.storage),
            node_ports=placement.node_ports,
            ips=placement.ips,
            created_at=now,
        )

    @classmethod
    def deployed(
        cls, order_id: str, group: Group, now: float, allocated: Iterable[ResourceOffer] = ()
    ) -> Reservation:
        """An active reservation for a lease found deployed: its node ports and IPs, and
        the GPUs it runs on (``allocated``)."""
        spec = _deployed_group(group)
        return cls(
            order_id=order_id,
            group=spec,
            allocated=list(allocated),
            node_ports=sum(
                u.resource.endpoint_count(EndpointKind.RANDOM_PORT) for u in spec.resources
            ),
            ips=len(
                {
                    e.sequence_number
                    for u in spec.resources
                    for e in u.resource.endpoints or ()
                    if e.kind == EndpointKind.LEASED_IP
                }
            ),
            state="active",
            created_at=now,
        )


@dataclass(frozen=True, slots=True)
class Held:
    """What the ledger keeps of a reservation: what it holds back (nodes and storage only
    while pending: an active one's pods show in the inventory) and its group's totals."""

    state: Literal["pending", "active"]
    node_ports: int
    ips: int
    totals: ResourceTotals
    nodes: Mapping[str, NodeUse]
    storage: Mapping[str, int]

    @classmethod
    def of(cls, reservation: Reservation | _Stored, totals: ResourceTotals) -> Held:
        pending = reservation.state == "pending"
        return cls(
            state=reservation.state,
            node_ports=reservation.node_ports,
            ips=reservation.ips,
            totals=totals,
            nodes=reservation.nodes if pending else _NOTHING,
            storage=reservation.storage if pending else _NOTHING,
        )


class _Stored(BaseModel):
    """A stored reservation read for :class:`Held` only (its group and offers skipped)."""

    state: Literal["pending", "active"] = "pending"
    nodes: dict[str, NodeUse] = Field(default_factory=dict)
    storage: dict[str, int] = Field(default_factory=dict)
    node_ports: int = 0
    ips: int = 0
    totals: ResourceTotals | None = None  # None: stored before the totals were


def group_totals(group: GroupSpec) -> ResourceTotals:
    """What a group asks for in all: CPU, GPU, memory, ephemeral and per-class storage."""
    cpu = gpu = memory = ephemeral = 0
    storage: dict[str, int] = {}
    for unit in group.resources:
        resources, count = unit.resource, unit.count
        cpu += resources.cpu.units.val * count if resources.cpu else 0
        gpu += resources.gpu.units.val * count if resources.gpu else 0
        memory += resources.memory.size.val * count if resources.memory else 0
        for volume in resources.storage or ():
            size, cls = volume.size.val * count, volume.storage_class
            if cls == EPHEMERAL:
                ephemeral += size
            else:
                storage[cls] = storage.get(cls, 0) + size
    return ResourceTotals(
        cpu=cpu, gpu=gpu, memory=memory, storage_ephemeral=ephemeral, storage=storage
    )


ZERO = Dec(0)


def _deployed_group(group: Group) -> GroupSpec:
    """The group spec a deployed manifest group implies (prices are not known here)."""
    units = [
        ResourceUnit(
            resource=s.resources, count=s.count, price=DecCoin(denom="uakt", amount=Dec(0))
        )
        for s in group.services or ()
    ]
    return GroupSpec(name=group.name, resources=units)


class Ledger:
    """Every reservation at one ``version`` of the stored hash, with running totals, and
    the orders whose reservation was released (``released``: order → when). An order is
    never reserved again once released: Akash never reopens an order id, and a reserve
    command still queued from before (the cluster was down when the bid was abandoned)
    must not hold capacity for an order nobody bids on any more."""

    def __init__(
        self,
        reservations: Iterable[Reservation] = (),
        version: int = 0,
        released: Mapping[str, float] | None = None,
    ) -> None:
        self.version = version
        self.released = dict(released or {})
        self.reservations: dict[str, Held] = {}
        self._stored: dict[str, str] = {}  # order → its record as stored
        self._totals: dict[tuple[object, ...], ResourceTotals] = {}  # one of each, shared
        self._nodes: dict[str, Capacity] = {}
        self._storage: dict[str, int] = {}
        self.node_ports = 0
        self.ips = 0
        for reservation in reservations:
            self.add(reservation)

    @classmethod
    def load(
        cls, stored: Mapping[str, str], version: int, released: Mapping[str, str] | None = None
    ) -> Ledger:
        ledger = cls((), version, {order: float(at) for order, at in (released or {}).items()})
        for order, raw in stored.items():
            summary = _Stored.model_validate_json(raw)
            totals = summary.totals or Reservation.model_validate_json(raw).totals
            ledger._keep(order, raw, Held.of(summary, ledger._shared(totals)))
        return ledger

    def get(self, order_id: str) -> Reservation | None:
        raw = self._stored.get(order_id)
        return Reservation.model_validate_json(raw) if raw is not None else None

    def add(self, reservation: Reservation) -> None:
        held = Held.of(reservation, self._shared(reservation.totals))
        self._keep(reservation.order_id, reservation.model_dump_json(), held)

    def _shared(self, totals: ResourceTotals) -> ResourceTotals:
        """``totals``, or the equal one already kept: groups repeat (templates)."""
        t = totals
        key = (t.cpu, t.gpu, t.memory, t.storage_ephemeral, *sorted(t.storage.items()))
        return self._totals.setdefault(key, totals)

    def _keep(self, order_id: str, raw: str, held: Held) -> None:
        self.remove(order_id)
        self.reservations[order_id] = held
        self._stored[order_id] = raw
        self._count(held, 1)

    def remove(self, order_id: str) -> Held | None:
        held = self.reservations.pop(order_id, None)
        self._stored.pop(order_id, None)
        if held is not None:
            self._count(held, -1)
        return held

    def _count(self, held: Held, sign: int) -> None:
        self.node_ports += sign * held.node_ports
        self.ips += sign * held.ips
        if held.state != "pending":
            return
        for name, use in held.nodes.items():
            taken = self._nodes.get(name, Capacity())
            delta = use.capacity()
            self._nodes[name] = taken + delta if sign > 0 else taken - delta
        for cls, size in held.storage.items():
            self._storage[cls] = self._storage.get(cls, 0) + sign * size

    def counts(self) -> tuple[int, int]:
        """Pending and active reservations."""
        active = sum(1 for r in self.reservations.values() if r.state == "active")
        return len(self.reservations) - active, active

    def pending_totals(self) -> ResourceTotals:
        total = sum(self._nodes.values(), Capacity())
        return ResourceTotals(
            cpu=total.cpu,
            gpu=total.gpu,
            memory=total.memory,
            storage_ephemeral=total.ephemeral,
            storage={c: s for c, s in self._storage.items() if s},
        )

    def free(self, inventory: Inventory, *, node_ports: int, ips: int) -> Free:
        """What ``inventory`` has left once pending reservations are taken out of it."""
        return Free(
            nodes=inventory.nodes,
            node_free={
                n.name: n.available - self._nodes.get(n.name, Capacity()) for n in inventory.nodes
            },
            storage={
                cls: max(pool.available - self._storage.get(cls, 0), 0)
                for cls, pool in inventory.storage.items()
            },
            node_ports=max(node_ports - self.node_ports, 0),
            ips=max(ips - self.ips, 0),
        )
