"""Bid screening: would the bid engine bid on a group, and at what price? Nothing is reserved.

Answers ``ScreenBid`` on ``akash.provider.bidengine.commands`` with the verdict of the same
decision a bid takes (:func:`akbidengine.domain.decision.decide`): every reason not to bid
— the engine's own filters, then the cluster's dry run (``ScreenGroup``) in place of a
reservation, then the price against the group's maximum — or the offer and the price a bid
would carry. This is the "why did you not bid?" that Akash declares (gRPC
``BidScreening``) and never answers.
"""

from __future__ import annotations

from akbidengine.domain.decision import Bid, Capacity
from akbidengine.handlers import Orders
from akbus import Message
from aktypes.events import BidScreened, GroupScreened, ScreenBid, ScreenGroup


async def on_screen_bid(orders: Orders, msg: Message[ScreenBid]) -> None:
    group, owner = msg.payload.group, msg.payload.owner
    ask = orders.asker(msg, "")

    async def dry_run() -> Capacity:
        reply = await ask(ScreenGroup(group=group), GroupScreened)
        if reply.passed:
            return Capacity(offer=tuple(reply.allocated))
        return Capacity.refused(reply.reasons)

    verdict = await orders.judge(group, owner, dry_run)
    if isinstance(verdict, Bid):
        await msg.reply(BidScreened(passed=True, offer=list(verdict.offer), price=verdict.price))
        return
    await msg.reply(
        BidScreened(
            passed=False, reasons=verdict.reasons, offer=list(verdict.offer), price=verdict.price
        )
    )
