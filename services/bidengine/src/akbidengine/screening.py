"""Bid screening: would the bid engine bid on a group, and at what price? Nothing is reserved.

Answers ``ScreenBid`` on ``akash.provider.bidengine.commands`` with every reason not to bid
— the engine's own filters, then the cluster's dry run (``ScreenGroup``), then the price
against the group's maximum — or with the offer and the price a bid would carry. This is
the "why did you not bid?" that Akash declares (gRPC ``BidScreening``) and never answers.
"""

from __future__ import annotations

from akbidengine.domain.filtering import screen
from akbidengine.domain.pricing import PriceRequest, PricingError
from akbidengine.handlers import Orders, price_problem
from akbus import Message
from aktypes.events import BidScreened, DeclineReason, GroupScreened, ScreenBid, ScreenGroup


async def on_screen_bid(orders: Orders, msg: Message[ScreenBid]) -> None:
    group, owner = msg.payload.group, msg.payload.owner
    reasons = screen(group, owner, orders.facts.current(), orders.policy.tenants)
    if reasons:
        await msg.reply(BidScreened(passed=False, reasons=reasons))
        return
    ask = orders.asker(msg, "")
    dry_run = await ask(ScreenGroup(group=group), GroupScreened)
    if not dry_run.passed:
        found = []
        for text in dry_run.reasons or ["the cluster cannot run this group"]:
            code, sep, message = text.partition(": ")
            found.append(
                DeclineReason(
                    code=code if sep else "insufficient_capacity", message=message or text
                )
            )
        await msg.reply(BidScreened(passed=False, reasons=found))
        return
    offer = tuple(dry_run.allocated)
    try:
        price = await orders.strategy.price(PriceRequest(owner, group, offer))
        problem = price_problem(price, group.price())
    except PricingError as exc:
        await msg.reply(
            BidScreened(
                passed=False,
                reasons=[DeclineReason(code=exc.code, message=str(exc))],
                offer=list(offer),
            )
        )
        return
    if problem is not None:
        await msg.reply(
            BidScreened(passed=False, reasons=[problem], offer=list(offer), price=price)
        )
        return
    await msg.reply(BidScreened(passed=True, offer=list(offer), price=price))
