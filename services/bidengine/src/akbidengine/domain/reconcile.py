"""The bid engine's side of the reconciliation with the chain: bids open for closed orders.

Pure. The bid engine holds a bid open (its record ``open``) until an event says the order is
over; when ``OrderClosed`` is missed, the record stays open, with its reservation, for ever.
The chain's side is the orders this provider has an open bid on (one paged list), and the
orders looked up one by one. What is looked up (:func:`suspects`): an order whose record is
open here while the chain lists no open bid of ours on it, and an order the chain lists an
open bid of ours on while no bid is in play here (a record lost, or ended). Of those, an
order the chain has closed, or no longer knows, is a repair (:func:`compare`): the bid
closed (a ``CloseBid`` only while the chain still has it open), its reservation freed.
An order leased meanwhile (``active``) is not: its ``LeaseCreated`` says whose it is. A bid in
play here that the chain lists open is not looked up: the chain closes the bids of a closed
order itself (Akash's does, and the devnet), so an open listing means an open order, and
looking up every bid in play each sweep would cost a query per bid.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

OVER = frozenset({"closed", ""})  # "": the chain does not know the order (any more)


@dataclass(frozen=True)
class ChainView:
    """The orders with an open bid of ours, and the state of each order looked up."""

    open_bids: Collection[str] = ()
    orders: Mapping[str, str] = field(default_factory=dict)


def suspects(
    open_records: Collection[str], in_play: Collection[str], chain: ChainView
) -> list[str]:
    """Orders to look up: open here without an open bid on chain, or an open bid on chain
    without a bid in play here (``in_play``: records bidding, open or closing)."""
    open_bids = set(chain.open_bids)
    return sorted((set(open_records) - open_bids) | (open_bids - set(in_play)))


def compare(open_records: Collection[str], in_play: Collection[str], chain: ChainView) -> list[str]:
    """The orders whose bid is to be closed: suspects the chain has closed or forgotten."""
    return [
        order
        for order in suspects(open_records, in_play, chain)
        if order in chain.orders and chain.orders[order] in OVER
    ]
