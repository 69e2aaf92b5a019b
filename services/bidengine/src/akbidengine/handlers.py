"""From order to bid to lease: the bid engine's handlers, each a step of one order's life.

Every step reads the order's record and writes its next state in one Redis transaction
together with what the step sends (a ``BroadcastTx`` for the chain relay, an event on
``akash.provider.bidengine.events``), so a step is taken once however often its trigger is
delivered, and a process killed at any point resumes where the record says. Requests to the
cluster (reserve, unreserve) happen before the transaction and are idempotent by order id.

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
from akbidengine.domain.filtering import TenantPolicy, screen
from akbidengine.domain.order import (
    ACTIVE_KEY,
    DEADLINES_KEY,
    FINAL_TTL_S,
    OrderRecord,
    close_bid_key,
    create_bid_key,
    record_key,
)
from akbidengine.domain.pricing import PriceRequest, PricingError, PricingStrategy
from akbidengine.facts import Facts
from akbus import Bus, BusTx, Message, RequestTimeout, RetryableError
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

    # -- helpers --------------------------------------------------------------------------
    async def record(self, order_id: str) -> OrderRecord | None:
        raw = await self.bus.backend.get(record_key(order_id))
        return OrderRecord.model_validate_json(raw) if raw else None

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

    async def _step(
        self,
        order_id: str,
        body: Callable[[OrderRecord | None, BusTx], OrderRecord | None],
        cause: Envelope[Any] | None,
        *,
        absent: bool = False,
    ) -> tuple[OrderRecord | None, OrderRecord | None]:
        """Run ``body`` on the stored record; store what it returns. (before, after)

        One guarded write: it commits only if the record is still the one ``body`` saw,
        else the record is read again and ``body`` runs again. ``absent``: the caller has
        just seen that there is no record (saves reading it).
        """
        key = record_key(order_id)
        raw: str | None = None
        while True:
            if not absent:
                raw = await self.bus.backend.get(key)
            absent = False
            before = OrderRecord.model_validate_json(raw) if raw else None
            after: OrderRecord | None = None

            async def write(tx: BusTx, before: OrderRecord | None = before) -> None:
                nonlocal after
                after = body(before, tx)
                if after is None or after is before:
                    return
                ttl = FINAL_TTL_S if after.final else None
                tx.state.set(key, after.model_dump_json(), ex=ttl)
                if after.final:
                    tx.state.srem(ACTIVE_KEY, order_id)
                    tx.state.zrem(DEADLINES_KEY, order_id)
                else:
                    tx.state.sadd(ACTIVE_KEY, order_id)

            if await self.bus.apply_if(key, raw, write, cause=cause):
                break
        if after is not None and (before is None or before.state != after.state):
            log.info(
                "order %s: %s -> %s",
                order_id,
                before.state if before else "new",
                after.state,
                extra={"order_id": order_id, "cause": after.cause or ""},
            )
        return before, after

    def _decline(self, order_id: OrderID, reasons: list[DeclineReason]) -> Callable[..., Any]:
        def body(before: OrderRecord | None, tx: BusTx) -> OrderRecord | None:
            if before is not None:
                return before
            tx.publish(BIDENGINE_EVENTS, BidDeclined(order_id=order_id, reasons=reasons))
            return OrderRecord(
                order_id=str(order_id),
                state="declined",
                owner=order_id.owner,
                reasons=[f"{r.code}: {r.message}" for r in reasons],
                updated_at=self.clock(),
            )

        return body

    async def decline(
        self, order_id: OrderID, reasons: list[DeclineReason], cause: Envelope[Any] | None
    ) -> None:
        _, after = await self._step(str(order_id), self._decline(order_id, reasons), cause)
        if after is not None and after.state == "declined":
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

    async def consider(self, order: Order, ask: Ask, cause: Envelope[Any] | None) -> None:
        """Screen, reserve, price and bid on ``order`` — once, whatever runs it again."""
        order_id, spec = order.id, order.spec
        reasons = screen(spec, order_id.owner, self.facts.current(), self.policy.tenants)
        if reasons:
            metrics.SHOULD_BID.labels("decline").inc()
            await self.decline(order_id, reasons, cause)
            return
        metrics.SHOULD_BID.labels("accept").inc()
        started = time.monotonic()
        reply = await ask(
            ReserveResources(order_id=order_id, group=spec), (ResourcesReserved, ReservationFailed)
        )
        metrics.RESERVATION_DURATION.observe(time.monotonic() - started)
        if isinstance(reply, ReservationFailed):
            metrics.RESERVATION.labels("reserve", "fail").inc()
            reason = DeclineReason(code=reply.code, message=reply.reason)
            await self.decline(order_id, [reason], cause)
            return
        metrics.RESERVATION.labels("reserve", "success").inc()
        allocated = tuple(reply.allocated)
        started = time.monotonic()
        try:
            price = await self.strategy.price(PriceRequest(order_id.owner, spec, allocated))
            problem = price_problem(price, spec.price())
        except PricingError as exc:
            problem = DeclineReason(code=exc.code, message=str(exc))
        metrics.PRICING_DURATION.observe(time.monotonic() - started)
        if problem is not None:
            await self._unreserve(ask, order_id)
            await self.decline(order_id, [problem], cause)
            return
        bid = CreateBid(
            bid_id=order_id.bid(self.policy.provider),
            price=price,
            deposit=self.policy.deposit,
            resources_offer=list(allocated),
            reclamation_window_seconds=int(self.policy.reclamation_window) or None,
        )

        def body(before: OrderRecord | None, tx: BusTx) -> OrderRecord | None:
            if before is not None:
                return before
            tx.publish(CHAIN_TX, BroadcastTx(key=create_bid_key(str(order_id)), msgs=[bid]))
            return OrderRecord(
                order_id=str(order_id),
                state="bidding",
                owner=order_id.owner,
                group=spec,
                price=price,
                deposit=self.policy.deposit,
                allocated=list(allocated),
                updated_at=self.clock(),
            )

        before, _ = await self._step(str(order_id), body, cause, absent=True)
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

        def body(before: OrderRecord | None, tx: BusTx) -> OrderRecord | None:
            if before is None or before.state not in ("bidding", "closing"):
                return before
            bid_id = OrderID.parse(order).bid(self.policy.provider)
            if before.state == "closing":
                return self._close(before, tx, before.cause or BidCloseCause.LEASE_LOST, now)
            if before.price is not None and before.deposit is not None:  # set when bidding
                placed = BidPlaced(bid_id=bid_id, price=before.price, deposit=before.deposit)
                tx.publish(BIDENGINE_EVENTS, placed)
            if self.policy.bid_timeout > 0:
                tx.state.zadd(DEADLINES_KEY, {order: landed + self.policy.bid_timeout})
            return before.to("open", now)

        before, after = await self._step(order, body, msg.envelope)
        if before is not None and after is not None and before.state != after.state:
            metrics.BID.labels("open", "success").inc()

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
        now = self.clock()

        def body(before: OrderRecord | None, tx: BusTx) -> OrderRecord | None:
            if before is None or before.state not in ("bidding", "closing"):
                return before
            tx.publish(BIDENGINE_EVENTS, BidDeclined(order_id=order_id, reasons=[reason]))
            return before.to("failed", now, reasons=[f"{reason.code}: {reason.message}"])

        await self._step(order, body, msg.envelope)
        metrics.BID.labels("open", "fail").inc()

    # -- what the chain did ---------------------------------------------------------------
    def _close(
        self, before: OrderRecord, tx: BusTx, cause: BidCloseCause, now: float, *, send: bool = True
    ) -> OrderRecord:
        bid_id = OrderID.parse(before.order_id).bid(self.policy.provider)
        if send:
            close = CloseBid(bid_id=bid_id, reason=LeaseClosedReason.UNSPECIFIED)
            tx.publish(CHAIN_TX, BroadcastTx(key=close_bid_key(before.order_id), msgs=[close]))
        tx.publish(BIDENGINE_EVENTS, ProviderBidClosed(bid_id=bid_id, cause=cause))
        metrics.ORDER_COMPLETE.labels(_CLOSE_RESULT.get(cause, cause.value)).inc()
        return before.to("closed", now, cause=cause)

    async def finish(
        self,
        order: str,
        cause: BidCloseCause,
        ask: Ask,
        envelope: Envelope[Any] | None,
        *,
        send: bool,
    ) -> None:
        """Our bid on ``order`` is over: release the reservation, close the bid if needed."""
        record = await self.record(order)
        order_id = OrderID.parse(order)
        if record is None:
            # A reservation may have been asked for and not answered yet (the cluster was
            # down): release it. The cluster then refuses any later reservation of the order.
            await self._unreserve(ask, order_id)
            return
        if record.state not in ("bidding", "open", "closing"):
            return
        await self._unreserve(ask, order_id)
        if send and record.state == "open":
            # A lost bid is marked lost by the chain, a closed order's bids are closed by it:
            # only a bid still open needs our CloseBid (a failing one would cost a fee).
            on_chain = await self.chain.bid(order_id.bid(self.policy.provider))
            send = on_chain is not None and on_chain.state == "open"
        now = self.clock()

        def body(before: OrderRecord | None, tx: BusTx) -> OrderRecord | None:
            if before is None or before.state not in ("bidding", "open"):
                return before
            if before.state == "bidding":  # the bid is still on its way: close it once it lands
                return before.to("closing", now, cause=cause)
            return self._close(before, tx, cause, now, send=send)

        await self._step(order, body, envelope)

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
        now = self.clock()

        def body(before: OrderRecord | None, tx: BusTx) -> OrderRecord | None:
            if before is not None and before.state in ("won", "closed", "declined", "failed"):
                return before
            if (
                before is not None
                and before.state == "bidding"
                and before.price is not None
                and before.deposit is not None
            ):  # the lease proves the bid landed; its commit result is still on its way
                placed = BidPlaced(bid_id=lease.bid_id, price=before.price, deposit=before.deposit)
                tx.publish(BIDENGINE_EVENTS, placed)
            tx.publish(
                BIDENGINE_EVENTS, LeaseWon(lease_id=lease, group=group, price=msg.payload.price)
            )
            base = before or OrderRecord(
                order_id=order, state="won", owner=lease.owner, group=group
            )
            return base.to("won", now)

        before, after = await self._step(order, body, msg.envelope)
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
        due = await self.bus.backend.zrangebyscore(DEADLINES_KEY, 0, self.clock())
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

                async def forget(tx: BusTx, order: str = order) -> None:
                    tx.state.zrem(DEADLINES_KEY, order)

                await self.bus.transact(forget)
        return len(due)


def price_problem(price: DecCoin, maximum: DecCoin) -> DeclineReason | None:
    if price.denom != maximum.denom:
        return DeclineReason(
            code="price_denom_mismatch",
            message=f"priced in {price.denom}, the order pays in {maximum.denom}",
        )
    if price.amount > maximum.amount:
        return DeclineReason(
            code="price_above_max", message=f"{price} is above the order's maximum {maximum}"
        )
    if not price.amount.is_positive():
        return DeclineReason(code="price_zero", message=f"the price {price} is not positive")
    return None
