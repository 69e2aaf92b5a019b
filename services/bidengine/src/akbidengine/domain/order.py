"""One order's record, as the bid engine keeps it in Redis, and the states it goes through.

::

    (no record) ── declined ─────────────────────────────────────────────► declined
        │
        └─ reserved + priced ─► bidding ── TxCommitted ─► open ── LeaseCreated (us) ─► won
                                   │  │                     │
                                   │  └─ TxFailed ─► failed  ├─ lease lost / order closed /
                                   │                         │  closed elsewhere / timeout ─► closed
                                   └─ lease lost / order closed ─► closing ─ TxCommitted ─► closed

``bidding`` is entered in the same Redis transaction that queues the ``CreateBid`` command,
so an order is bid on at most once however often its events are delivered. A record that
reached a final state stays a while (``FINAL_TTL_S``) so late or repeated events find it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aktypes.coin import Coin, DecCoin
from aktypes.events import BidCloseCause, ResourceOffer
from aktypes.groupspec import GroupSpec

State = Literal["declined", "bidding", "open", "closing", "won", "closed", "failed"]
FINAL: frozenset[str] = frozenset({"declined", "won", "closed", "failed"})
FINAL_TTL_S = 7 * 24 * 3600


RECORD_PREFIX = "akbidengine:order:"


def record_key(order_id: str) -> str:
    return RECORD_PREFIX + order_id


ACTIVE_KEY = "akbidengine:active"
"""Set of orders with a bid in play (bidding, open or closing): the status's order count."""
DEADLINES_KEY = "akbidengine:deadlines"
"""Sorted set: order → unix time its bid times out."""


def create_bid_key(order_id: str) -> str:
    return f"create-bid/{order_id}"


def close_bid_key(order_id: str) -> str:
    return f"close-bid/{order_id}"


class OrderRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    order_id: str
    state: State
    owner: str = ""
    group: GroupSpec | None = None
    price: DecCoin | None = None
    deposit: Coin | None = None
    allocated: list[ResourceOffer] = Field(default_factory=list)
    cause: BidCloseCause | None = None
    reasons: list[str] = Field(default_factory=list)
    updated_at: float = 0.0

    @property
    def final(self) -> bool:
        return self.state in FINAL

    def to(self, state: State, now: float, **changes: object) -> OrderRecord:
        return self.model_copy(update={"state": state, "updated_at": now, **changes})
