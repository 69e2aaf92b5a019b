"""The cluster's side of the reconciliation with the chain: what disagrees, and the repair.

Pure: :func:`compare` takes what the cluster holds (:class:`LocalView`: the lease records,
the leases found deployed in Kubernetes, the reservations) and the chain's leases and bids
of this provider (:class:`ChainView`), and returns the repairs, one per finding:

- ``lease_closed_deployed``: an active lease record (deploying, deployed, or closing:
  its teardown queued already, which the repair then leaves as it is) whose lease is not
  active on chain → torn down, as ``LeaseClosed`` would have;
- ``deployment_without_record``: a lease namespace or Manifest resource without an active
  record → adopted when the chain has the lease active (the list is this provider's, so it
  is ours) and the Manifest resource is there to adopt from, else removed;
- ``reservation_without_bid``: a reservation of an order with neither an open bid nor an
  active lease of ours, nor a lease record here → freed, once the order's own reading
  (:attr:`ChainView.orders`, :attr:`ChainView.bids`) shows it is over: the order is no
  longer open (or gone) and no bid of ours is open or active on it, or our bid on it was
  closed or lost. While the order is open without a bid of ours, the bid may be on its way.

A lease not in the chain's list of active leases is looked up one by one
(:func:`unlisted`, :attr:`ChainView.leases`): a state this code does not know leaves it
alone. The reservations to look up are :func:`unexplained`'s. Whether a finding is
repaired now is :class:`aktypes.reconcile.Sightings`' rule (two sweeps in a row).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from aktypes.events import RepairAction, RepairKind
from aktypes.ids import LeaseID

LIVE_BID = frozenset({"open", "active"})
LEASE_OVER = frozenset({"closed", "insufficient_funds", ""})  # "": the chain has none


@dataclass(frozen=True)
class LocalView:
    """What the cluster holds: the leases with an active record, the leases found in
    Kubernetes (``manifests``: with a Manifest resource; ``namespaces``:
    with a lease namespace), and the orders with a reservation."""

    records: Collection[LeaseID] = ()
    manifests: Collection[LeaseID] = ()
    namespaces: Collection[LeaseID] = ()
    reservations: Collection[str] = ()


@dataclass(frozen=True)
class ChainView:
    """The chain's leases and bids of this provider: the active leases, the orders with an
    open bid, the state of each lease looked up one by one, and for the orders looked up,
    the order's state and our bid's (``""``: the chain has none)."""

    active_leases: Collection[LeaseID] = ()
    open_bids: Collection[str] = ()
    leases: Mapping[LeaseID, str] = field(default_factory=dict)
    orders: Mapping[str, str] = field(default_factory=dict)
    bids: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Repair:
    kind: RepairKind
    action: RepairAction
    order_id: str
    lease_id: LeaseID | None = None
    message: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """The finding, for :class:`~aktypes.reconcile.Sightings`."""
        return self.kind, str(self.lease_id or self.order_id)


def _explained(local: LocalView, chain: ChainView) -> set[str]:
    """Orders a reservation is rightly held for: an open bid, an active lease, a record."""
    return (
        set(chain.open_bids)
        | {str(lease.order_id) for lease in chain.active_leases}
        | {str(lease.order_id) for lease in local.records}
    )


def unlisted(local: LocalView, chain: ChainView) -> list[LeaseID]:
    """Leases held here (a record, a Manifest resource, a namespace) the chain does not
    list active: to look up."""
    held = set(local.records) | set(local.manifests) | set(local.namespaces)
    return sorted(held - set(chain.active_leases), key=str)


def unexplained(local: LocalView, chain: ChainView) -> list[str]:
    """Orders with a reservation and no open bid, active lease or record: to look up."""
    explained = _explained(local, chain)
    return sorted(order for order in local.reservations if order not in explained)


def _over(order_state: str, bid_state: str) -> bool:
    if bid_state in LIVE_BID:
        return False
    return bool(bid_state) or order_state != "open"


def compare(local: LocalView, chain: ChainView) -> list[Repair]:
    """Every disagreement between ``local`` and ``chain``, as the repair it calls for."""
    active = set(chain.active_leases)
    records, manifests = set(local.records), set(local.manifests)

    def over(lease: LeaseID) -> str | None:
        """How the chain has the lease when it is over for us (None: it is not, or it was
        not looked up)."""
        state = chain.leases.get(lease)
        if lease in active or state not in LEASE_OVER:
            return None
        return state or "gone"

    repairs = [
        Repair("lease_closed_deployed", "torn_down", str(lease.order_id), lease, f"lease {state}")
        for lease in sorted(records, key=str)
        if (state := over(lease)) is not None
    ]
    for lease in sorted(manifests | set(local.namespaces), key=str):
        if lease in records:
            continue
        action: RepairAction
        if lease in active:
            action, message = (
                ("adopted", "lease active") if lease in manifests else ("removed", "no Manifest")
            )
        elif (state := over(lease)) is not None:
            action, message = "removed", f"lease {state}"
        else:
            continue
        repairs.append(
            Repair("deployment_without_record", action, str(lease.order_id), lease, message)
        )
    for order in unexplained(local, chain):
        if order not in chain.orders:
            continue  # not looked up
        order_state, bid_state = chain.orders[order], chain.bids.get(order, "")
        if _over(order_state, bid_state):
            message = f"order {order_state or 'gone'}, bid {bid_state or 'none'}"
            repairs.append(Repair("reservation_without_bid", "freed", order, None, message))
    return repairs
