"""The provider at a glance: orders, leases and events folded from the streams."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from aktypes import events as ev
from aktypes.coin import Coin, DecCoin
from aktypes.events.streams import BIDENGINE_EVENTS, CHAIN_EVENTS, CLUSTER_EVENTS
from aktypes.ids import LeaseID
from aktypes.overview import Overview, describe
from aktypes.testing import address, example_payloads

T0 = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
LEASE = LeaseID(owner=address(1), dseq=100, gseq=1, oseq=1, provider=address(2))
OTHER = LeaseID(owner=address(1), dseq=101, gseq=1, oseq=1, provider=address(2))
PRICE = DecCoin.parse("12.5uact")


def fold(*steps: tuple[str, ev.Payload]) -> Overview:
    overview = Overview(max_orders=3)
    for i, (stream, payload) in enumerate(steps):
        envelope = ev.Envelope[ev.Payload](
            producer="test", time=T0 + timedelta(seconds=i), payload=payload
        )
        overview.apply(stream, envelope)
    return overview


def test_an_order_goes_from_open_to_bid_to_won_and_its_lease_to_deployed() -> None:
    won = ev.LeaseWon(lease_id=LEASE, group=example_group(), price=PRICE)
    overview = fold(
        (
            CHAIN_EVENTS,
            ev.OrderCreated(height=1, tx_index=0, event_index=0, order_id=LEASE.order_id),
        ),
        (
            CHAIN_EVENTS,
            ev.OrderCreated(height=1, tx_index=0, event_index=0, order_id=OTHER.order_id),
        ),
        (
            BIDENGINE_EVENTS,
            ev.BidPlaced(bid_id=LEASE.bid_id, price=PRICE, deposit=Coin.parse("500000uact")),
        ),
        (
            BIDENGINE_EVENTS,
            ev.BidDeclined(
                order_id=OTHER.order_id,
                reasons=[ev.DeclineReason(code="insufficient_capacity", message="no GPU free")],
            ),
        ),
        (BIDENGINE_EVENTS, won),
        (CLUSTER_EVENTS, ev.DeploymentApplied(lease_id=LEASE, services=["web"])),
        (CLUSTER_EVENTS, ev.DeploymentHealth(lease_id=LEASE, state="deployed")),
        (
            CHAIN_EVENTS,
            ev.BidCreated(height=2, tx_index=0, event_index=0, bid_id=OTHER.bid_id, price=PRICE),
        ),  # not shown
    )
    snap = overview.snapshot()
    orders = {o["order"]: o for o in snap["orders"]}
    assert orders[str(LEASE.order_id)]["state"] == "won"
    assert orders[str(OTHER.order_id)] | {"updated": ""} == {
        "order": str(OTHER.order_id),
        "state": "declined",
        "price": "",
        "reasons": ["no GPU free"],
        "updated": "",
    }
    [lease] = snap["leases"]
    assert (lease["lease"], lease["state"], lease["services"]) == (str(LEASE), "deployed", ["web"])
    assert snap["counts"] == {"orders": {"won": 1, "declined": 1}, "leases": {"deployed": 1}}
    assert snap["bids_per_minute"] == [{"minute": "2026-11-24T12:00Z", "placed": 1, "declined": 1}]
    texts = [e["text"] for e in snap["events"]]
    assert len(texts) == 7 and texts[0] == f"{LEASE} deployed"  # newest first, chain noise out
    assert f"declined {OTHER.order_id}: no GPU free" in texts


def test_a_closed_lease_is_torn_down_and_windows_stay_bounded() -> None:
    steps: list[tuple[str, ev.Payload]] = [
        (
            CHAIN_EVENTS,
            ev.OrderCreated(
                height=1,
                tx_index=0,
                event_index=0,
                order_id=LEASE.order_id.model_copy(update={"dseq": d}),
            ),
        )
        for d in range(1, 6)
    ]
    steps += [
        (CLUSTER_EVENTS, ev.DeploymentApplied(lease_id=LEASE, services=["web"])),
        (
            CHAIN_EVENTS,
            ev.LeaseClosed(
                height=3,
                tx_index=0,
                event_index=0,
                lease_id=LEASE,
                reason=ev.LeaseClosedReason.OWNER,
            ),
        ),
        (CLUSTER_EVENTS, ev.LeaseTornDown(lease_id=LEASE, reason=ev.LeaseClosedReason.OWNER)),
        (
            CHAIN_EVENTS,
            ev.LeaseClosed(
                height=3,
                tx_index=0,
                event_index=0,
                lease_id=OTHER,
                reason=ev.LeaseClosedReason.OWNER,
            ),
        ),  # never ours: ignored
    ]
    snap = fold(*steps).snapshot()
    assert [o["order"].split("/")[1] for o in snap["orders"]] == ["5", "4", "3"]  # max 3
    assert [(lease["lease"], lease["state"]) for lease in snap["leases"]] == [
        (str(LEASE), "closed")
    ]


def example_group() -> object:
    return next(p for p in example_payloads() if isinstance(p, ev.LeaseWon)).group


def test_escrow_watching_is_described_in_words() -> None:
    added = ev.LeaseFundsMonitor(lease_id=LEASE, action="add", is_new_lease=True)
    removed = ev.LeaseFundsMonitor(lease_id=LEASE, action="remove")
    assert describe(added) == f"escrow of {LEASE} watched"
    assert describe(removed) == f"escrow of {LEASE} no longer watched"


def test_a_reconciliation_repair_is_described_in_words() -> None:
    torn = ev.ReconcileRepaired(
        kind="lease_closed_deployed", action="torn_down", order_id=LEASE.order_id, lease_id=LEASE
    )
    freed = ev.ReconcileRepaired(
        kind="reservation_without_bid", action="freed", order_id=LEASE.order_id
    )
    assert describe(torn) == f"reconciliation: {LEASE} torn_down (lease closed deployed)"
    assert describe(freed) == (f"reconciliation: {LEASE.order_id} freed (reservation without bid)")
