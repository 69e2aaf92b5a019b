"""The order state machine on the in-memory bus: every transition, with a stand-in cluster.

The cross-service tests (``tests/test_bid*.py``) run the same code against the devnet and
real processes; these reach the transitions a live chain rarely shows (a lease lost while
the bid is still in flight, a refused bid, a deadline) and run in milliseconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from operator import not_
from typing import Any

import pytest

from akbidengine.adapters.chain import ProviderRecord
from akbidengine.domain.filtering import TenantPolicy
from akbidengine.domain.order import DEADLINES_KEY, OrderRecord, record_key
from akbidengine.domain.pricing import ScaleStrategy
from akbidengine.facts import Facts
from akbidengine.handlers import BidPolicy, Orders
from akbidengine.reconcile import Reconciliation
from akbidengine.service import order_of
from akbidengine.testing import MemoryChain
from akbus import Bus, Message
from akbus.testing import eventually, memory_bus, running
from akchain.models import Bid, Order
from aktypes.attributes import Attribute
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import (
    BidCloseCause,
    BidDeclined,
    BidPlaced,
    BroadcastTx,
    CloseBid,
    CreateBid,
    LeaseCreated,
    LeaseWon,
    OrderClosed,
    OrderCreated,
    ProviderBidClosed,
    ReconcileRepaired,
    ReservationFailed,
    ReserveResources,
    ResourceOffer,
    ResourcesReserved,
    ResourcesUnreserved,
    TxCommitted,
    TxFailed,
    UnreserveResources,
)
from aktypes.events.streams import (
    BIDENGINE_EVENTS,
    CHAIN_EVENTS,
    CHAIN_RESULTS,
    CHAIN_TX,
    CLUSTER_COMMANDS,
)
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.ids import OrderID
from aktypes.resources import CPU, GPU, Endpoint, EndpointKind, Memory, Resources, Storage, rv
from aktypes.testing import address

PROVIDER, OTHER, OWNER = address(1), address(2), address(3)


def group(max_price: str = "100") -> GroupSpec:
    resources = Resources(
        id=1, cpu=CPU(units=rv(2000)), memory=Memory(size=rv(2**30)),
        storage=[Storage(name="default", size=rv(2**30))], gpu=GPU(units=rv(0)),
        endpoints=[Endpoint(kind=EndpointKind.SHARED_HTTP)],
    )  # fmt: skip
    unit = ResourceUnit(resource=resources, count=1, price=DecCoin(denom="uact", amount=max_price))
    return GroupSpec(name="dc", resources=[unit])


@dataclass
class Cluster:
    """Answers reservations like the cluster service: idempotent by order id."""

    capacity: int = 10
    held: set[str] = field(default_factory=set)

    async def reserve(self, msg: Message[ReserveResources]) -> None:
        key = str(msg.payload.order_id)
        if key not in self.held and len(self.held) >= self.capacity:
            await msg.reply(
                ReservationFailed(order_id=msg.payload.order_id, code="insufficient_capacity")
            )
            return
        self.held.add(key)
        offer = [
            ResourceOffer(resources=u.resource, count=u.count) for u in msg.payload.group.resources
        ]
        await msg.reply(ResourcesReserved(order_id=msg.payload.order_id, allocated=offer))

    async def unreserve(self, msg: Message[UnreserveResources]) -> None:
        key = str(msg.payload.order_id)
        found = key in self.held
        self.held.discard(key)
        await msg.reply(ResourcesUnreserved(order_id=msg.payload.order_id, found=found))


@dataclass
class Engine:
    bus: Bus
    orders: Orders
    chain: MemoryChain
    cluster: Cluster
    now: list[float]

    def add_order(self, dseq: int, spec: GroupSpec | None = None) -> OrderID:
        order_id = OrderID.parse(f"{OWNER}/{dseq}/1/1")
        self.chain.orders[str(order_id)] = Order(
            id=order_id, state="open", spec=spec or group(), created_at=1
        )
        return order_id

    async def publish(self, payload: Any) -> None:
        stream = CHAIN_RESULTS if isinstance(payload, TxCommitted | TxFailed) else CHAIN_EVENTS
        await self.bus.publish(stream, payload)

    async def on(self, stream: str, kind: type[Any]) -> list[Any]:
        entries = await self.bus.backend.entries(stream)
        from aktypes.events import envelope_from_fields  # noqa: PLC0415

        payloads = [envelope_from_fields(e.fields).payload for e in entries]
        return [p for p in payloads if isinstance(p, kind)]

    async def txs(self) -> list[Any]:
        return [m for tx in await self.on(CHAIN_TX, BroadcastTx) for m in tx.msgs]

    async def record(self, order_id: OrderID) -> OrderRecord | None:
        return await self.orders.record(str(order_id))


@pytest.fixture
async def engine() -> AsyncIterator[Engine]:
    bus = memory_bus()
    now = [1000.0]
    chain = MemoryChain(record=ProviderRecord(attributes=(Attribute(key="host", value="akash"),)))
    facts = Facts(chain, PROVIDER, ())
    await facts.refresh()
    policy = BidPolicy(
        provider=PROVIDER, deposit=Coin(denom="uakt", amount=500_000), bid_timeout=60,
        reclamation_window=0, tenants=TenantPolicy(deny=frozenset({address(9)})),
    )  # fmt: skip
    strategy = ScaleStrategy.from_settings(
        cpu="0.01", memory="0.001", storage="0", endpoint="0", ip="0", gpu=""
    )
    orders = Orders(bus, chain, strategy, facts, policy, clock=lambda: now[0])
    cluster = Cluster()
    events = bus.subscriber(CHAIN_EVENTS, group="bidengine", consumer="e", partition_key=order_of)
    events.add(OrderCreated, orders.on_order_created)
    events.add(LeaseCreated, orders.on_lease_created)
    events.add(OrderClosed, orders.on_order_closed)
    results = bus.subscriber(CHAIN_RESULTS, group="bidengine", consumer="e", partition_key=order_of)
    results.add(TxCommitted, orders.on_tx_committed)
    results.add(TxFailed, orders.on_tx_failed)
    commands = bus.subscriber(CLUSTER_COMMANDS, group="cluster", consumer="c")
    commands.add(ReserveResources, cluster.reserve)
    commands.add(UnreserveResources, cluster.unreserve)
    async with running(events, results, commands):
        yield Engine(bus, orders, chain, cluster, now)


async def state_of(engine: Engine, order_id: OrderID, state: str) -> OrderRecord:
    async def reached() -> OrderRecord | None:
        record = await engine.record(order_id)
        return record if record is not None and record.state == state else None

    found: OrderRecord = await eventually(reached, timeout_s=5, what=f"{order_id} {state}")
    return found


def committed(order_id: OrderID, kind: str = "create-bid") -> TxCommitted:
    return TxCommitted(key=f"{kind}/{order_id}", tx_hash="AB" * 32, height=10)


def lease(order_id: OrderID, provider: str) -> LeaseCreated:
    return LeaseCreated(
        lease_id=order_id.bid(provider).lease_id, price=DecCoin(denom="uact", amount="20.024"),
        height=11, tx_index=0, event_index=0,
    )  # fmt: skip


async def test_an_order_is_bid_on_once_placed_and_won(engine: Engine) -> None:
    order_id = engine.add_order(1)
    created = OrderCreated(order_id=order_id, height=5, tx_index=0, event_index=0)
    await engine.publish(created)
    await engine.publish(created)  # a duplicate event changes nothing
    bidding = await state_of(engine, order_id, "bidding")
    [bid] = await engine.txs()
    assert isinstance(bid, CreateBid)
    assert bid.price == DecCoin(denom="uact", amount=Dec("21.024"))  # 2000 × 0.01 + 1024 × 0.001
    assert bidding.allocated == bid.resources_offer
    await engine.publish(committed(order_id))
    await state_of(engine, order_id, "open")
    [placed] = await engine.on(BIDENGINE_EVENTS, BidPlaced)
    assert placed.bid_id == order_id.bid(PROVIDER)
    assert await engine.bus.backend.zrangebyscore(DEADLINES_KEY, 0, 10**10) == [
        (str(order_id), 1060.0)
    ]
    await engine.publish(lease(order_id, PROVIDER))
    await state_of(engine, order_id, "won")
    [won] = await engine.on(BIDENGINE_EVENTS, LeaseWon)
    assert won.lease_id == order_id.bid(PROVIDER).lease_id
    assert await engine.bus.backend.zrangebyscore(DEADLINES_KEY, 0, 10**10) == []
    assert engine.cluster.held == {str(order_id)}  # the reservation stays for the deployment
    assert len(await engine.txs()) == 1


async def test_a_lease_won_before_the_bids_commit_result_still_records_the_bid(
    engine: Engine,
) -> None:
    order_id = engine.add_order(7)
    await engine.publish(OrderCreated(order_id=order_id, height=5, tx_index=0, event_index=0))
    await state_of(engine, order_id, "bidding")
    # the tenant accepted the bid before the relay's TxCommitted reached the engine
    await engine.publish(lease(order_id, PROVIDER))
    await state_of(engine, order_id, "won")
    await engine.publish(committed(order_id))  # late: changes nothing
    events = [
        e for e in await engine.on(BIDENGINE_EVENTS, object) if isinstance(e, BidPlaced | LeaseWon)
    ]
    assert [type(e) for e in events] == [BidPlaced, LeaseWon]  # each once, in order
    assert events[0].bid_id == order_id.bid(PROVIDER)
    assert (await state_of(engine, order_id, "won")).state == "won"
    assert await engine.bus.backend.zrangebyscore(DEADLINES_KEY, 0, 10**10) == []


async def test_a_lease_lost_while_the_bid_is_in_flight_closes_it_once_it_lands(
    engine: Engine,
) -> None:
    order_id = engine.add_order(2)
    await engine.publish(OrderCreated(order_id=order_id, height=5, tx_index=0, event_index=0))
    await state_of(engine, order_id, "bidding")
    await engine.publish(lease(order_id, OTHER))
    closing = await state_of(engine, order_id, "closing")
    assert closing.cause == BidCloseCause.LEASE_LOST
    assert engine.cluster.held == set()
    await engine.publish(committed(order_id))
    await state_of(engine, order_id, "closed")
    msgs = await engine.txs()
    assert [type(m) for m in msgs] == [CreateBid, CloseBid]
    [ended] = await engine.on(BIDENGINE_EVENTS, ProviderBidClosed)
    assert ended.cause == BidCloseCause.LEASE_LOST


async def test_a_lost_bid_already_marked_lost_on_chain_is_not_closed_again(engine: Engine) -> None:
    order_id = engine.add_order(3)
    await engine.publish(OrderCreated(order_id=order_id, height=5, tx_index=0, event_index=0))
    await state_of(engine, order_id, "bidding")
    await engine.publish(committed(order_id))
    record = await state_of(engine, order_id, "open")
    assert record.price is not None
    engine.chain.bids[str(order_id.bid(PROVIDER))] = Bid(
        id=order_id.bid(PROVIDER), state="lost", price=record.price, created_at=5
    )
    await engine.publish(lease(order_id, OTHER))
    await state_of(engine, order_id, "closed")
    assert [type(m) for m in await engine.txs()] == [CreateBid]  # no CloseBid: it would fail
    assert engine.cluster.held == set()


async def test_a_refused_bid_releases_its_reservation_with_the_chains_reason(
    engine: Engine,
) -> None:
    order_id = engine.add_order(4)
    await engine.publish(OrderCreated(order_id=order_id, height=5, tx_index=0, event_index=0))
    await state_of(engine, order_id, "bidding")
    await engine.publish(
        TxFailed(key=f"create-bid/{order_id}", code=5, codespace="market", log="bid exists")
    )
    await state_of(engine, order_id, "failed")
    [declined] = await engine.on(BIDENGINE_EVENTS, BidDeclined)
    assert declined.reasons[0].code == "bid_rejected"
    assert "bid exists" in declined.reasons[0].message
    assert engine.cluster.held == set()


async def test_a_bid_past_its_deadline_is_closed(engine: Engine) -> None:
    order_id = engine.add_order(5)
    await engine.publish(OrderCreated(order_id=order_id, height=5, tx_index=0, event_index=0))
    await state_of(engine, order_id, "bidding")
    await engine.publish(committed(order_id))
    record = await state_of(engine, order_id, "open")
    assert record.price is not None
    engine.chain.bids[str(order_id.bid(PROVIDER))] = Bid(
        id=order_id.bid(PROVIDER), state="open", price=record.price, created_at=5
    )
    assert await engine.orders.expire_due() == 0  # not yet
    engine.now[0] += 61
    assert await engine.orders.expire_due() == 1
    closed = await state_of(engine, order_id, "closed")
    assert closed.cause == BidCloseCause.BID_TIMEOUT
    assert [type(m) for m in await engine.txs()] == [CreateBid, CloseBid]
    assert engine.cluster.held == set()
    assert await engine.orders.expire_due() == 0  # the deadline is gone with it


@pytest.mark.parametrize(
    ("max_price", "owner_seed", "code"),
    [("10", 3, "price_above_max"), ("100", 9, "tenant_denied")],
)
async def test_declines_say_why_and_hold_nothing(
    engine: Engine, max_price: str, owner_seed: int, code: str
) -> None:
    order_id = OrderID.parse(f"{address(owner_seed)}/6/1/1")
    engine.chain.orders[str(order_id)] = Order(
        id=order_id, state="open", spec=group(max_price), created_at=1
    )
    await engine.publish(OrderCreated(order_id=order_id, height=5, tx_index=0, event_index=0))
    record = await state_of(engine, order_id, "declined")
    assert record.reasons[0].startswith(code)
    [declined] = await engine.on(BIDENGINE_EVENTS, BidDeclined)
    assert [r.code for r in declined.reasons] == [code]
    assert engine.cluster.held == set()
    assert await engine.txs() == []
    assert await engine.bus.backend.get(record_key(str(order_id))) is not None


async def test_an_order_closed_before_its_reservation_was_answered_releases_it(
    engine: Engine,
) -> None:
    """The cluster was down while the order was considered: the reservation it made when
    it came back belongs to no record of ours, and the order's close releases it."""
    order_id = engine.add_order(7)
    engine.cluster.held.add(str(order_id))  # reserved late; the engine never saw the answer
    await engine.publish(OrderClosed(order_id=order_id, height=9, tx_index=0, event_index=0))
    await eventually(
        lambda: engine.cluster.held, timeout_s=5, what="the reservation released", until=not_
    )
    assert await engine.record(order_id) is None
    assert await engine.txs() == []


async def test_the_sweep_closes_bids_left_open_for_closed_orders_once(engine: Engine) -> None:
    sweeps = Reconciliation(engine.orders, grace=10.0, clock=lambda: engine.now[0])

    def bid_on(order_id: OrderID) -> Bid:
        price = DecCoin(denom="uact", amount=Dec(20))
        return Bid(id=order_id.bid(PROVIDER), state="open", price=price, created_at=1)

    held, kept, unrecorded = engine.add_order(1), engine.add_order(2), engine.add_order(3)
    for order_id in (held, kept):
        await engine.publish(OrderCreated(order_id=order_id, height=5, tx_index=0, event_index=0))
        await state_of(engine, order_id, "bidding")
        await engine.publish(committed(order_id))
        await state_of(engine, order_id, "open")
    for order_id in (held, kept, unrecorded):  # ours on chain; no record of the third here
        engine.chain.bids[str(order_id.bid(PROVIDER))] = bid_on(order_id)
    for order_id in (held, unrecorded):  # closed, their OrderClosed missed
        closed = engine.chain.orders[str(order_id)].model_copy(update={"state": "closed"})
        engine.chain.orders[str(order_id)] = closed
    # the chain closed our bid on the first with it (as Akash's does); the third's it left open
    engine.chain.bids[str(held.bid(PROVIDER))] = bid_on(held).model_copy(update={"state": "closed"})

    assert await sweeps.sweep() == []  # first sighting
    engine.now[0] += 5
    assert await sweeps.sweep() == []  # within the grace
    engine.now[0] += 10
    assert await sweeps.sweep() == [str(held), str(unrecorded)]
    engine.now[0] += 10
    assert await sweeps.sweep() == []  # the chain still lists the third: its CloseBid is on its way
    txs = await engine.on(CHAIN_TX, BroadcastTx)
    closes = [tx.key for tx in txs if isinstance(tx.msgs[0], CloseBid)]
    assert closes == [f"close-bid/{unrecorded}"]  # once; none for a bid the chain closed
    record = await engine.record(held)
    assert record is not None
    assert (record.state, record.cause) == ("closed", BidCloseCause.ORDER_CLOSED)
    assert str(held) not in engine.cluster.held
    assert str(kept) in engine.cluster.held
    repaired = await engine.on(BIDENGINE_EVENTS, ReconcileRepaired)
    assert [(r.kind, r.action, r.order_id) for r in repaired] == [
        ("bid_open_order_closed", "closed", held),
        ("bid_open_order_closed", "closed", unrecorded),
    ]
