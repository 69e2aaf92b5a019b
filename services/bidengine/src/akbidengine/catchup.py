"""Catch-up: bid on open orders the event stream did not bring (at start, then periodically).

Akash's provider reads open orders once at start and retries a failing query in a tight
loop; missed events then mean missed orders until the next restart. Here the open orders
are read page by page at start and every ``AP_BID_CATCHUP_INTERVAL``, with growing pauses
after failures. An order with a record is skipped; for one without, the chain is asked
whether our bid exists already (a record lost with its Redis, a bid placed by hand): an
open bid is adopted with a fresh deadline, any other means the order is done for us.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from akbidengine.domain.order import OrderRecord, State
from akbidengine.errors import ChainUnavailable
from akbidengine.handlers import Orders
from akbus import Change
from akchain.models import Order
from aktypes.events import ReservationFailed, ReserveResources, ResourcesReserved

log = logging.getLogger("akbidengine.catchup")


async def adopt_or_consider(orders: Orders, order: Order, session: str) -> None:
    key = str(order.id)
    if await orders.record(key) is not None:
        return
    ask = orders.asker(None, f"catchup/{session}/{key}")
    existing = await orders.chain.bid(order.id.bid(orders.policy.provider))
    if existing is None:
        await orders.consider(order, ask, None)
        return
    now = orders.clock()
    state: State = "open" if existing.state == "open" else "closed"
    if state == "open":
        reply = await ask(
            ReserveResources(order_id=order.id, group=order.spec),
            (ResourcesReserved, ReservationFailed),
        )
        if isinstance(reply, ReservationFailed):
            log.warning("our open bid on %s has no capacity behind it: %s", key, reply.reason)

    record = OrderRecord(
        order_id=key,
        state=state,
        owner=order.id.owner,
        group=order.spec,
        price=existing.price,
        deposit=orders.policy.deposit,
        updated_at=now,
    )
    timeout = orders.policy.bid_timeout
    due = now + timeout if state == "open" and timeout > 0 else None

    def adopt(before: OrderRecord | None) -> Change[OrderRecord] | None:
        return Change(record, due=due) if before is None else None

    await orders.records.update(key, adopt, absent=True)


async def catch_up(orders: Orders, session: str, *, concurrency: int = 16) -> int:
    """Consider every open order once; how many were read."""
    seen = 0
    limit = asyncio.Semaphore(concurrency)
    tasks: set[asyncio.Task[None]] = set()

    async def one(order: Order) -> None:
        async with limit:
            try:
                await adopt_or_consider(orders, order, session)
            except Exception as exc:  # one order must not stop the others
                log.warning("catch-up of order %s failed", order.id, extra={"error": str(exc)})

    async for order in orders.chain.open_orders():
        seen += 1
        await limit.acquire()
        limit.release()
        task = asyncio.create_task(one(order))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    return seen


async def keep_catching_up(
    orders: Orders, session: str, interval: float, sleep: Callable[[float], Awaitable[bool]]
) -> None:
    """Catch up now and every ``interval``; a failing query is retried after 1, 2, 4… 60 s."""
    pause = 1.0
    rounds = 0
    while True:
        try:
            count = await catch_up(orders, f"{session}/{rounds}")
            log.info("catch-up read %d open order(s)", count)
            pause, wait = 1.0, interval
        except ChainUnavailable as exc:
            log.warning("catch-up failed; retrying", extra={"error": str(exc)})
            wait, pause = pause, min(pause * 2, 60.0)
        rounds += 1
        if not await sleep(wait):
            return
