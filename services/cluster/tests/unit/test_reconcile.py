"""The cluster's comparison with the chain: every finding and the repair it calls for."""

from __future__ import annotations

from akcluster.domain.reconcile import (
    ChainView,
    LocalView,
    Repair,
    compare,
    unexplained,
    unlisted,
)
from aktypes.ids import LeaseID
from aktypes.testing import address

OWNER, PROVIDER = address(1), address(3)


def lease(dseq: int) -> LeaseID:
    return LeaseID.parse(f"{OWNER}/{dseq}/1/1/{PROVIDER}")


def order(dseq: int) -> str:
    return str(lease(dseq).order_id)


def kinds(repairs: list[Repair]) -> list[tuple[str, str, str]]:
    return [(r.kind, r.action, str(r.lease_id or r.order_id)) for r in repairs]


def test_agreement_calls_for_nothing() -> None:
    local = LocalView(
        records=[lease(1)],
        manifests=[lease(1)],
        namespaces=[lease(1)],
        reservations=[order(1), order(2), order(3)],
    )
    chain = ChainView(active_leases=[lease(1), lease(2)], open_bids=[order(3)])
    assert unlisted(local, chain) == []
    assert unexplained(local, chain) == []
    assert compare(local, chain) == []


def test_a_lease_closed_on_chain_but_recorded_here_is_torn_down() -> None:
    records = [lease(d) for d in range(1, 6)]
    local = LocalView(records=records, manifests=records)
    listed = ChainView(active_leases=[lease(5)])
    assert unlisted(local, listed) == records[:4]
    chain = ChainView(
        active_leases=[lease(5)],
        leases={
            lease(1): "closed",
            lease(2): "insufficient_funds",  # escrow depleted
            lease(3): "",  # the chain has none
            lease(4): "reclaiming",  # a state not known here: left alone
        },
    )
    assert kinds(compare(local, chain)) == [
        ("lease_closed_deployed", "torn_down", str(lease(1))),
        ("lease_closed_deployed", "torn_down", str(lease(2))),
        ("lease_closed_deployed", "torn_down", str(lease(3))),
    ]
    assert [r.message for r in compare(local, chain)] == [
        "lease closed",
        "lease insufficient_funds",
        "lease gone",
    ]
    assert compare(local, listed) == []  # not looked up: nothing


def test_a_deployment_without_record_is_adopted_when_active_on_chain_else_removed() -> None:
    local = LocalView(
        manifests=[lease(1), lease(2)],
        namespaces=[lease(1), lease(2), lease(3), lease(4), lease(5)],
    )
    listed = ChainView(active_leases=[lease(1), lease(3)])
    assert unlisted(local, listed) == [lease(2), lease(4), lease(5)]
    chain = ChainView(
        active_leases=[lease(1), lease(3)],
        leases={lease(2): "closed", lease(4): "", lease(5): "reclaiming"},
    )
    assert kinds(compare(local, chain)) == [
        ("deployment_without_record", "adopted", str(lease(1))),
        ("deployment_without_record", "removed", str(lease(2))),  # closed on chain
        ("deployment_without_record", "removed", str(lease(3))),  # no Manifest to adopt
        ("deployment_without_record", "removed", str(lease(4))),  # never on chain
    ]
    assert compare(local, chain)[2].message == "no Manifest"


def test_a_reservation_is_freed_only_once_its_order_is_over_for_us() -> None:
    reserved = [order(d) for d in range(1, 8)]
    local = LocalView(records=[lease(7)], reservations=reserved)  # 6: a bid; 7: a lease
    listed = ChainView(open_bids=[order(6)], active_leases=[lease(7)])
    assert unexplained(local, listed) == [order(d) for d in range(1, 6)]
    chain = ChainView(
        open_bids=[order(6)],
        active_leases=[lease(7)],
        orders={
            order(1): "closed",  # closed, our bid closed with it
            order(2): "",  # gone
            order(3): "open",  # our bid on its way: kept
            order(4): "open",  # our bid closed (timed out): freed
            order(5): "active",  # leased to us a moment ago: kept
        },
        bids={order(1): "closed", order(4): "closed", order(5): "active"},
    )
    assert kinds(compare(local, chain)) == [
        ("reservation_without_bid", "freed", order(1)),
        ("reservation_without_bid", "freed", order(2)),
        ("reservation_without_bid", "freed", order(4)),
    ]
    assert [r.message for r in compare(local, chain)] == [
        "order closed, bid closed",
        "order gone, bid none",
        "order open, bid closed",
    ]


def test_a_reservation_not_looked_up_is_left_alone() -> None:
    local = LocalView(reservations=[order(1)])
    assert compare(local, ChainView()) == []
