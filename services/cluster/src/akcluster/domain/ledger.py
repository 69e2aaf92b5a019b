"""Reservations: their records, and what they hold back from the inventory.

A :class:`Reservation` is the cluster's promise to an order: where its replicas would run,
what they draw from storage pools, node ports and leased IPs, and the offer (concrete GPU
model…) the bid carries. Records are stored as JSON in Redis (one hash field per order)
and the :class:`Ledger` is the in-memory view of all of them at one version of that hash.

*Pending* reservations (not deployed yet) are subtracted from every fresh inventory; once a
lease is deployed its pods' requests show in the inventory itself, so an *active*
reservation only keeps its node ports and IPs, which Kubernetes does not count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from akcluster.domain.inventory import Capacity, Inventory
from akcluster.domain.placement import Free, Placement
from aktypes.coin import Dec, DecCoin
from aktypes.events import ResourceOffer, ResourceTotals
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.manifest.models import Group
from aktypes.resources import EndpointKind


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
    def deployed(cls, order_id: str, group: Group, now: float) -> Reservation:
        """An active reservation for a lease found deployed: its node ports and IPs."""
        spec = _deployed_group(group)
        return cls(
            order_id=order_id,
            group=spec,
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
        self.reservations: dict[str, Reservation] = {}
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
        return cls(
            (Reservation.model_validate_json(raw) for raw in stored.values()),
            version,
            {order: float(at) for order, at in (released or {}).items()},
        )

    def get(self, order_id: str) -> Reservation | None:
        return self.reservations.get(order_id)

    def add(self, reservation: Reservation) -> None:
        self.remove(reservation.order_id)
        self.reservations[reservation.order_id] = reservation
        self._count(reservation, 1)

    def remove(self, order_id: str) -> Reservation | None:
        reservation = self.reservations.pop(order_id, None)
        if reservation is not None:
            self._count(reservation, -1)
        return reservation

    def _count(self, reservation: Reservation, sign: int) -> None:
        self.node_ports += sign * reservation.node_ports
        self.ips += sign * reservation.ips
        if reservation.state != "pending":
            return
        for name, use in reservation.nodes.items():
            held = self._nodes.get(name, Capacity())
            delta = use.capacity()
            self._nodes[name] = held + delta if sign > 0 else held - delta
        for cls, size in reservation.storage.items():
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
