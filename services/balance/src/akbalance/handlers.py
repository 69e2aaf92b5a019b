"""The balance service's handlers: the watched leases, their checks, withdrawals and results.

Which leases to watch comes from the cluster (``LeaseFundsMonitor``); each has a record in
Redis and a next check on a schedule (the keys: :mod:`akbalance.domain.records`). A check
and the withdrawal it decides (:mod:`akbalance.domain.funds`) are one Redis transaction: the
``BroadcastTx`` for the chain relay (which broadcasts each key at most once), the
``WithdrawalRequested`` events, the pending record and the lease's next check. A lease whose
withdrawal is in flight is not due until its result comes (``TxCommitted``/``TxFailed`` on
``akash.provider.chain.results``, read through a consumer group: a restart picks them up),
or until ``PENDING_TIMEOUT_S``; a committed one's payment is counted in the earnings
(:mod:`akbalance.earnings`); a sweep's result goes to :mod:`akbalance.sweeps`.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from akbalance import metrics
from akbalance.adapters.chain import BlockClock, Chain
from akbalance.domain.funds import Decision, Policy, decide, spread
from akbalance.domain.records import (
    CLAIM_S,
    DUE,
    GUARD,
    LEASES,
    PENDING,
    PENDING_TIMEOUT_S,
    SWEEP_PREFIX,
    WITHDRAW_PREFIX,
    deployment_of,
)
from akbalance.earnings import Earnings
from akbalance.errors import ChainUnavailable, NodeCatchingUp
from akbalance.sweeps import Sweeps
from akbus import Bus, BusTx, Message
from aktypes.coin import Dec, DecCoin
from aktypes.events import (
    BroadcastTx,
    LeaseFundsMonitor,
    LeaseOutOfFunds,
    TxCommitted,
    TxFailed,
    WithdrawalRequested,
    WithdrawLease,
)
from aktypes.events.streams import BALANCE_EVENTS, CHAIN_TX
from aktypes.ids import LeaseID

log = logging.getLogger("akbalance")


@dataclass
class Balance:
    """The balance service's state machine over Redis (see :mod:`akbalance.domain.records`)."""

    bus: Bus
    chain: Chain
    policy: Policy
    provider: str
    batch: int
    retry_s: float
    recovery_window_s: float
    clock: BlockClock
    now: Callable[[], float] = time.time
    last_error: str = ""
    earnings: Earnings = field(init=False)
    sweeps: Sweeps = field(init=False)

    def __post_init__(self) -> None:
        self.earnings = Earnings(self.bus)
        self.sweeps = Sweeps(self.bus, self.chain, self.provider, self._failed, self.now)

    def _failed(self, error: str) -> None:
        self.last_error = error

    # -- which leases ---------------------------------------------------------------------
    async def on_funds_monitor(self, msg: Message[LeaseFundsMonitor]) -> None:
        lease = str(msg.payload.lease_id)
        if msg.payload.action == "remove":

            async def forget(tx: BusTx) -> None:
                tx.state.hdel(LEASES, lease)
                _undue(tx, lease)

            await msg.apply_once(forget)
            log.info("lease %s no longer monitored", lease)
            return
        now = self.now()
        first = now
        if not msg.payload.is_new_lease:  # recovered by the cluster: no burst of checks
            first = spread([lease], now, self.recovery_window_s)[lease]
        period = self.policy.withdrawal_period
        record = {"added": now, "next_periodic": now + period if period else math.inf}

        added = False

        async def watch(tx: BusTx) -> None:
            nonlocal added
            if await tx.state.hget(LEASES, lease) is not None:  # watched already
                return
            tx.state.hset(LEASES, {lease: json.dumps(record)})
            _due(tx, {lease: first})
            added = True

        await msg.apply_once(watch)
        if added:
            log.info("lease %s monitored, first check in %.0fs", lease, first - now)

    async def recover(self) -> int:
        """Spread the checks that came due while the service was down over the recovery
        window; how many there were."""
        now = self.now()
        overdue = [lease for lease, _ in await self.bus.backend.zrangebyscore(DUE, 0, now)]
        times = spread(overdue, now, self.recovery_window_s)
        if times:

            async def reschedule(tx: BusTx) -> None:
                _due(tx, times)

            await self.bus.transact(reschedule)
            log.info(
                "%d overdue lease checks spread over %.0fs", len(times), self.recovery_window_s
            )
        return len(times)

    async def count(self) -> int:
        return (await self.watched())[0]

    async def unpaid(self) -> dict[str, int]:
        return (await self.watched())[1]

    async def watched(self) -> tuple[int, dict[str, int]]:
        """How many leases are watched, and what they owe the provider per denom as of each
        one's last check (an estimate: the chain settles it on withdrawal)."""
        records = await self.bus.backend.hgetall(LEASES)
        owed: dict[str, int] = {}
        for raw in records.values():
            denom, amount = json.loads(raw).get("unpaid") or ("", 0)
            if denom:
                owed[denom] = owed.get(denom, 0) + int(amount)
        return len(records), owed

    # -- checks -----------------------------------------------------------------------------
    async def check_due(self) -> int:
        """Look at every lease whose check is due; how many."""
        now = self.now()
        due = [
            lease
            for lease, score in await self.bus.backend.zrangebyscore(DUE, 0, now)
            if await self._claim(lease, score, now)
        ]
        if not due:
            return 0
        try:
            tip = await self.chain.tip()
        except (ChainUnavailable, NodeCatchingUp) as exc:
            await self._later(due, now + self.retry_s, str(exc))
            return len(due)
        self.clock.saw(tip)
        records = await self.bus.backend.hgetall(LEASES)
        withdrawals: list[tuple[str, Decision, Dec, str]] = []
        settling = await self._settling()
        for lease in due:
            raw = records.get(lease)
            if raw is None:  # no longer monitored
                await self._drop(lease)
                continue
            record = json.loads(raw)
            deployment = deployment_of(lease)
            if deployment in settling:  # another lease of it is being withdrawn: next block
                await self._later([lease], now + max(2 * self.clock.block_time, 1.0), "")
                continue
            metrics.CHECKS.inc()
            try:
                view = await self.chain.escrow(LeaseID.parse(lease), tip.height)
            except ChainUnavailable as exc:
                await self._later([lease], now + self.retry_s, str(exc))
                continue
            if view is None:
                log.info("lease %s is not active any more: no longer monitored", lease)
                await self._drop(lease)
                continue
            decision = decide(
                view,
                now=now,
                next_periodic=float(record["next_periodic"]),
                block_time=self.clock.block_time,
                policy=self.policy,
            )
            record["next_periodic"] = decision.next_periodic
            record["checked"] = now
            record["unpaid"] = [view.denom, view.pending().truncate()]  # as of this check
            if decision.skipped:
                metrics.SKIPPED.inc()
                log.info("periodic withdrawal from %s skipped: %s", lease, decision.skipped)
            if decision.withdraw is None:
                await self._schedule(lease, record, decision.next_check)
            else:
                records[lease] = json.dumps(record)
                withdrawals.append((lease, decision, view.remaining, view.denom))
                settling.add(deployment)
        for start in range(0, len(withdrawals), self.batch):
            await self._withdraw(withdrawals[start : start + self.batch], records, tip.height)
        return len(due)

    async def _withdraw(
        self, batch: Sequence[tuple[str, Decision, Dec, str]], records: dict[str, str], height: int
    ) -> None:
        key = f"{WITHDRAW_PREFIX}{uuid.uuid4().hex}"
        now = self.now()
        pending = {
            "leases": [lease for lease, *_ in batch],
            "next": {lease: d.next_check for lease, d, *_ in batch},
            "reasons": {lease: d.withdraw for lease, d, *_ in batch},
            "at": now,
        }

        async def write(tx: BusTx) -> None:
            tx.state.hset(PENDING, {key: json.dumps(pending)})
            for lease, decision, remaining, denom in batch:
                tx.state.hset(LEASES, {lease: records[lease]})
                _due(tx, {lease: now + PENDING_TIMEOUT_S})
                lease_id = LeaseID.parse(lease)
                reason = decision.withdraw or "periodic"
                tx.publish(BALANCE_EVENTS, WithdrawalRequested(lease_id=lease_id, reason=reason))
                if decision.withdraw == "out_of_funds":
                    tx.publish(
                        BALANCE_EVENTS,
                        LeaseOutOfFunds(
                            lease_id=lease_id,
                            balance=DecCoin(denom=denom, amount=remaining),
                            height=height,
                        ),
                    )
            tx.publish(
                CHAIN_TX,
                BroadcastTx(
                    key=key,
                    msgs=[WithdrawLease(lease_id=LeaseID.parse(lease)) for lease, *_ in batch],
                ),
            )

        await self.bus.transact(write)
        metrics.WITHDRAWALS.labels("requested").inc(len(batch))
        log.info(
            "withdrawing from %d lease(s) in %s: %s",
            len(batch),
            key,
            ", ".join(f"{lease} ({d.withdraw})" for lease, d, *_ in batch),
        )

    async def _schedule(self, lease: str, record: dict[str, Any], at: float) -> None:
        async def write(tx: BusTx) -> None:
            tx.state.hset(LEASES, {lease: json.dumps(record)})
            _due(tx, {lease: at})

        await self.bus.transact(write)

    async def _claim(self, lease: str, score: float, now: float) -> bool:
        """Take a due lease for this check, unless another replica took it since its due
        time was read: the claim moves the due time ``CLAIM_S`` on (so a replica that dies
        mid-check leaves it to the others after that), guarded by the time read."""

        async def take(tx: BusTx) -> None:
            _due(tx, {lease: now + CLAIM_S})

        guard = GUARD + lease
        if await self.bus.apply_if(guard, repr(score), take):
            return True
        # written before guards were kept (or by hand): claim it while it has none
        return await self.bus.backend.get(guard) is None and await self.bus.apply_if(
            guard, None, take
        )

    async def _settling(self) -> set[str]:
        """Deployments with a withdrawal in flight. Akash fails a withdrawal from a
        deployment whose escrow was already settled in the same block (support#414), so a
        deployment's leases are withdrawn one at a time, never in one transaction."""
        found: set[str] = set()
        for key, raw in (await self.bus.backend.hgetall(PENDING)).items():
            if key.startswith(WITHDRAW_PREFIX):
                found |= {deployment_of(lease) for lease in json.loads(raw)["leases"]}
        return found

    async def _later(self, leases: Sequence[str], at: float, error: str) -> None:
        if error:
            self.last_error = error
            log.warning("lease checks postponed: %s", error)

        async def write(tx: BusTx) -> None:
            _due(tx, dict.fromkeys(leases, at))

        await self.bus.transact(write)

    async def _drop(self, lease: str) -> None:
        async def write(tx: BusTx) -> None:
            tx.state.hdel(LEASES, lease)
            _undue(tx, lease)

        await self.bus.transact(write)

    # -- results ----------------------------------------------------------------------------
    async def on_tx_committed(self, msg: Message[TxCommitted]) -> None:
        await self._result(msg, msg.payload.height, None)

    async def on_tx_failed(self, msg: Message[TxFailed]) -> None:
        failure = msg.payload
        await self._result(msg, 0, f"{failure.codespace} {failure.code} {failure.log}".strip())

    async def _result(self, msg: Message[Any], height: int, failure: str | None) -> None:
        """A withdrawal's or a sweep's outcome (``failure``: the chain's reason, None when
        it was committed at ``height``)."""
        committed = failure is None
        key = msg.payload.key
        if not key.startswith((WITHDRAW_PREFIX, SWEEP_PREFIX)):
            await msg.apply_once()
            return
        raw = (await self.bus.backend.hgetall(PENDING)).get(key)
        if raw is None:  # handled already, or not ours
            await msg.apply_once()
            return
        pending = json.loads(raw)
        if key.startswith(SWEEP_PREFIX):
            await self.sweeps.on_result(msg, key, pending, failure)
            return
        leases: list[str] = pending["leases"]
        gained: dict[str, int] = {}
        if committed:
            for lease in leases:
                paid = await self.chain.withdrawn(LeaseID.parse(lease))
                if paid is not None:
                    gained[lease] = await self.earnings.count(lease, *paid)
        now = self.now()

        async def write(tx: BusTx) -> None:
            monitored = {lease: await tx.state.hget(LEASES, lease) for lease in leases}
            tx.state.hdel(PENDING, key)
            for lease, raw in monitored.items():
                if raw is None:  # no longer watched
                    continue
                at = float(pending["next"][lease]) if committed else now + self.retry_s
                _due(tx, {lease: at})
                if committed:  # collected: nothing unpaid as of now
                    record = json.loads(raw)
                    record.pop("unpaid", None)
                    tx.state.hset(LEASES, {lease: json.dumps(record)})

        await msg.apply_once(write)
        if committed:
            metrics.WITHDRAWALS.labels("committed").inc(len(leases))
            log.info("withdrawal %s committed at height %s: %s", key, height, gained)
        else:
            metrics.WITHDRAWALS.labels("failed").inc(len(leases))
            self.last_error = f"withdrawal {key} failed: {failure}"
            log.warning(
                "%s; the leases are looked at again in %.0fs", self.last_error, self.retry_s
            )

    # -- figures ----------------------------------------------------------------------------
    async def pending_count(self) -> int:
        return len(await self.bus.backend.hgetall(PENDING))


def _due(tx: BusTx, times: Mapping[str, float]) -> None:
    """Set leases' next checks, with each one's claim guard."""
    tx.state.zadd(DUE, dict(times))
    for lease, at in times.items():
        tx.state.set(GUARD + lease, repr(float(at)))


def _undue(tx: BusTx, lease: str) -> None:
    tx.state.zrem(DUE, lease)
    tx.state.delete(GUARD + lease)
