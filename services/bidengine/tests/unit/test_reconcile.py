"""The bid engine's comparison with the chain: bids held open for orders the chain closed."""

from __future__ import annotations

from akbidengine.domain.reconcile import ChainView, compare, suspects


def test_an_open_bid_of_a_closed_order_is_closed_and_nothing_else() -> None:
    open_records = ["o1", "o2", "o3", "o4"]
    in_play = [*open_records, "o5"]  # o5: bidding
    listed = ChainView(open_bids=["o1", "o5", "o6", "o7"])
    # o2, o3, o4: open here, no open bid on chain; o6, o7: open on chain, nothing in play here
    assert suspects(open_records, in_play, listed) == ["o2", "o3", "o4", "o6", "o7"]
    chain = ChainView(
        open_bids=listed.open_bids,
        orders={"o2": "closed", "o3": "active", "o4": "", "o6": "open", "o7": "closed"},
    )
    assert compare(open_records, in_play, chain) == ["o2", "o4", "o7"]


def test_a_suspect_not_looked_up_is_left_alone() -> None:
    assert compare(["o1"], ["o1"], ChainView()) == []
