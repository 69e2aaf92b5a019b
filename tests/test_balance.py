"""Getting paid, across real processes: the balance service on the devnet (100 ms blocks)
with the relay, the cluster on kubesim, the bid engine, the manifest service and the gateway.

Prices are set so that leases accrue fast (``AP_BID_PRICE_CPU_SCALE`` 25: 2 CPUs cost about
50,000uact a block and run a 5,000,000uact deposit dry in ~100 blocks). The balance service
looks at each lease every 2 s and withdraws every 3 s; a periodic withdrawal of less than
40,000uact is skipped (the small lease collects ~23,000 a period). Tests run in order and share the suite.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import re
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from akbalance.domain.records import DUE, LEASES
from akbus import Bus, BusTx, RedisSettings
from akcli.testing import DSEQS, Provider, certified, flow, frozen, leased, sdl, whole_suite
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.events import (
    BalanceStatus,
    BidDeclined,
    BroadcastTx,
    LeaseClosedReason,
    LeaseFundsMonitor,
    LeaseOutOfFunds,
    SweepRequested,
    TxCommitted,
    WithdrawalRequested,
    WithdrawLease,
    envelope_from_fields,
)
from aktypes.events.streams import (
    BALANCE_EVENTS,
    BIDENGINE_EVENTS,
    CHAIN_RESULTS,
    CHAIN_TX,
    CLUSTER_EVENTS,
)
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace
from aktypes.testing import address

BALANCE_ENV = {
    "AP_LEASE_FUNDS_MONITOR_INTERVAL": "2s",
    "AP_WITHDRAWAL_PERIOD": "3s",
    "AP_WITHDRAWAL_MIN_AMOUNT": "40000uact",
    "AP_WITHDRAWAL_DRY_RECHECK": "2s",
    "AP_AVERAGE_BLOCK_TIME": "100ms",
    "AP_RECOVERY_WINDOW": "2s",
}
HEALTHY, SMALL, THIRSTY = sdl(cpu=0.1), sdl(cpu=0.01), sdl(cpu=2)  # ~2,500, ~250, ~50,000 a block


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with whole_suite(
        tmp_path_factory.mktemp("suite"),
        block_time="100ms",
        bidengine_env={"AP_BID_PRICE_CPU_SCALE": "25"},
        balance_env=dict(BALANCE_ENV),
    ) as provider:
        yield provider


@pytest.fixture
async def chain(suite: Provider) -> AsyncIterator[DevnetClients]:
    async with suite.devnet.clients() as clients:
        yield clients


@pytest.fixture
async def bus(suite: Provider) -> AsyncIterator[Bus]:
    bus = Bus.connect(RedisSettings(url=suite.redis_url), producer="test")
    yield bus
    await bus.close()


async def published(bus: Bus, stream: str) -> list[tuple[str, Any]]:
    return [
        (e.id, envelope_from_fields(e.fields).payload) for e in await bus.backend.entries(stream)
    ]


async def uact(chain: DevnetClients, who: str) -> int:
    return await chain.lcd.balance(who, "uact")


async def withdrawn(chain: DevnetClients, lease: LeaseID) -> int:
    payment = (await chain.lcd.lease(lease)).payment
    return payment.withdrawn.amount if payment else 0


async def withdrawals_of(bus: Bus, lease: LeaseID) -> list[str]:
    """The keys of the withdrawal commands for ``lease`` on the relay's stream."""
    return [
        p.key
        for _, p in await published(bus, CHAIN_TX)
        if isinstance(p, BroadcastTx) and WithdrawLease(lease_id=lease) in p.msgs
    ]


async def accounts(bus: Bus, chain: DevnetClients, *leases: LeaseID) -> tuple[Any, ...]:
    """(what the balance service's status counts as earned, what the chain paid for
    ``leases``, withdrawals without a result)."""
    found = await bus.status("balance")
    status = found.payload if found is not None else None
    assert isinstance(status, BalanceStatus)
    paid = sum([await withdrawn(chain, lease) for lease in leases])
    return status.earned, {"uact": paid} if paid else {}, status.pending


def accounted(figures: tuple[Any, ...]) -> bool:
    earned, paid, pending = figures
    return bool(earned == paid and pending == 0)


async def committed(bus: Bus, key: str) -> bool:
    return any(
        isinstance(p, TxCommitted) and p.key == key for _, p in await published(bus, CHAIN_RESULTS)
    )


_LEASES: dict[str, LeaseID] = {}


async def test_a_healthy_lease_is_withdrawn_periodically_and_a_small_one_skipped(
    suite: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider = suite.devnet.signer("provider").address
    tenant = chain.tenant("tenant-1")
    certificate = await certified(tenant, suite)
    [healthy] = await leased(suite, tenant, HEALTHY)
    [small] = await leased(suite, tenant, SMALL)
    before = await uact(chain, provider)  # bids' deposits taken, nothing monitored yet
    for lease, shape in ((healthy, HEALTHY), (small, SMALL)):
        status, answer = await tenant.send_manifest_answer(
            lease.dseq, shape, suite.gateway.url, certificate=certificate, provider=provider
        )
        assert status == 200, answer
    _LEASES.update(healthy=healthy, small=small)

    async def healthy_withdrawals() -> list[str]:
        keys = await withdrawals_of(bus, healthy)
        return [k for k in keys if await committed(bus, k)]

    await eventually(
        healthy_withdrawals,
        timeout_s=60,
        what="two periodic withdrawals",
        until=lambda k: len(k) >= 2,
    )
    # the service counts what the chain paid: every withdrawal once
    await eventually(
        lambda: accounts(bus, chain, *_LEASES.values()),
        timeout_s=30,
        what="earnings counted",
        until=accounted,
    )
    suite.balance.stop()  # nothing more is withdrawn while the balances are compared
    gained = await uact(chain, provider) - before
    paid = {
        name: await withdrawn(chain, lease)
        for name, lease in (("healthy", healthy), ("small", small))
    }
    assert paid["healthy"] > 0 and paid["small"] == 0
    assert gained == paid["healthy"]  # to the unit: the chain's escrow payment is what arrived
    assert await withdrawals_of(bus, small) == []
    skipped = re.findall(
        rf"periodic withdrawal from {re.escape(str(small))} skipped: (.*?)\"", suite.balance.log()
    )
    assert skipped and "is below AP_WITHDRAWAL_MIN_AMOUNT 40000uact" in skipped[0]
    suite.balance.start()


async def test_a_kill_between_broadcast_and_result_withdraws_once_and_resumes(
    suite: Provider, chain: DevnetClients, bus: Bus
) -> None:
    healthy = _LEASES["healthy"]
    seen = set(await withdrawals_of(bus, healthy))
    with frozen(suite.relay):  # withdrawals are published, none is broadcast
        keys = await eventually(
            lambda: withdrawals_of(bus, healthy),
            timeout_s=30,
            what="a new withdrawal",
            until=lambda keys: set(keys) - seen,
        )
        [key] = set(keys) - seen
        suite.balance.kill()
        suite.balance.start()
    await eventually(lambda: committed(bus, key), timeout_s=30, what=f"{key} committed")
    await eventually(
        lambda: withdrawals_of(bus, healthy),
        timeout_s=30,
        what="the schedule resumed after the restart",
        until=lambda later: len(set(later) - seen) >= 2,
    )
    later = await withdrawals_of(bus, healthy)
    assert later.count(key) == 1  # published once: the restart did not send it again
    # no withdrawal counted twice: the earnings are the chain's payment, exactly
    await eventually(
        lambda: accounts(bus, chain, *_LEASES.values()),
        timeout_s=30,
        what="earnings counted",
        until=accounted,
    )


async def test_a_withdrawal_committed_while_the_service_is_dead_is_not_sent_again(
    suite: Provider, chain: DevnetClients, bus: Bus
) -> None:
    healthy = _LEASES["healthy"]
    seen = set(await withdrawals_of(bus, healthy))

    async def settled() -> bool:  # none in flight: the next one is new
        return all([await committed(bus, key) for key in seen])

    await eventually(settled, timeout_s=30, what="earlier withdrawals committed")
    seen = set(await withdrawals_of(bus, healthy))
    with frozen(suite.relay):  # a withdrawal is published, not broadcast yet
        keys = await eventually(
            lambda: withdrawals_of(bus, healthy),
            timeout_s=30,
            what="a new withdrawal",
            until=lambda keys: set(keys) - seen,
        )
        [key] = set(keys) - seen
        suite.balance.kill()
    # the relay broadcasts it and the chain commits it while the balance service is down
    await eventually(lambda: committed(bus, key), timeout_s=30, what=f"{key} committed")
    suite.balance.start()
    await eventually(
        lambda: withdrawals_of(bus, healthy),
        timeout_s=30,
        what="the schedule resumed after the restart",
        until=lambda later: len(set(later) - seen) >= 2,
    )
    assert (await withdrawals_of(bus, healthy)).count(key) == 1
    await eventually(
        lambda: accounts(bus, chain, *_LEASES.values()),
        timeout_s=30,
        what="earnings counted once",
        until=accounted,
    )


async def test_a_lease_that_runs_dry_is_withdrawn_closed_by_the_chain_and_torn_down(
    suite: Provider, chain: DevnetClients, bus: Bus
) -> None:
    tenant = chain.tenant("tenant-2")
    certificate = await certified(tenant, suite)
    deployed = await flow(suite, tenant, certificate, THIRSTY, "thirsty")
    [lease] = deployed["leases"]
    out = await eventually(
        lambda: published(bus, BALANCE_EVENTS),
        timeout_s=60,
        what="the lease out of funds",
        until=lambda found: any(
            isinstance(p, LeaseOutOfFunds) and p.lease_id == lease for _, p in found
        ),
    )
    assert any(
        isinstance(p, WithdrawalRequested) and p.lease_id == lease and p.reason == "out_of_funds"
        for _, p in out
    )
    closed = await eventually(
        lambda: chain.lcd.lease(lease),
        timeout_s=30,
        what="the lease closed",
        until=lambda found: found.state != "active",
    )
    assert (closed.state, closed.reason) == (
        "insufficient_funds",
        LeaseClosedReason.INSUFFICIENT_FUNDS,
    )
    await eventually(
        lambda: published(bus, CLUSTER_EVENTS),
        timeout_s=60,
        what="torn down and no longer monitored",
        until=lambda found: any(
            isinstance(p, LeaseFundsMonitor) and p.lease_id == lease and p.action == "remove"
            for _, p in found
        ),
    )
    with urllib.request.urlopen(f"{suite.kubesim.url}/api/v1/namespaces") as answer:  # noqa: S310
        namespaces = {n["metadata"]["name"] for n in json.load(answer)["items"]}
    assert lease_namespace(lease) not in namespaces


async def test_a_sweep_moves_exactly_the_excess_to_the_cold_address(
    suite: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider = suite.devnet.signer("provider").address
    cold = address(77)
    suite.balance.stop()
    balance = await chain.lcd.balance(provider, "uakt")
    keep = balance - 1_234_567
    suite.balance.env.update(
        {
            "AP_WITHDRAWAL_PERIOD": "0",  # no withdrawal fees meanwhile: uakt stays still
            "AP_SWEEP_ADDRESS": cold,
            "AP_SWEEP_KEEP": f"{keep}uakt",
            "AP_SWEEP_INTERVAL": "1s",
        }
    )
    suite.balance.start()
    sweeps = await eventually(
        lambda: published(bus, BALANCE_EVENTS),
        timeout_s=30,
        what="a sweep",
        until=lambda found: any(isinstance(p, SweepRequested) for _, p in found),
    )
    [sweep] = [p for _, p in sweeps if isinstance(p, SweepRequested)]
    fee = 300_000 * 25 // 1000  # the relay's: 300,000 gas at 0.025uakt
    assert sweep.amount.amount == 1_234_567 - fee and sweep.amount.denom == "uakt"
    await eventually(
        lambda: chain.lcd.balance(cold, "uakt"),
        timeout_s=30,
        what="the sweep arrived",
        until=lambda n: n > 0,
    )
    assert await chain.lcd.balance(cold, "uakt") == 1_234_567 - fee
    assert await chain.lcd.balance(provider, "uakt") == keep  # exactly what was to stay


async def test_below_the_minimum_balance_no_bids_are_placed_and_a_warning_says_why(
    suite: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider = suite.devnet.signer("provider").address
    balance = await chain.lcd.balance(provider, "uakt")
    suite.balance.stop()
    suite.balance.env.pop("AP_SWEEP_ADDRESS", None)
    suite.balance.env.pop("AP_SWEEP_KEEP", None)
    suite.balance.env["AP_MINIMUM_BALANCE"] = f"{balance * 2}uakt"
    suite.balance.start()

    async def below() -> list[str]:
        found = await bus.status("balance")
        status = found.payload if found is not None else None
        return status.below_minimum if isinstance(status, BalanceStatus) else []

    assert await eventually(below, timeout_s=30, what="the balance below the minimum") == ["uakt"]
    await eventually(  # the bid engine reads that status every 2 s, and says so
        suite.bidengine.log,
        timeout_s=10,
        what="the bid engine's warning",
        until=lambda log: "below AP_MINIMUM_BALANCE: no new bids" in log,
    )
    tenant = chain.tenant("tenant-3")
    deployment = await tenant.deploy(HEALTHY, dseq=next(DSEQS))
    declined = await eventually(
        lambda: published(bus, BIDENGINE_EVENTS),
        timeout_s=30,
        what="the order declined",
        until=lambda found: any(
            isinstance(p, BidDeclined) and p.order_id.dseq == deployment.dseq for _, p in found
        ),
    )
    [decline] = [
        p for _, p in declined if isinstance(p, BidDeclined) and p.order_id.dseq == deployment.dseq
    ]
    assert [r.code for r in decline.reasons] == ["balance_below_minimum"]
    assert await tenant.bids(deployment.dseq, provider=provider) == []
    assert "is below AP_MINIMUM_BALANCE" in suite.balance.log()


async def test_a_thousand_leases_recovered_at_a_restart_are_checked_over_the_window(
    suite: Provider, bus: Bus
) -> None:
    suite.balance.stop()
    provider = suite.devnet.signer("provider").address
    gone = {  # watched before the stop, closed on chain meanwhile: each check drops one
        str(LeaseID(owner=address(5), dseq=n, gseq=1, oseq=1, provider=provider))
        for n in range(1, 1001)
    }
    now = time.time()

    async def seed(tx: BusTx) -> None:  # every check came due while the service was down
        tx.state.hset(
            LEASES, {n: json.dumps({"added": 0, "next_periodic": now + 3600}) for n in gone}
        )
        tx.state.zadd(DUE, {n: now - 600 + i * 0.1 for i, n in enumerate(sorted(gone))})

    await bus.transact(seed)
    suite.balance.env["AP_RECOVERY_WINDOW"] = "10s"
    suite.balance.env["AP_LOG_RATE"] = "0"  # each check is counted by its log line
    suite.balance.start()
    started = time.time()
    await eventually(
        lambda: bus.backend.zrangebyscore(DUE, 0, float("inf")),
        timeout_s=60,
        what="every recovered lease checked",
        until=lambda left: not {n for n, _ in left} & gone,
    )
    checked = [
        dt.datetime.fromisoformat(line["timestamp"]).timestamp()
        for line in map(json.loads, suite.balance.log().splitlines()[-5000:])
        if "is not active any more" in line.get("event", "") and line["event"].split()[1] in gone
    ]
    assert len(checked) == 1000
    assert min(checked) >= started - 1 and max(checked) - min(checked) >= 8  # over the window
    per_second = collections.Counter(int(t - min(checked)) for t in checked)
    assert max(per_second.values()) <= 250  # about 100 a second; never the 1,000 at once
