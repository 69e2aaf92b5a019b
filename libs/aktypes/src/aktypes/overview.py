"""The provider at a glance, folded from its event streams: orders and what was decided on
them, leases and their health, the latest events as sentences, bids per minute.

Pure: feed it envelopes in stream order (:meth:`Overview.apply`) from any reader — the
gateway's dashboard, the operator CLI. It keeps a bounded window (the newest orders and
leases, the last events), so it can follow a provider for months in constant memory.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from aktypes.events import (
    BidDeclined,
    BidPlaced,
    DeploymentApplied,
    DeploymentHealth,
    InventoryChanged,
    LeaseClosed,
    LeaseCreated,
    LeaseFundsMonitor,
    LeaseOutOfFunds,
    LeaseTornDown,
    LeaseWon,
    ManifestReceived,
    ManifestRejected,
    OrderClosed,
    OrderCreated,
    Payload,
    ProviderBidClosed,
    ReconcileRepaired,
    WithdrawalRequested,
)
from aktypes.events.envelope import Envelope
from aktypes.events.streams import (
    BALANCE_EVENTS,
    BIDENGINE_EVENTS,
    CHAIN_EVENTS,
    CLUSTER_EVENTS,
    MANIFEST_EVENTS,
)

STREAMS = (CHAIN_EVENTS, BIDENGINE_EVENTS, CLUSTER_EVENTS, MANIFEST_EVENTS, BALANCE_EVENTS)


@dataclass
class OrderView:
    order: str
    state: str = "open"  # open, bid, declined, won, lost, closed
    price: str = ""
    reasons: list[str] = field(default_factory=list)
    updated: str = ""


@dataclass
class LeaseView:
    lease: str
    state: str = "won"  # won, manifest, deployed, pending, failed, closing, closed
    price: str = ""
    services: list[str] = field(default_factory=list)
    message: str = ""
    updated: str = ""


@dataclass(frozen=True)
class EventLine:
    time: str
    stream: str
    type: str
    text: str


def describe(payload: Payload) -> str:
    """One sentence about an event, for people."""
    match payload:
        case OrderCreated(order_id=order):
            return f"order {order} opened"
        case OrderClosed(order_id=order):
            return f"order {order} closed"
        case BidPlaced(bid_id=bid, price=price):
            return f"bid on {bid.order_id} at {price}"
        case BidDeclined(order_id=order, reasons=reasons):
            return f"declined {order}: " + "; ".join(r.message or r.code for r in reasons)
        case LeaseWon(lease_id=lease, price=price):
            return f"lease {lease} won at {price}"
        case ProviderBidClosed(bid_id=bid, cause=cause):
            return f"bid on {bid.order_id} closed ({cause.value})"
        case LeaseCreated(lease_id=lease, price=price):
            return f"lease {lease} created at {price}"
        case LeaseClosed(lease_id=lease):
            return f"lease {lease} closed on chain"
        case ManifestReceived(lease_id=lease, version=version):
            return f"manifest {version[:12]} for {lease}"
        case ManifestRejected(deployment_id=deployment, code=code, reason=reason):
            return f"manifest for {deployment} rejected ({code}): {reason}"
        case DeploymentApplied(lease_id=lease, services=services):
            return f"{lease} applied: {', '.join(services)}"
        case DeploymentHealth(lease_id=lease, state=state, message=message):
            return f"{lease} {state}" + (f": {message}" if message else "")
        case LeaseTornDown(lease_id=lease):
            return f"{lease} torn down"
        case LeaseOutOfFunds(lease_id=lease):
            return f"{lease} out of funds"
        case WithdrawalRequested(lease_id=lease, reason=reason):
            return f"withdrawal from {lease} ({reason})"
        case LeaseFundsMonitor(lease_id=lease, action="add"):
            return f"escrow of {lease} watched"
        case LeaseFundsMonitor(lease_id=lease):
            return f"escrow of {lease} no longer watched"
        case ReconcileRepaired(kind=kind, action=action, order_id=order, lease_id=lease):
            return f"reconciliation: {lease or order} {action} ({kind.replace('_', ' ')})"
    return str(getattr(payload, "type", type(payload).__name__))


class Overview:
    """Orders, leases, recent events and bid counts per minute, folded from envelopes."""

    def __init__(
        self, *, max_orders: int = 500, max_leases: int = 500, max_events: int = 200
    ) -> None:
        self.orders: OrderedDict[str, OrderView] = OrderedDict()
        self.leases: OrderedDict[str, LeaseView] = OrderedDict()
        self.events: deque[EventLine] = deque(maxlen=max_events)
        self.bids_per_minute: OrderedDict[str, dict[str, int]] = OrderedDict()
        self.max_orders = max_orders
        self.max_leases = max_leases
        self.version = 0  # bumped by every event that changed something

    def _order(self, order: str, at: str) -> OrderView:
        view = self.orders.pop(order, None) or OrderView(order=order)
        view.updated = at
        self.orders[order] = view  # newest last
        while len(self.orders) > self.max_orders:
            self.orders.popitem(last=False)
        return view

    def _lease(self, lease: str, at: str) -> LeaseView:
        view = self.leases.pop(lease, None) or LeaseView(lease=lease)
        view.updated = at
        self.leases[lease] = view
        while len(self.leases) > self.max_leases:
            self.leases.popitem(last=False)
        return view

    def _count(self, at: datetime, what: str) -> None:
        minute = at.strftime("%Y-%m-%dT%H:%MZ")
        counts = self.bids_per_minute.setdefault(minute, {"placed": 0, "declined": 0})
        counts[what] += 1
        while len(self.bids_per_minute) > 120:
            self.bids_per_minute.popitem(last=False)

    def apply(self, stream: str, envelope: Envelope[Any]) -> None:
        payload, at = envelope.payload, envelope.time.isoformat()
        match payload:
            case OrderCreated(order_id=order):
                self._order(str(order), at)
            case OrderClosed(order_id=order):
                o = self._order(str(order), at)
                if o.state == "open":  # never bid on: closed; else what was decided stays
                    o.state = "closed"
            case BidPlaced(bid_id=bid, price=price):
                o = self._order(str(bid.order_id), at)
                o.state, o.price = "bid", str(price)
                self._count(envelope.time, "placed")
            case BidDeclined(order_id=order, reasons=reasons):
                o = self._order(str(order), at)
                o.state = "declined"
                o.reasons = [r.message or r.code for r in reasons]
                self._count(envelope.time, "declined")
            case LeaseWon(lease_id=lease, price=price):
                self._order(str(lease.order_id), at).state = "won"
                lv = self._lease(str(lease), at)
                lv.price = str(price)
            case ProviderBidClosed(bid_id=bid, cause=cause):
                o = self._order(str(bid.order_id), at)
                if o.state == "bid":
                    o.state = "lost" if cause.value == "lease_lost" else "closed"
            case ManifestReceived(lease_id=lease):
                lv = self._lease(str(lease), at)
                if lv.state == "won":
                    lv.state = "manifest"
            case DeploymentApplied(lease_id=lease, services=services):
                lv = self._lease(str(lease), at)
                lv.services = list(services)
                if lv.state in ("won", "manifest"):
                    lv.state = "pending"
            case DeploymentHealth(lease_id=lease, state=state, message=message):
                lv = self._lease(str(lease), at)
                if lv.state not in ("closing", "closed"):
                    lv.state, lv.message = state, message
            case LeaseClosed(lease_id=lease) if str(lease) in self.leases:
                self._lease(str(lease), at).state = "closing"
            case LeaseTornDown(lease_id=lease):
                self._lease(str(lease), at).state = "closed"
            case InventoryChanged():
                return  # the inventory is shown as it is, not as a stream of changes
            case _:
                if stream == CHAIN_EVENTS:
                    return  # other providers' bids and leases: not ours to show
        self.events.append(EventLine(at, stream, envelope.type, describe(payload)))
        self.version += 1

    def counts(self) -> dict[str, dict[str, int]]:
        """How many orders and leases are in each state."""
        orders: dict[str, int] = {}
        for order in self.orders.values():
            orders[order.state] = orders.get(order.state, 0) + 1
        leases: dict[str, int] = {}
        for lease in self.leases.values():
            leases[lease.state] = leases.get(lease.state, 0) + 1
        return {"orders": orders, "leases": leases}

    def snapshot(self) -> dict[str, Any]:
        """Everything, newest first, as plain JSON-ready data."""
        return {
            "version": self.version,
            "orders": [asdict(o) for o in reversed(self.orders.values())],
            "leases": [asdict(lease) for lease in reversed(self.leases.values())],
            "events": [asdict(e) for e in reversed(self.events)],
            "bids_per_minute": [{"minute": m, **c} for m, c in self.bids_per_minute.items()],
            "counts": self.counts(),
        }
