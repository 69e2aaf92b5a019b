"""The balance service process: wiring, the check loop, sweeps and status, on the runtime.

Start: learn the provider's address (``AP_PROVIDER_ADDRESS``, else the chain relay's
status), spread the checks that came due while it was down over ``AP_RECOVERY_WINDOW``,
then consume ``akash.provider.cluster.events`` (``LeaseFundsMonitor``: which leases to
watch) and ``akash.provider.chain.results`` (our withdrawals' and sweeps' outcomes); look at
due leases twice a second, sweep every ``AP_SWEEP_INTERVAL`` when ``AP_SWEEP_ADDRESS`` is
set, and publish the status. Every lease's schedule is in Redis: a restarted service
resumes it.
"""

from __future__ import annotations

import contextlib
import logging

from akbalance import metrics
from akbalance.adapters.chain import BlockClock, ChainReader
from akbalance.errors import ChainUnavailable
from akbalance.handlers import Balance
from akbalance.settings import BalanceSettings
from akbus import ConnectionLost
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from akservice import Runtime, ServiceSpec
from aktypes.coin import Coin
from aktypes.events import (
    BalanceStatus,
    BidEngineStatus,
    LeaseFundsMonitor,
    TxCommitted,
    TxFailed,
)
from aktypes.events.streams import CHAIN_RESULTS, CLUSTER_EVENTS

log = logging.getLogger("akbalance")


async def run_checks(rt: Runtime[BalanceSettings], balance: Balance) -> None:
    while True:
        with contextlib.suppress(ConnectionLost):
            await balance.check_due()
        if not await rt.sleep(0.5):
            return


async def run_sweeps(rt: Runtime[BalanceSettings], balance: Balance) -> None:
    settings = rt.settings
    keep = settings.keep()
    deposit = Coin.parse(settings.bid_deposit)
    while True:
        with contextlib.suppress(ConnectionLost, ChainUnavailable):
            bids = await rt.bus.status("bidengine")
            orders = (
                bids.payload.orders if bids and isinstance(bids.payload, BidEngineStatus) else 0
            )
            reserved = {deposit.denom: orders * deposit.amount}
            await balance.sweeps.sweep(settings.sweep_address, keep, reserved, settings.fee())
        if not await rt.sleep(settings.sweep_interval):
            return


class Status:
    """Publishes the status; warns once each time a balance falls below the minimum."""

    def __init__(self, rt: Runtime[BalanceSettings], balance: Balance) -> None:
        self.rt = rt
        self.balance = balance
        self.minimum = rt.settings.minimum()
        self.low: set[str] = set()

    async def once(self) -> BalanceStatus:
        balance = self.balance
        balances: dict[str, int] = {}
        try:
            balances = await balance.chain.balances(balance.provider)
        except ChainUnavailable as exc:
            balance.last_error = str(exc)
        for denom, amount in balances.items():
            metrics.BALANCE.labels(denom).set(amount)
        low = {d for d, least in self.minimum.items() if balances and least > balances.get(d, 0)}
        for denom in sorted(low - self.low):
            log.warning(
                "the provider's balance of %s%s is below AP_MINIMUM_BALANCE %s%s: "
                "the bid engine places no bids until it is topped up",
                balances.get(denom, 0),
                denom,
                self.minimum[denom].normalized(),
                denom,
            )
        for denom in sorted(self.low - low):
            log.info("the provider's balance of %s is above AP_MINIMUM_BALANCE again", denom)
        for denom in self.minimum:
            metrics.BELOW_MINIMUM.labels(denom).set(1 if denom in low else 0)
        if balances:
            self.low = low
        earned, swept = await balance.earnings.earned(), await balance.earnings.swept()
        for denom, amount in earned.items():
            metrics.EARNED.labels(denom).set(amount)
        for denom, amount in swept.items():
            metrics.SWEPT.labels(denom).set(amount)
        leases, unpaid = await balance.watched()
        for denom, amount in unpaid.items():
            metrics.UNPAID.labels(denom).set(amount)
        metrics.LEASES.set(leases)
        return BalanceStatus(
            leases=leases,
            last_error=balance.last_error,
            earned=earned,
            unpaid=unpaid,
            swept=swept,
            balances=balances,
            below_minimum=sorted(self.low),
            pending=await balance.pending_count(),
        )


async def start(rt: Runtime[BalanceSettings]) -> None:
    settings = rt.settings
    address = await rt.provider_address(settings.provider_address)
    log.info("balance service for provider %s", address)
    lcd = await rt.resource(LCDClient(settings.api))
    rpc = await rt.resource(RPCClient(settings.node))
    balance = Balance(
        bus=rt.bus,
        chain=ChainReader(lcd, rpc),
        policy=settings.policy(),
        provider=address,
        batch=settings.withdrawal_batch,
        retry_s=settings.withdrawal_retry,
        recovery_window_s=settings.recovery_window,
        clock=BlockClock(settings.average_block_time),
    )
    await rt.wait_for("the monitored leases in Redis", balance.recover)
    events = rt.subscriber(CLUSTER_EVENTS)
    events.add(LeaseFundsMonitor, balance.on_funds_monitor)
    results = rt.subscriber(CHAIN_RESULTS)
    results.add(TxCommitted, balance.on_tx_committed)
    results.add(TxFailed, balance.on_tx_failed)
    rt.supervise(run_checks(rt, balance), "checks")
    rt.publish_status(Status(rt, balance).once, settings.balance_status_interval)
    if settings.sweep_address:
        rt.supervise(run_sweeps(rt, balance), "sweeps")


SPEC = ServiceSpec(
    name="balance",
    title="balance service",
    summary="escrow of every lease watched; withdrawals when dry and periodic (fee-aware); sweep",
    distribution="akbalance",
    settings=BalanceSettings,
    health_listen="0.0.0.0:8096",
    start=start,
)
