"""Whether to bid on a group, and at what price: one decision for bids and for screening. Pure.

A decision takes three answers, in this order, and stops at the first that says no:

1. the engine's own filters (:func:`~akbidengine.domain.filtering.screen`);
2. the cluster's capacity: the offer it can make for the group, or why it cannot run it —
   a reservation when bidding, a dry run when screening;
3. the price: the pricing strategy's, which must be positive and within the group's
   maximum, in the order's denomination.

:func:`decide` takes what is known so far and says what comes next: :data:`Need.CAPACITY`
or :data:`Need.PRICE` (the caller asks the cluster, or prices, and calls it again with the
answer), or the verdict, :class:`Bid` or :class:`Decline`. The bid engine's order handler
and its screening both run it, so a screening answers exactly what a bid would do.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from akbidengine.domain.filtering import ProviderFacts, TenantPolicy, screen
from akbidengine.domain.pricing import PricingError
from aktypes.coin import DecCoin
from aktypes.events import DeclineReason, ResourceOffer
from aktypes.groupspec import GroupSpec

NO_CAPACITY = "insufficient_capacity"


class Need(enum.Enum):
    """What :func:`decide` needs next."""

    CAPACITY = "capacity"
    PRICE = "price"


@dataclass(frozen=True)
class Capacity:
    """The cluster's answer: the offer it can make, or why it cannot run the group."""

    offer: tuple[ResourceOffer, ...] = ()
    reasons: tuple[DeclineReason, ...] = ()  # empty: the cluster can run it

    @classmethod
    def refused(cls, texts: Sequence[str]) -> Capacity:
        """A dry run's refusal: its reasons as ``code: message`` texts (a text without a
        code is ``insufficient_capacity``)."""
        reasons = []
        for text in texts or ["the cluster cannot run this group"]:
            code, sep, message = text.partition(": ")
            reasons.append(
                DeclineReason(code=code if sep else NO_CAPACITY, message=message or text)
            )
        return cls(reasons=tuple(reasons))


@dataclass(frozen=True)
class Bid:
    offer: tuple[ResourceOffer, ...]
    price: DecCoin


@dataclass(frozen=True)
class Decline:
    reasons: list[DeclineReason]
    at: Literal["filters", "capacity", "price"]  # the answer that said no
    offer: tuple[ResourceOffer, ...] = ()
    price: DecCoin | None = None


def decide(
    group: GroupSpec,
    owner: str,
    facts: ProviderFacts,
    tenants: TenantPolicy,
    *,
    capacity: Capacity | None = None,
    price: DecCoin | PricingError | None = None,
) -> Need | Bid | Decline:
    """The next step of the decision on ``group`` for ``owner``, given the answers so far.

    Without ``capacity`` the filters run (they pass once the cluster is asked, so later
    calls do not run them again); ``price`` is the strategy's price or its error.
    """
    if capacity is None:
        reasons = screen(group, owner, facts, tenants)
        return Decline(reasons, "filters") if reasons else Need.CAPACITY
    if capacity.reasons:
        return Decline(list(capacity.reasons), "capacity")
    if price is None:
        return Need.PRICE
    if isinstance(price, PricingError):
        reason = DeclineReason(code=price.code, message=str(price))
        return Decline([reason], "price", capacity.offer)
    problem = price_problem(price, group.price())
    if problem is not None:
        return Decline([problem], "price", capacity.offer, price)
    return Bid(capacity.offer, price)


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
