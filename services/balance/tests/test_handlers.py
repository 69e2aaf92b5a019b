"""The balance service's handlers on a real Redis, with an in-memory chain: which leases are
watched, what a check decides and publishes, results, restarts, sweeps, earnings."""

from __future__ import annotations

import asyncio
import collections
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from akbalance.adapters.chain import BlockClock
from akbalance.domain.funds import EscrowView, Policy
from akbalance.domain.records import DUE, LEASES, PENDING
from akbalance.handlers import Balance
from akbalance.testing import MemoryChain
from akbus import Bus, RedisSettings
from akbus.testing import FAST_SETTINGS, eventually, running
from aktypes.coin import Coin, Dec
from aktypes.events import (
    BroadcastTx,
    LeaseFundsMonitor,
    LeaseOutOfFunds,
    Send,
    SweepRequested,
    TxCommitted,
    TxFailed,
    WithdrawalRequested,
    WithdrawLease,
    envelope_from_fields,
)
from aktypes.events.streams import BALANCE_EVENTS, CHAIN_RESULTS, CHAIN_TX, CLUSTER_EVENTS
from aktypes.ids import LeaseID
from aktypes.testing import address

PROVIDER = address(9)
POLICY = Policy(
    monitor_interval=600.0,
    withdrawal_period=3600.0,
    dry_recheck=600.0,
    min_amount={"uact": Dec(1000)},
    fee=None,
    fee_multiple=Dec(2),
    fee_value={},
)


def lease(n: int) -> LeaseID:
    return LeaseID(owner=address(1), dseq=n, gseq=1, oseq=1, provider=PROVIDER)


def escrow(*, balance: int, blocks: int, rate: str = "10") -> EscrowView:
    return EscrowView(
        height=1000 + blocks,
        settled_at=1000,
        balance=Dec(balance),
        rate=Dec(rate),
        lease_rate=Dec(rate),
        unpaid=Dec(0),
        denom="uact",
    )


@dataclass
class Harness:
    bus: Bus
    balance: Balance
    chain: MemoryChain
    now: list[float]

    async def published(self, stream: str) -> list[Any]:
        return [
            envelope_from_fields(e.fields).payload for e in await self.bus.backend.entries(stream)
        ]

    async def due(self) -> dict[str, float]:
        return dict(await self.bus.backend.zrangebyscore(DUE, 0, float("inf")))


@pytest.fixture
async def harness(redis_url: str) -> AsyncIterator[Harness]:
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test", settings=FAST_SETTINGS)
    chain, now = MemoryChain(), [10_000.0]
    balance = Balance(
        bus=bus,
        chain=chain,
        policy=POLICY,
        provider=PROVIDER,
        batch=2,
        retry_s=60.0,
        recovery_window_s=60.0,
        clock=BlockClock(6.0),
        now=lambda: now[0],
    )
    events = bus.subscriber(CLUSTER_EVENTS, group="balance", consumer="b")
    events.add(LeaseFundsMonitor, balance.on_funds_monitor)
    results = bus.subscriber(CHAIN_RESULTS, group="balance", consumer="b")
    results.add(TxCommitted, balance.on_tx_committed)
    results.add(TxFailed, balance.on_tx_failed)
    try:
        async with running(events, results):
            yield Harness(bus, balance, chain, now)
    finally:
        await bus.close()


async def watch(h: Harness, *leases: LeaseID, new: bool = True) -> None:
    for lease_id in leases:
        await h.bus.publish(
            CLUSTER_EVENTS, LeaseFundsMonitor(lease_id=lease_id, action="add", is_new_lease=new)
        )
    await eventually(h.balance.count, what="leases watched", until=lambda n: n == len(leases))


async def test_a_dry_lease_is_withdrawn_once_and_its_earnings_counted(harness: Harness) -> None:
    h = harness
    await watch(h, lease(1))
    h.chain.height = 1050
    h.chain.views[str(lease(1))] = escrow(balance=400, blocks=50)  # 500 owed, 400 left
    assert await h.balance.check_due() == 1
    [command] = await h.published(CHAIN_TX)
    assert isinstance(command, BroadcastTx)
    assert command.msgs == [WithdrawLease(lease_id=lease(1))]
    events = await h.published(BALANCE_EVENTS)
    assert [type(e) for e in events] == [WithdrawalRequested, LeaseOutOfFunds]
    assert events[0].reason == "out_of_funds" and events[1].height == 1050
    assert events[1].balance.amount == Dec(-100)
    # in flight: not looked at again until its result
    h.now[0] += 600
    assert await h.balance.check_due() == 0
    h.chain.paid[str(lease(1))] = ("uact", 400)
    result = TxCommitted(key=command.key, tx_hash="AB" * 32, height=1051)
    await h.bus.publish(CHAIN_RESULTS, result)
    await eventually(
        lambda: h.bus.backend.hgetall(PENDING), what="result handled", until=lambda p: not p
    )
    assert await h.balance.earnings.earned() == {"uact": 400}
    assert (await h.due())[str(lease(1))] == 10_000.0 + 600  # the dry recheck
    # the same result delivered again changes nothing
    await h.bus.publish(CHAIN_RESULTS, result)
    h.chain.paid[str(lease(1))] = ("uact", 450)  # were it read again, it would count 50 more
    await h.bus.publish(
        CHAIN_RESULTS, TxCommitted(key="create-bid/x", tx_hash="CD" * 32, height=1052)
    )
    await eventually(
        lambda: h.bus.backend.pending_summary(CHAIN_RESULTS, "balance"),
        what="every result read",
        until=lambda summary: summary.count == 0,
    )
    assert await h.balance.earnings.earned() == {"uact": 400}


async def test_a_healthy_lease_is_withdrawn_at_the_period_and_a_small_one_skipped(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    await watch(h, lease(1), lease(2))
    h.chain.views[str(lease(1))] = escrow(balance=10**9, blocks=500)  # 5,000uact to collect
    h.chain.views[str(lease(2))] = escrow(balance=10**9, blocks=50)  # 500uact: below 1,000
    assert await h.balance.check_due() == 2
    assert await h.published(CHAIN_TX) == []  # nothing due yet: the period is an hour
    assert await h.balance.unpaid() == {"uact": 5000 + 500}  # owed as of the check
    assert set((await h.due()).values()) == {10_000.0 + 600}
    h.now[0] = 10_000.0 + 3600
    with caplog.at_level(logging.INFO, logger="akbalance"):
        assert await h.balance.check_due() == 2
    [command] = await h.published(CHAIN_TX)
    assert command.msgs == [WithdrawLease(lease_id=lease(1))]
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert skipped == [
        f"periodic withdrawal from {lease(2)} skipped: 500uact is below "
        "AP_WITHDRAWAL_MIN_AMOUNT 1000uact"
    ]
    record = json.loads((await h.bus.backend.hgetall(LEASES))[str(lease(2))])
    assert record["next_periodic"] == 10_000.0 + 7200


async def test_leases_due_together_share_a_transaction_up_to_the_batch_size(
    harness: Harness,
) -> None:
    h = harness
    await watch(h, lease(1), lease(2), lease(3))
    for n in (1, 2, 3):
        h.chain.views[str(lease(n))] = escrow(balance=0, blocks=10)
    await h.balance.check_due()
    commands = await h.published(CHAIN_TX)
    assert sorted(len(c.msgs) for c in commands) == [1, 2]
    assert {m.lease_id for c in commands for m in c.msgs} == {lease(1), lease(2), lease(3)}


async def test_a_failed_withdrawal_is_tried_again_after_the_retry_pause(harness: Harness) -> None:
    h = harness
    await watch(h, lease(1))
    h.chain.views[str(lease(1))] = escrow(balance=0, blocks=10)
    await h.balance.check_due()
    [command] = await h.published(CHAIN_TX)
    await h.bus.publish(
        CHAIN_RESULTS, TxFailed(key=command.key, code=11, codespace="sdk", log="out of gas")
    )
    await eventually(
        lambda: h.bus.backend.hgetall(PENDING), what="failure handled", until=lambda p: not p
    )
    assert (await h.due())[str(lease(1))] == 10_000.0 + 60
    assert "out of gas" in h.balance.last_error
    assert await h.balance.earnings.earned() == {}


async def test_a_thousand_recovered_leases_are_checked_over_the_window_not_at_once(
    harness: Harness,
) -> None:
    h = harness
    leases = [str(lease(n)) for n in range(1, 1001)]
    records = {n: json.dumps({"added": 0.0, "next_periodic": 99_999.0}) for n in leases}

    async def seed(tx: Any) -> None:  # watched before a long stop: every check is overdue
        tx.state.hset(LEASES, records)
        tx.state.zadd(DUE, {n: 5_000.0 + i for i, n in enumerate(leases)})

    await h.bus.transact(seed)
    for n in leases:
        h.chain.views[n] = escrow(balance=10**9, blocks=1)
    assert await h.balance.recover() == 1000
    due = await h.due()
    assert min(due.values()) > 10_000.0 and max(due.values()) < 10_060.0
    looked: list[int] = []
    for second in range(1, 61):  # a check pass each second of the window
        h.now[0] = 10_000.0 + second
        before = len(h.chain.looked_at)
        await h.balance.check_due()
        looked.append(len(h.chain.looked_at) - before)
    assert sum(looked) == 1000
    assert max(looked) <= 17  # about 1000 / 60 per second, never a burst
    # a lease the cluster recovers is spread too; a new one is looked at at once
    await h.bus.publish(
        CLUSTER_EVENTS, LeaseFundsMonitor(lease_id=lease(2001), action="add", is_new_lease=False)
    )
    await h.bus.publish(
        CLUSTER_EVENTS, LeaseFundsMonitor(lease_id=lease(2002), action="add", is_new_lease=True)
    )
    await eventually(h.balance.count, what="two more", until=lambda n: n == 1002)
    due = await h.due()
    assert 10_060.0 < due[str(lease(2001))] < 10_120.0
    assert due[str(lease(2002))] == 10_060.0


async def test_removed_and_closed_leases_are_no_longer_watched(harness: Harness) -> None:
    h = harness
    await watch(h, lease(1), lease(2))
    await h.bus.publish(CLUSTER_EVENTS, LeaseFundsMonitor(lease_id=lease(1), action="remove"))
    await eventually(h.balance.count, what="one removed", until=lambda n: n == 1)
    await h.balance.check_due()  # lease 2: the chain no longer has it active
    assert await h.balance.count() == 0
    assert await h.due() == {}


async def test_a_sweep_sends_exactly_the_excess_once_at_a_time(harness: Harness) -> None:
    h = harness
    h.chain.wallet = {"uakt": 20_000_000, "uact": 3_000_000}
    cold = address(7)
    keep = {"uakt": Dec(5_000_000), "uact": Dec(1_000_000)}
    fee = Coin(denom="uakt", amount=7_500)
    sent = await h.balance.sweeps.sweep(cold, keep, {"uact": 500_000}, fee)
    assert sent == [Coin(denom="uact", amount=1_500_000), Coin(denom="uakt", amount=14_992_500)]
    [command] = await h.published(CHAIN_TX)
    assert command.msgs == [Send(to_address=cold, amount=sent)]
    assert [
        e.amount for e in await h.published(BALANCE_EVENTS) if isinstance(e, SweepRequested)
    ] == sent
    assert await h.balance.sweeps.sweep(cold, keep, {}, fee) == []  # the first has no result yet
    await h.bus.publish(CHAIN_RESULTS, TxCommitted(key=command.key, tx_hash="EF" * 32, height=7))
    await eventually(
        lambda: h.bus.backend.hgetall(PENDING), what="sweep done", until=lambda p: not p
    )
    assert await h.balance.earnings.swept() == {"uact": 1_500_000, "uakt": 14_992_500}


async def test_results_counted_at_once_never_count_a_unit_twice(harness: Harness) -> None:
    h = harness
    name = str(lease(1))
    # two withdrawals' results read the chain's total (400, then 450) and count concurrently
    added = await asyncio.gather(
        *(h.balance.earnings.count(name, "uact", total) for total in (400, 450, 450))
    )
    assert sum(added) == 450
    assert await h.balance.earnings.earned() == {"uact": 450}
    assert await h.balance.earnings.count(name, "uact", 450) == 0  # a redelivery adds nothing


async def test_one_deployments_leases_are_withdrawn_one_at_a_time(harness: Harness) -> None:
    """Akash fails a withdrawal from an escrow already settled in the same block
    (support#414): two groups of one deployment never share a transaction or a block."""
    h = harness
    first, second = lease(7), lease(7).model_copy(update={"gseq": 2})
    await watch(h, first, second)
    for lease_id in (first, second):
        h.chain.views[str(lease_id)] = escrow(balance=0, blocks=10)
    await h.balance.check_due()
    [command] = await h.published(CHAIN_TX)
    assert len(command.msgs) == 1
    [other] = {first, second} - {command.msgs[0].lease_id}
    h.now[0] += 5
    await h.balance.check_due()  # still in flight: the other waits
    assert len(await h.published(CHAIN_TX)) == 1
    await h.bus.publish(CHAIN_RESULTS, TxCommitted(key=command.key, tx_hash="AB" * 32, height=1011))
    await eventually(lambda: h.bus.backend.hgetall(PENDING), what="result", until=lambda p: not p)
    h.now[0] += 15  # looked at again two blocks (of 6 s) later
    await h.balance.check_due()
    later = await h.published(CHAIN_TX)
    assert [c.msgs for c in later[1:]] == [[WithdrawLease(lease_id=other)]]


async def test_two_replicas_never_check_one_lease_at_once(harness: Harness) -> None:
    h = harness
    other = Balance(
        bus=h.bus,
        chain=h.chain,
        policy=POLICY,
        provider=PROVIDER,
        batch=10,
        retry_s=60.0,
        recovery_window_s=60.0,
        clock=BlockClock(6.0),
        now=lambda: h.now[0],
    )
    leases = [lease(n) for n in range(1, 201)]
    await watch(h, *leases)
    for lease_id in leases:  # every one dry: each check would publish a withdrawal
        h.chain.views[str(lease_id)] = escrow(balance=0, blocks=10)
    await asyncio.gather(h.balance.check_due(), other.check_due(), h.balance.check_due())
    looked = collections.Counter(name for name, _ in h.chain.looked_at)
    assert set(looked) == {str(n) for n in leases} and set(looked.values()) == {1}
    withdrawn = [m.lease_id for c in await h.published(CHAIN_TX) for m in c.msgs]
    assert sorted(withdrawn, key=str) == sorted(leases, key=str)  # each exactly once


async def test_a_lease_claimed_by_a_replica_that_died_is_checked_after_the_claim_lapses(
    harness: Harness,
) -> None:
    h = harness
    await watch(h, lease(1))
    h.chain.views[str(lease(1))] = escrow(balance=10**9, blocks=1)
    # a replica claims it, then dies before deciding anything
    assert await h.balance._claim(str(lease(1)), h.now[0])
    assert await h.balance.check_due() == 0  # claimed: not due now
    h.now[0] += 121  # the claim lapsed
    assert await h.balance.check_due() == 1
