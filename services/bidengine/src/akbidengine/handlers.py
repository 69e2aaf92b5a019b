"""From order to bid to lease: the bid engine's handlers, each a step of one order's life.

Every step is a transition of the order's record (:class:`akbus.Records`): its next state
is written in one guarded Redis write together with what the step sends (a ``BroadcastTx``
for the chain relay, an event on ``akash.provider.bidengine.events``), so a step is taken
once however often its trigger is delivered, and a process killed at any point resumes
where the record says. Whether to bid is one pure decision
(:func:`akbidengine.domain.decision.decide`), the same that screening answers with.
Requests to the cluster (reserve, unreserve) happen before the write and are idempotent by
order id.

Triggers: ``OrderCreated`` (and the catch-up of open orders at start and periodically),
``LeaseCreated``, ``OrderClosed``, ``BidClosed`` from the chain; ``TxCommitted`` /
``TxFailed`` for our bid commands; bid deadlines from a sorted set.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from akbidengine import metrics
from akbidengine.adapters.chain import ChainQueries
from akbidengine.domain.decision import Bid, Capacity, Decline, Need, decide
from akbidengine.domain.filtering import TenantPolicy
from akbidengine.domain.order import (
    ACTIVE_KEY,
    DEADLINES_KEY,
    FINAL_TTL_S,
    RECORD_PREFIX,
    OrderRecord,
    close_bid_key,
    create_bid_key,
)
from akbidengine.domain.pricing import PriceRequest, PricingError, PricingStrategy
from akbidengine.facts import Facts
from akbus import Bus, Change, Message, Records, RequestTimeout, RetryableError
from akchain.models import Order
from aktypes.coin import Coin, DecCoin
from aktypes.events import (
    BidCloseCause,
    BidClosed,
    BidDeclined,
    BidPlaced,
    BroadcastTx,
    CloseBid,
    CreateBid,
    DeclineReason,
    Envelope,
    LeaseClosedReason,
    LeaseCreated,
    LeaseWon,
    OrderClosed,
    OrderCreated,
    Payload,
    ProviderBidClosed,
    ReservationFailed,
    ReserveResources,
    ResourcesReserved,
    ResourcesUnreserved,
    TxCommitted,
    TxFailed,
    UnreserveResources,
)
from aktypes.events.streams import BIDENGINE_EVENTS, CHAIN_TX, CLUSTER_COMMANDS
from aktypes.groupspec import GroupSpec
from aktypes.ids import OrderID

log = logging.getLogger("akbidengine")
Ask = Callable[[Payload, Any], Awaitable[Any]]
"""Send a command to the cluster and wait for its reply (one of the given types)."""

_CLOSE_RESULT = {
    BidCloseCause.LEASE_LOST: "lease-lost",
    BidCloseCause.ORDER_CLOSED: "order-closed",
    BidCloseCause.CLOSED_EXTERNALLY: "bid-closed-external",
    BidCloseCause.BID_TIMEOUT: "bid-timeout",
}


@dataclass(frozen=True)
class BidPolicy:
    provider: str
    deposit: Coin
    bid_timeout: float  # 0: bids never time out
    reclamation_window: float
    tenants: TenantPolicy


class Orders:
    """The bid engine's state machine over Redis records (see :mod:`akbidengine.domain.order`)."""

    def __init__(
        self,
        bus: Bus,
        chain: ChainQueries,
        strategy: PricingStrategy,
        facts: Facts,
        policy: BidPolicy,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.bus = bus
        self.chain = chain
        self.strategy = strategy
        self.facts = facts
        self.policy = policy
        self.clock = clock
        self.records = Records(
            bus,
            OrderRecord,
            RECORD_PREFIX,
            active=ACTIVE_KEY,
            schedule=DEADLINES_KEY,
            final=lambda record: record.final,
            final_ttl_s=FINAL_TTL_S,
            log=log,
            noun="order",
            durable=True,  # a bid's record lost in a failover would bid again
        )

    # -- helpers --------------------------------------------------------------------------
    async def record(self, order_id: str) -> OrderRecord | None:
        return await self.records.get(order_id)

    def asker(self, msg: Message[Any] | None, scope: str) -> Ask:
        """Cluster requests with stable command ids: a re-run gets the reply already given."""
        count = 0

        async def ask(command: Payload, expect: Any) -> Any:
            nonlocal count
            count += 1
            try:
                if msg is not None:
                    return await msg.request(CLUSTER_COMMANDS, command, expect, timeout_s=10.0)
                seed = f"{scope}\0{count}\0{getattr(command, 'type', '')}"
                return await self.bus.request(
                    CLUSTER_COMMANDS,
                    command,
                    expect,
                    timeout_s=10.0,
                    attempts=3,
                    command_id=hashlib.sha256(seed.encode()).hexdigest()[:32],
                )
            except RequestTimeout as exc:
                raise RetryableError(f"the cluster service did not answer: {exc}") from exc

        return ask

    async def _unreserve(self, ask: Ask, order_id: OrderID) -> None:
        await ask(UnreserveResources(order_id=order_id), ResourcesUnreserved)
        metrics.RESERVATION.labels("unreserve", "success").inc()

    async def decline(
        self, order_id: OrderID, reasons: list[DeclineReason], cause: Envelope[Any] | None
    ) -> None:
        declined = BidDeclined(order_id=order_id, reasons=reasons)
        record = OrderRecord(
            order_id=str(order_id),
            state="declined",
            owner=order_id.owner,
            reasons=[f"{r.code}: {r.message}" for r in reasons],
            updated_at=self.clock(),
        )

        def first(before: OrderRecord | None) -> Change[OrderRecord] | None:
            if before is not None:
                return None
            return Change(record, publish=[(BIDENGINE_EVENTS, declined)])

        _, after = await self.records.update(str(order_id), first, cause=cause)
        if after is not None:
            log.info("declined order %s: %s", order_id, "; ".join(r.code for r in reasons))

    # -- a new order ----------------------------------------------------------------------
    async def on_order_created(self, msg: Message[OrderCreated]) -> None:
        order_id = msg.payload.order_id
        if await self.record(str(order_id)) is not None:
            return
        order = await self.chain.order(order_id)
        if order is None or order.state != "open":
            return
        await self.consider(order, self.asker(msg, ""), msg.envelope)

    async def judge(
        self, group: GroupSpec, owner: str, capacity: Callable[[], Awaitable[Capacity]]
    ) -> Bid | Decline:
        """Run :func:`~akbidengine.domain.decision.decide` to its verdict, asking
        ``capacity`` for the cluster's answer and the pricing strategy for the price."""
        facts, tenants = self.facts.current(), self.policy.tenants
        offered: Capacity | None = None
        price: DecCoin | PricingError | None = None
        while True:
            verdict = decide(group, owner, facts, tenants, capacity=offered, price=price)
            if verdict is Need.CAPACITY:
                offered = await capacity()
            elif verdict is Need.PRICE:
                offer = offered.offer if offered is not None else ()
                started = time.monotonic()
                try:
                    price = await self.strategy.price(PriceRequest(owner, group, offer))
                except PricingError as exc:
                    price = exc
                metrics.PRICING_DURATION.observe(time.monotonic() - started)
            else:
                return verdict

    async def consider(self, order: Order, ask: Ask, cause: Envelope[Any] | None) -> None:
        """Screen, reserve, price and bid on ``order`` — once, whatever runs it again."""
        order_id, spec = order.id, order.spec

        async def reserve() -> Capacity:
            metrics.SHOULD_BID.labels("accept").inc()  # the filters passed
            started = time.monotonic()
            reply = await ask(
                ReserveResources(order_id=order_id, group=spec),
                (ResourcesReserved, ReservationFailed),
            )
            metrics.RESERVATION_DURATION.observe(time.monotonic() - started)
            if isinstance(reply, ReservationFailed):
                metrics.RESERVATION.labels("reserve", "fail").inc()
                return Capacity(reasons=(DeclineReason(code=reply.code, message=reply.reason),))
            metrics.RESERVATION.labels("reserve", "success").inc()
            return Capacity(offer=tuple(reply.allocated))

        verdict = await self.judge(spec, order_id.owner, reserve)
        if isinstance(verdict, Decline):
            if verdict.at == "filters":
                metrics.SHOULD_BID.labels("decline").inc()
            if verdict.at == "price":
                await self._unreserve(ask, order_id)
            await self.decline(order_id, verdict.reasons, cause)
            return
        bid = CreateBid(
            bid_id=order_id.bid(self.policy.provider),
            price=verdict.price,
            deposit=self.policy.deposit,
            resources_offer=list(verdict.offer),
            reclamation_window_seconds=int(self.policy.reclamation_window) or None,
        )
        broadcast = BroadcastTx(key=create_bid_key(str(order_id)), msgs=[bid])
        record = OrderRecord(
            order_id=str(order_id),
            state="bidding",
            owner=order_id.owner,
            group=spec,
            price=verdict.price,
            deposit=self.policy.deposit,
            allocated=list(verdict.offer),
            updated_at=self.clock(),
        )

        def bidding(before: OrderRecord | None) -> Change[OrderRecord] | None:
            if before is not None:
                return None
            return Change(record, publish=[(CHAIN_TX, broadcast)])

        before, _ = await self.records.update(str(order_id), bidding, cause=cause, absent=True)
        if before is not None and before.state in ("declined", "closed", "failed"):
            await self._unreserve(ask, order_id)  # another path finished it meanwhile

    # -- the outcome of our transactions --------------------------------------------------
    async def on_tx_committed(self, msg: Message[TxCommitted]) -> None:
        kind, _, order = msg.payload.key.partition("/")
        if kind != "create-bid":
            return
        now = self.clock()
        # The bid's time runs from its commit (as the relay reported it), not from this
        # handler: a bid that landed while the engine was down gets no extra time.
        landed = min(now, msg.envelope.time.timestamp())
        bid_id = OrderID.parse(order).bid(self.policy.provider)

        def landed_bid(before: OrderRecord | None) -> Change[OrderRecord] | None:
            if before is None or before.state not in ("bidding", "closing"):
                return None
            if before.state == "closing":
                return self._close(before, before.cause or BidCloseCause.LEASE_LOST, now)
            events: list[tuple[str, Payload]] = []
            if before.price is not None and before.deposit is not None:  # set when bidding
                placed = BidPlaced(bid_id=bid_id, price=before.price, deposit=before.deposit)
                events.append((BIDENGINE_EVENTS, placed))
            timeout = self.policy.bid_timeout
            due = landed + timeout if timeout > 0 else None
            return Change(before.to("open", now), publish=events, due=due)

        before, after = await self.records.update(order, landed_bid, cause=msg.envelope)
        if before is not None and after is not None and before.state != after.state:
            metrics.BID.labels("open", "success").inc()
        self._count_closed(before, after)

    async def on_tx_failed(self, msg: Message[TxFailed]) -> None:
        kind, _, order = msg.payload.key.partition("/")
        if kind == "close-bid":
            metrics.BID.labels("close", "fail").inc()
            log.warning("closing the bid on %s failed: %s", order, msg.payload.log)
            return
        if kind != "create-bid":
            return
        record = await self.record(order)
        if record is None or record.state not in ("bidding", "closing"):
            return
        order_id = OrderID.parse(order)
        await self._unreserve(self.asker(msg, ""), order_id)
        reason = DeclineReason(
            code="bid_rejected", message=f"the chain refused the bid: {msg.payload.log}"[:500]
        )
        declined = BidDeclined(order_id=order_id, reasons=[reason])
        now = self.clock()

        def failed(before: OrderRecord | None) -> Change[OrderRecord] | None:
            if before is None or before.state not in ("bidding", "closing"):
                return None
            after = before.to("failed", now, reasons=[f"{reason.code}: {reason.message}"])
            return Change(after, publish=[(BIDENGINE_EVENTS, declined)])

        await self.records.update(order, failed, cause=msg.envelope)
        metrics.BID.labels("open", "fail").inc()

    # -- what the chain did ---------------------------------------------------------------
    def _close(
        self, before: OrderRecord, cause: BidCloseCause, now: float, *, send: bool = True
    ) -> Change[OrderRecord]:
        bid_id = OrderID.parse(before.order_id).bid(self.policy.provider)
        events: list[tuple[str, Payload]] = []
        if send:
            close = CloseBid(bid_id=bid_id, reason=LeaseClosedReason.UNSPECIFIED)
            broadcast = BroadcastTx(key=close_bid_key(before.order_id), msgs=[close])
            events.append((CHAIN_TX, broadcast))
        events.append((BIDENGINE_EVENTS, ProviderBidClosed(bid_id=bid_id, cause=cause)))
        return Change(before.to("closed", now, cause=cause), publish=events)

    @staticmethod
    def _count_closed(before: OrderRecord | None, after: OrderRecord | None) -> None:
        if after is None or after.state != "closed" or after.cause is None:
            return
        if before is None or before.state != "closed":
            metrics.ORDER_COMPLETE.labels(_CLOSE_RESULT.get(after.cause, after.cause.value)).inc()

    async def finish(
        self,
        order: str,
        cause: BidCloseCause,
        ask: Ask,
        envelope: Envelope[Any] | None,
        *,
        send: bool,
    ) -> bool:
        """Our bid on ``order`` is over: release the reservation, close the bid if needed.
        Whether the bid was in play (then its record is closed, or closing)."""
        record = await self.record(order)
        order_id = OrderID.parse(order)
        if record is None:
            # A reservation may have been asked for and not answered yet (the cluster was
            # down): release it. The cluster then refuses any later reservation of the order.
            await self._unreserve(ask, order_id)
            return False
        if record.state not in ("bidding", "open", "closing"):
            return False
        await self._unreserve(ask, order_id)
        if send and record.state == "open":
            # A lost bid is marked lost by the chain, a closed order's bids are closed by it:
            # only a bid still open needs our CloseBid (a failing one would cost a fee).
            on_chain = await self.chain.bid(order_id.bid(self.policy.provider))
            send = on_chain is not None and on_chain.state == "open"
        now = self.clock()

        def over(before: OrderRecord | None) -> Change[OrderRecord] | OrderRecord | None:
            if before is None or before.state not in ("bidding", "open"):
                return None
            if before.state == "bidding":  # the bid is still on its way: close it once it lands
                return before.to("closing", now, cause=cause)
            return self._close(before, cause, now, send=send)

        before, after = await self.records.update(order, over, cause=envelope)
        self._count_closed(before, after)
        return after is not None

    async def on_lease_created(self, msg: Message[LeaseCreated]) -> None:
        lease = msg.payload.lease_id
        order = str(lease.order_id)
        if lease.provider != self.policy.provider:
            await self.finish(
                order, BidCloseCause.LEASE_LOST, self.asker(msg, ""), msg.envelope, send=True
            )
            return
        record = await self.record(order)
        group = record.group if record is not None else None
        if group is None:
            chain_order = await self.chain.order(lease.order_id)
            if chain_order is None:
                log.warning("lease %s won for an order the chain does not know", lease)
                return
            group = chain_order.spec
        won = LeaseWon(lease_id=lease, group=group, price=msg.payload.price)
        now = self.clock()

        def winning(before: OrderRecord | None) -> Change[OrderRecord] | None:
            if before is not None and before.state in ("won", "closed", "declined", "failed"):
                return None
            events: list[tuple[str, Payload]] = []
            if (
                before is not None
                and before.state == "bidding"
                and before.price is not None
                and before.deposit is not None
            ):  # the lease proves the bid landed; its commit result is still on its way
                placed = BidPlaced(bid_id=lease.bid_id, price=before.price, deposit=before.deposit)
                events.append((BIDENGINE_EVENTS, placed))
            events.append((BIDENGINE_EVENTS, won))
            base = before or OrderRecord(
                order_id=order, state="won", owner=lease.owner, group=group
            )
            return Change(base.to("won", now), publish=events)

        before, after = await self.records.update(order, winning, cause=msg.envelope)
        if after is not None and after.state == "won" and (before is None or before.state != "won"):
            metrics.ORDER_COMPLETE.labels("lease-won").inc()

    async def on_order_closed(self, msg: Message[OrderClosed]) -> None:
        # The chain closes the open bids of a closed order itself; nothing to send.
        await self.finish(
            str(msg.payload.order_id),
            BidCloseCause.ORDER_CLOSED,
            self.asker(msg, ""),
            msg.envelope,
            send=False,
        )

    async def on_bid_closed(self, msg: Message[BidClosed]) -> None:
        bid = msg.payload.bid_id
        if bid.provider != self.policy.provider:
            return
        await self.finish(
            str(bid.order_id),
            BidCloseCause.CLOSED_EXTERNALLY,
            self.asker(msg, ""),
            msg.envelope,
            send=False,
        )

    # -- deadlines ------------------------------------------------------------------------
    async def expire_due(self) -> int:
        """Close every bid whose deadline passed; how many were due."""
        due = await self.records.due(self.clock())
        for order, _ in due:
            await self.finish(
                order,
                BidCloseCause.BID_TIMEOUT,
                self.asker(None, f"timeout/{order}"),
                None,
                send=True,
            )
            record = await self.record(order)
            if record is None or record.state != "open":  # finished some other way
                await self.records.reschedule(order, None)
        return len(due)
