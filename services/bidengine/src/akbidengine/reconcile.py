"""The bid engine's reconciliation with the chain: a sweep at start, then periodically.

A missed ``OrderClosed`` leaves a bid open here for ever, holding its reservation. Every
``AP_BID_RECONCILE_INTERVAL`` the bid engine reads its bids in play (from Redis), then the
chain's open bids of this provider (every page, or the sweep is skipped), looks up the
orders that disagree, and closes the bids of the orders the chain has closed
(:func:`akbidengine.domain.reconcile.compare`) — once the finding was made on two sweeps in
a row at least ``AP_BID_RECONCILE_GRACE`` apart (:class:`aktypes.reconcile.Sightings`).

The repair is the path ``OrderClosed`` takes (:meth:`akbidengine.handlers.Orders.finish`),
asked to send a ``CloseBid``: the reservation is released, the record closed with a
``bid.closed`` (cause ``order_closed``), and a ``CloseBid`` goes to the relay only while the
chain still has the bid open (Akash's chain closes the bids of a closed order itself; a
``CloseBid`` for a closed bid fails and costs a fee), under the key ``close-bid/<order>``
(the relay's idempotency key: sent at most once, whatever sweep or path sends it again).
An open bid on chain without a bid in play here gets the same ``CloseBid`` and release; a
bid repaired once is not repaired again while the chain still lists it (its ``CloseBid`` is
on its way). Each repair is a ``reconcile.repaired`` on ``akash.provider.bidengine.events``
and counts in ``provider_reconcile_repairs_total{kind="bid_open_order_closed"}``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from akbidengine.domain.order import close_bid_key
from akbidengine.domain.reconcile import ChainView, compare, suspects
from akbidengine.errors import ChainUnavailable
from akbidengine.handlers import Orders
from akbus import ConnectionLost
from akservice.reconcile import REPAIRS, keep_sweeping
from aktypes.events import (
    BidCloseCause,
    BroadcastTx,
    CloseBid,
    LeaseClosedReason,
    ReconcileRepaired,
    ResourcesUnreserved,
    UnreserveResources,
)
from aktypes.events.streams import BIDENGINE_EVENTS, CHAIN_TX
from aktypes.ids import OrderID
from aktypes.reconcile import Sightings

log = logging.getLogger("akbidengine.reconcile")


class Reconciliation:
    """The bid engine's sweeps against the chain, and their repairs."""

    def __init__(
        self, orders: Orders, *, grace: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.orders = orders
        self.sightings: Sightings[str] = Sightings(grace)
        self.clock = clock
        self.closed: set[str] = set()  # repaired, and still found: the CloseBid is on its way

    async def sweep(self) -> list[str]:
        """One sweep: the orders whose bid was closed by it."""
        orders = self.orders
        in_play = sorted(await orders.records.members())
        records = await orders.records.get_many(in_play)
        open_records = [r.order_id for r in records if r is not None and r.state == "open"]
        bids = await orders.chain.open_bids(orders.policy.provider)
        listed = ChainView(open_bids=[str(bid.id.order_id) for bid in bids])
        states: dict[str, str] = {}
        for order in suspects(open_records, in_play, listed):
            on_chain = await orders.chain.order(OrderID.parse(order))
            states[order] = on_chain.state if on_chain is not None else ""
        chain = ChainView(open_bids=listed.open_bids, orders=states)
        found = compare(open_records, in_play, chain)
        self.closed &= set(found)
        confirmed = self.sightings.confirm(found, self.clock())
        return [o for o in confirmed if o not in self.closed and await self.repair(o)]

    async def repair(self, order: str) -> bool:
        """Close our bid on ``order``, closed on chain; whether anything was done (then it is
        published and counted)."""
        orders, order_id = self.orders, OrderID.parse(order)
        ask = orders.asker(None, f"reconcile/{order}")
        cause = BidCloseCause.ORDER_CLOSED
        if not await orders.finish(order, cause, ask, None, send=True):
            bid_id = order_id.bid(orders.policy.provider)
            on_chain = await orders.chain.bid(bid_id)
            if on_chain is None or on_chain.state != "open":
                return False
            close = CloseBid(bid_id=bid_id, reason=LeaseClosedReason.UNSPECIFIED)
            await orders.bus.publish(CHAIN_TX, BroadcastTx(key=close_bid_key(order), msgs=[close]))
            await ask(UnreserveResources(order_id=order_id), ResourcesUnreserved)
        self.closed.add(order)
        log.warning(
            "reconciliation: the bid on %s closed (its order is closed on chain)",
            order,
            extra={"order_id": order},
        )
        event = ReconcileRepaired(
            kind="bid_open_order_closed",
            action="closed",
            order_id=order_id,
            message="order closed on chain",
        )
        await orders.bus.publish(BIDENGINE_EVENTS, event)
        REPAIRS.labels("bid_open_order_closed").inc()
        return True

    async def run(self, interval: float, sleep: Callable[[float], Awaitable[bool]]) -> None:
        """Sweep now and every ``interval``; a sweep that cannot read everything is skipped
        (one line says why)."""
        await keep_sweeping(
            self.sweep, interval, sleep, unreadable=(ChainUnavailable, ConnectionLost), log=log
        )
