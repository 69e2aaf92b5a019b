"""Faults across real processes: the bid engine or the cluster killed mid-burst, deadlines
that pass while the bid engine is down, replicas racing for the last capacity, and on-chain
attribute and audit changes picked up by a running engine.

Assertions read the chain (LCD), the streams and the Redis records the services keep.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from typing import Any

from akbidengine.domain.order import DEADLINES_KEY, OrderRecord, record_key
from akbus import Bus
from akbus.keys import reply_key
from akchain import msgs
from akcli.testing import Provider, frozen, stream
from akcli.testing import sdl as harness_sdl
from akcluster.domain.ledger import Reservation
from akcluster.reservations import RESERVATIONS_KEY
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.coin import Dec, DecCoin
from aktypes.events import (
    BidCloseCause,
    BidDeclined,
    BidPlaced,
    BidScreened,
    BroadcastTx,
    ProviderBidClosed,
    ReservationFailed,
    ReserveResources,
    ResourcesReserved,
    ScreenBid,
    TxCommitted,
    TxFailed,
    envelope_from_fields,
)
from aktypes.events.streams import (
    BIDENGINE_COMMANDS,
    BIDENGINE_EVENTS,
    CHAIN_RESULTS,
    CHAIN_TX,
    CLUSTER_COMMANDS,
)
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.ids import DeploymentID, OrderID
from aktypes.resources import CPU, Memory, Resources, Storage, rv
from aktypes.sdl import SDL
from aktypes.testing import address


def sdl(**asked: Any) -> SDL:
    """A small SDL (0.1 CPU, 128Mi, 256Mi of storage): many of them fit the test's nodes."""
    return harness_sdl(**{"cpu": 0.1, "memory": "128Mi", "storage": "256Mi", **asked})


def order_of(deployment: DeploymentID) -> str:
    return str(deployment.group(1).order(1))


async def events(bus: Bus, name: str, kind: type[Any]) -> list[Any]:
    return [e.payload for e in await stream(bus, name) if isinstance(e.payload, kind)]


async def our_bids(chain: DevnetClients) -> dict[str, list[Any]]:
    """Every bid of our provider on chain, whatever its state, by order id."""
    found: dict[str, list[Any]] = {}
    for bid in await chain.lcd.bids(provider=chain.wallet("provider").address, state=None):
        found.setdefault(str(bid.id.order_id), []).append(bid)
    return found


async def reservations(bus: Bus) -> set[str]:
    return set(await bus.backend.hgetall(RESERVATIONS_KEY))


async def record(bus: Bus, order: str) -> OrderRecord | None:
    raw = await bus.backend.get(record_key(order))
    return OrderRecord.model_validate_json(raw) if raw else None


async def burst(chain: DevnetClients, total: int, base_dseq: int) -> list[DeploymentID]:
    """``total`` deployments from tenant-1..3 at once (each tenant's in sequence)."""
    tenants = [chain.tenant(f"tenant-{i}") for i in (1, 2, 3)]
    spec = sdl()

    async def deploy(index: int) -> list[DeploymentID]:
        tenant = tenants[index]
        dseqs = range(base_dseq + index, base_dseq + total, len(tenants))
        return [await tenant.deploy(spec, dseq=dseq) for dseq in dseqs]  # one after another

    made = await asyncio.gather(*(deploy(i) for i in range(len(tenants))))
    return [d for batch in made for d in batch]


async def kill_holding_commands(process: Any, bus: Bus, meanwhile: asyncio.Task[Any]) -> int:
    """SIGKILL ``process`` at a moment it has cluster commands read and not acknowledged.

    Freezes it (SIGSTOP) every few milliseconds and looks at the group's pending entries:
    when some are there the frozen process is killed, else it runs on. How many it held.
    """
    while not meanwhile.done():
        with frozen(process):
            held = (await bus.backend.pending_summary(CLUSTER_COMMANDS, "cluster")).count
            if held:
                process.kill()
                return held
        await asyncio.sleep(0.005)
    process.kill()
    return 0


async def start(process: Any) -> None:
    """Start a killed process again without blocking the loop while it gets ready."""
    await asyncio.to_thread(process.start)


# -- 1. the bid engine killed in the middle of a burst -----------------------------------------


async def test_bid_engine_killed_mid_burst_bids_on_every_order_exactly_once(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.start()
    base = (await chain.rpc.status()).latest_height + 1000
    deploying = asyncio.create_task(burst(chain, 40, base))

    async def some_bids() -> int:
        count = len(await our_bids(chain))
        return count if count >= 5 else 0

    await eventually(some_bids, timeout_s=30, what="5 bids on chain")
    provider.bidengine.kill()  # bidding (whether or not the burst is still being sent)
    # the rest of the burst arrives while the engine is down, however fast this machine is
    deployments = await deploying + await burst(chain, 10, base + 40)
    assert len(deployments) == 50
    assert len(await our_bids(chain)) < 50
    await start(provider.bidengine)
    expected = {order_of(d) for d in deployments}

    async def all_bid() -> dict[str, list[Any]]:
        found = await our_bids(chain)
        return found if set(found) >= expected else {}

    bids = await eventually(all_bid, timeout_s=45, what="a bid on each of the 50 orders")
    assert set(bids) == expected
    assert {o: len(b) for o, b in bids.items() if len(b) != 1} == {}
    assert {b[0].state for b in bids.values()} == {"open"}

    # the bid engine asked for one CreateBid per order, and the relay executed each once
    sent = Counter(
        m.key for m in await events(bus, CHAIN_TX, BroadcastTx) if m.key.startswith("create-bid/")
    )
    assert sent == Counter({f"create-bid/{o}": 1 for o in expected})

    async def all_committed() -> Counter[str]:
        found = Counter(
            m.key
            for m in await events(bus, CHAIN_RESULTS, TxCommitted)
            if m.key.startswith("create-bid/")  # not the gateway's certificate
        )
        return found if len(found) >= 50 else Counter()

    committed = await eventually(all_committed, what="a TxCommitted per bid")
    assert committed == Counter({f"create-bid/{o}": 1 for o in expected})
    assert await events(bus, CHAIN_RESULTS, TxFailed) == []

    # the engine's records say open, each placement was announced once, nothing was declined
    async def all_open() -> dict[str, str]:
        states = {o: (r.state if (r := await record(bus, o)) else "none") for o in expected}
        return states if set(states.values()) == {"open"} else {}

    await eventually(all_open, what="every record open")
    announced = Counter(
        str(e.bid_id.order_id) for e in await events(bus, BIDENGINE_EVENTS, BidPlaced)
    )
    assert announced == Counter(dict.fromkeys(expected, 1))
    assert await events(bus, BIDENGINE_EVENTS, BidDeclined) == []
    assert await reservations(bus) == expected


async def test_deadlines_that_pass_while_the_bid_engine_is_down_are_honoured_after_restart(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    # the bid engine is down from just after the second bid until past the first deadline,
    # and must be back before the second: a restart may take up to the gap between them
    gap = 9.0
    provider.bidengine_env = {"AP_BID_TIMEOUT": "14s"}
    provider.start()
    tenant = chain.tenant("tenant-1")
    me = chain.wallet("provider").address

    async def placed(deployment: DeploymentID) -> float:
        """Our bid is on chain and its deadline recorded: the deadline."""
        deadlines = dict(await bus.backend.zrangebyscore(DEADLINES_KEY, 0, float("inf")))
        bids = await tenant.bids(deployment.dseq, provider=me)
        return deadlines.get(order_of(deployment), 0.0) if bids else 0.0

    early = await tenant.deploy(sdl())
    early_deadline = await eventually(lambda: placed(early), timeout_s=20, what="first bid")
    await asyncio.sleep(gap)  # the second bid's deadline comes that much later
    late = await tenant.deploy(sdl())
    late_deadline = await eventually(lambda: placed(late), timeout_s=20, what="second bid")
    assert late_deadline - early_deadline > gap - 0.5
    provider.bidengine.kill()
    assert time.time() < early_deadline, "placing the second bid took too long"

    # down past the first deadline (and not past the second)
    await asyncio.sleep(max(early_deadline + 0.5 - time.time(), 0))
    assert [b.state for b in await tenant.bids(early.dseq, provider=me, state=None)] == ["open"]
    await start(provider.bidengine)
    restarted = time.time()
    assert restarted < late_deadline, "restart took too long for this test's timings"

    async def state(deployment: DeploymentID) -> str:
        [bid] = await tenant.bids(deployment.dseq, provider=me, state=None)
        return bid.state

    async def closed(deployment: DeploymentID) -> float:
        return time.time() if await state(deployment) == "closed" else 0.0

    early_closed = await eventually(lambda: closed(early), timeout_s=10, what="the overdue bid")
    assert early_closed - restarted < 3.0  # promptly after the restart
    late_closed = await eventually(lambda: closed(late), timeout_s=20, what="the second bid")
    assert late_deadline - 0.2 <= late_closed <= late_deadline + 3.0  # at its own deadline

    async def released() -> bool:
        return await reservations(bus) == set()

    await eventually(released, what="both reservations released")
    causes = {
        str(e.bid_id.order_id): e.cause
        for e in await events(bus, BIDENGINE_EVENTS, ProviderBidClosed)
    }
    assert causes == {
        order_of(early): BidCloseCause.BID_TIMEOUT,
        order_of(late): BidCloseCause.BID_TIMEOUT,
    }
    for deployment in (early, late):
        stored = await record(bus, order_of(deployment))
        assert stored is not None
        assert (stored.state, stored.cause) == ("closed", BidCloseCause.BID_TIMEOUT)
    assert await bus.backend.zrangebyscore(DEADLINES_KEY, 0, float("inf")) == []


async def test_a_bid_that_lands_while_the_bid_engine_is_down_times_out_from_when_it_landed(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.bidengine_env = {"AP_BID_TIMEOUT": "6s", "AP_BID_CATCHUP_INTERVAL": "1s"}
    provider.start()
    tenant = chain.tenant("tenant-1")
    me = chain.wallet("provider").address
    with frozen(provider.relay):  # the engine finds the order by its catch-up, and its
        deployment = await tenant.deploy(sdl())  # CreateBid waits for the relay
        order = order_of(deployment)

        async def bidding() -> bool:
            stored = await record(bus, order)
            return stored is not None and stored.state == "bidding"

        await eventually(bidding, timeout_s=15, what="the CreateBid queued")
        provider.bidengine.kill()

    async def landed() -> float:
        return time.time() if await tenant.bids(deployment.dseq, provider=me) else 0.0

    placed = await eventually(landed, timeout_s=20, what="the bid on chain")
    await asyncio.sleep(max(placed + 6.5 - time.time(), 0))  # down past its deadline
    assert [b.state for b in await tenant.bids(deployment.dseq, provider=me, state=None)] == [
        "open"
    ]
    await start(provider.bidengine)
    restarted = time.time()

    async def closed() -> float:
        [bid] = await tenant.bids(deployment.dseq, provider=me, state=None)
        return time.time() if bid.state == "closed" else 0.0

    closed_at = await eventually(closed, timeout_s=15, what="the overdue bid closed")
    assert closed_at - restarted < 3.0, (
        f"closed {closed_at - restarted:.1f}s after the restart, "
        f"{closed_at - placed:.1f}s after it landed (timeout 6s)"
    )

    async def released() -> bool:
        return await reservations(bus) == set()

    await eventually(released, what="the reservation released")


# -- 2. the cluster killed while reservations are being made -----------------------------------


async def test_cluster_killed_mid_burst_loses_and_leaks_no_reservation(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.start()
    base = (await chain.rpc.status()).latest_height + 1000
    deploying = asyncio.create_task(burst(chain, 30, base))

    async def some_reserved() -> int:
        held = len(await reservations(bus))
        return held if held >= 5 else 0

    await eventually(some_reserved, timeout_s=30, what="5 reservations")
    in_hand = await kill_holding_commands(provider.cluster(0), bus, deploying)
    assert in_hand > 0, "never caught the cluster with a command in hand"
    asked = await bus.backend.length(CLUSTER_COMMANDS)

    async def asked_meanwhile() -> bool:
        return await bus.backend.length(CLUSTER_COMMANDS) > asked

    await eventually(asked_meanwhile, timeout_s=20, what="commands sent to the dead cluster")
    await start(provider.cluster(0))
    deployments = await deploying
    expected = {order_of(d) for d in deployments}

    async def all_bid() -> dict[str, list[Any]]:
        found = await our_bids(chain)
        return found if set(found) >= expected else {}

    bids = await eventually(all_bid, timeout_s=45, what="a bid on each of the 30 orders")
    assert {o: len(b) for o, b in bids.items() if len(b) != 1} == {}
    open_bids = {o for o, [b] in bids.items() if b.state == "open"}
    assert open_bids == expected

    async def settled() -> bool:
        summary = await bus.backend.pending_summary(CLUSTER_COMMANDS, "cluster")
        return summary.count == 0

    await eventually(settled, what="no cluster command left pending")
    stored = await bus.backend.hgetall(RESERVATIONS_KEY)
    assert set(stored) == open_bids  # none lost, none leaked
    for order, raw in stored.items():  # and each holds what the bid offers
        [bid] = bids[order]
        assert Reservation.model_validate_json(raw).allocated == bid.resources_offer, order
    assert await events(bus, BIDENGINE_EVENTS, BidDeclined) == []


# -- 3. two cluster replicas racing for the last capacity --------------------------------------

TEN_CPUS = """
nodes:
  - {name: solo, cpu: "10", memory: 64Gi, ephemeral-storage: 1Ti}
"""


def one_cpu() -> GroupSpec:
    resources = Resources(
        id=1,
        cpu=CPU(units=rv(1000)),
        memory=Memory(size=rv(2**30)),
        storage=[Storage(name="default", size=rv(2**30))],
    )
    return GroupSpec(
        name="g",
        resources=[
            ResourceUnit(resource=resources, count=1, price=DecCoin(denom="uact", amount=Dec("1")))
        ],
    )


async def test_two_cluster_replicas_grant_exactly_the_capacity(
    provider: Provider, bus: Bus
) -> None:
    provider.nodes = TEN_CPUS
    provider.start(clusters=2)
    orders = [OrderID.parse(f"{address(10 + i % 5)}/{100 + i}/1/1") for i in range(50)]
    command_ids = [f"race-{uuid.uuid4().hex[:12]}" for _ in orders]
    replies = await asyncio.gather(
        *(
            bus.request(
                CLUSTER_COMMANDS,
                ReserveResources(order_id=order, group=one_cpu()),
                (ResourcesReserved, ReservationFailed),
                timeout_s=20,
                command_id=command_id,
            )
            for order, command_id in zip(orders, command_ids, strict=True)
        )
    )
    granted = [r for r in replies if isinstance(r, ResourcesReserved)]
    refused = [r for r in replies if isinstance(r, ReservationFailed)]
    assert len(granted) == 10
    assert len(refused) == 40
    assert {r.code for r in refused} == {"insufficient_capacity"}
    assert await reservations(bus) == {str(r.order_id) for r in granted}

    # who answered: the reply each replica stored for its command names its producer
    answered_by: Counter[str] = Counter()
    for command_id in command_ids:
        raw = await bus.backend.get(reply_key(command_id))
        assert raw is not None
        answered_by[envelope_from_fields(json.loads(raw)).producer] += 1
    consumers = {c.name for c in await bus.backend.consumers(CLUSTER_COMMANDS, "cluster")}
    assert set(answered_by) == consumers, (answered_by, consumers)
    assert len(answered_by) == 2, answered_by  # both replicas handled some
    assert sum(answered_by.values()) == 50


# -- 4. on-chain attribute and audit changes, without a restart --------------------------------


async def test_attribute_and_audit_changes_on_chain_are_picked_up_without_a_restart(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.start()
    tenant = chain.tenant("tenant-1")
    wallet, auditor = chain.wallet("provider"), chain.wallet("auditor")
    me = wallet.address
    in_region = sdl(attributes="attributes: {host: akash, region: local}")
    audited = sdl(signed_by=f"signedBy: {{anyOf: [{auditor.address}]}}")

    # before: both kinds of order get a bid
    for spec in (in_region, audited):
        deployment = await tenant.deploy(spec)
        await tenant.wait_for_bids(deployment.dseq, provider=me, timeout=30)

    async def screened(spec: SDL) -> BidScreened:
        return await bus.request(
            BIDENGINE_COMMANDS,
            ScreenBid(group=spec.groups[0], owner=tenant.address),
            BidScreened,
            timeout_s=20,
        )

    # the provider drops `region` from its attributes
    record = await chain.lcd.provider(me)
    kept = [a for a in record.attributes if a.key != "region"]
    assert len(kept) == len(record.attributes) - 1
    await wallet.send(msgs.update_provider(me, record.host_uri, kept))

    async def sees_no_region() -> list[str]:
        return [r.code for r in (await screened(in_region)).reasons]

    await eventually(sees_no_region, timeout_s=15, what="the engine sees the new attributes")
    elsewhere = await tenant.deploy(in_region)

    # the auditor withdraws its signature of `host`
    await auditor.send(msgs.delete_provider_attributes(auditor.address, me, ["host"]))

    async def sees_no_audit() -> list[str]:
        return [r.code for r in (await screened(audited)).reasons]

    await eventually(sees_no_audit, timeout_s=15, what="the engine sees the withdrawn audit")
    unaudited = await tenant.deploy(audited)

    async def declined() -> dict[str, list[str]]:
        found = {
            str(e.order_id): [r.code for r in e.reasons]
            for e in await events(bus, BIDENGINE_EVENTS, BidDeclined)
        }
        return found if len(found) >= 2 else {}

    reasons = await eventually(declined, timeout_s=30, what="both new orders declined")
    assert reasons == {
        order_of(elsewhere): ["attributes_mismatch"],
        order_of(unaudited): ["auditor_not_signed"],
    }
    for deployment in (elsewhere, unaudited):
        assert await tenant.bids(deployment.dseq, provider=me, state=None) == []
    assert provider.bidengine.running()
    assert len(await reservations(bus)) == 2  # only the two orders bid on before
