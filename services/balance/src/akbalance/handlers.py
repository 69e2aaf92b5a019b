"""The balance service's handlers: the watched leases, their checks, withdrawals and results.

Which leases to watch comes from the cluster (``LeaseFundsMonitor``); each has a record in
Redis and a next check on a schedule (the keys: :mod:`akbalance.domain.records`), kept as
:class:`akbus.Records`: every change of a lease is a transition of its record, written with
its place on the schedule in one write guarded by the record. A check first claims its lease
(its next check moved ``CLAIM_S`` on), so replicas never check one lease at once. The
withdrawal a check decides (:mod:`akbalance.domain.funds`) is one write, guarded by the
records of every lease in it: the ``BroadcastTx`` for the chain relay (which broadcasts each
key at most once), the ``WithdrawalRequested`` events, the pending record and the leases'
next checks. A lease whose withdrawal is in flight is not due until its result comes
(``TxCommitted``/``TxFailed`` on ``akash.provider.chain.results``, read through a consumer
group: a restart picks them up), or until ``PENDING_TIMEOUT_S``; a committed one's payment is
counted in the earnings (:mod:`akbalance.earnings`); a sweep's result goes to
:mod:`akbalance.sweeps`.
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
    LEASES,
    OLD_GUARD,
    PENDING,
    PENDING_TIMEOUT_S,
    SWEEP_PREFIX,
    WITHDRAW_PREFIX,
    Watched,
    deployment_of,
)
from akbalance.earnings import Earnings
from akbalance.errors import ChainUnavailable, NodeCatchingUp
from akbalance.sweeps import Sweeps
from akbus import Bus, BusTx, Change, Message, Records, Snapshot
from aktypes.coin import Dec, DecCoin
from aktypes.events import (
    BroadcastTx,
    LeaseFundsMonitor,
    LeaseOutOfFunds,
    Payload,
    TxCommitted,
    TxFailed,
    WithdrawalRequested,
    WithdrawLease,
)
from aktypes.events.streams import BALANCE_EVENTS, CHAIN_TX
from aktypes.ids import LeaseID

log = logging.getLogger("akbalance")


@dataclass(frozen=True)
class Withdrawal:
    """A withdrawal a check decided: the lease, its record as the check claimed it, what the
    check changes in it, the decision, and what is left in its escrow."""

    lease: str
    claimed: Watched
    looked: dict[str, Any]
    decision: Decision
    remaining: Dec
    denom: str


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
    leases: Records[Watched] = field(init=False)
    earnings: Earnings = field(init=False)
    sweeps: Sweeps = field(init=False)

    def __post_init__(self) -> None:
        self.leases = Records(
            self.bus,
            Watched,
            "",
            in_hash=LEASES,
            schedule=DUE,
            load=Watched.parse,
            dump=str,
            durable=True,  # a withdrawal's mark lost in a failover would withdraw again
        )
        self.earnings = Earnings(self.bus)
        self.sweeps = Sweeps(self.bus, self.chain, self.provider, self._failed, self.now)

    def _failed(self, error: str) -> None:
        self.last_error = error

    # -- which leases ---------------------------------------------------------------------
    async def on_funds_monitor(self, msg: Message[LeaseFundsMonitor]) -> None:
        lease = str(msg.payload.lease_id)
        if msg.payload.action == "remove":
            await self.leases.update(lease, _forget, cause=msg.envelope)
            log.info("lease %s no longer monitored", lease)
            return
        now = self.now()
        first = now
        if not msg.payload.is_new_lease:  # recovered by the cluster: no burst of checks
            first = spread([lease], now, self.recovery_window_s)[lease]
        period = self.policy.withdrawal_period
        record = Watched(added=now, next_periodic=now + period if period else math.inf)

        def watch(before: Watched | None) -> Change[Watched] | None:
            return None if before is not None else _next_check(record, first)  # once

        _, added = await self.leases.update(lease, watch, cause=msg.envelope)
        if added is not None:
            log.info("lease %s monitored, first check in %.0fs", lease, first - now)

    async def recover(self) -> int:
        """Spread the checks that came due while the service was down over the recovery
        window; how many there were. (The claim guards an earlier version kept beside the
        schedule are removed: a claim is now guarded by the lease's record.)"""
        old_guards = [OLD_GUARD + lease for lease in await self.leases.members()]
        if old_guards:
            await self.bus.backend.delete(*old_guards)
        now = self.now()
        overdue = [lease for lease, _ in await self.leases.due(now)]
        times = spread(overdue, now, self.recovery_window_s)
        for lease, at in times.items():

            def later(before: Watched | None, at: float = at) -> Change[Watched] | None:
                if before is None or not before.due_by(now):  # gone, or taken meanwhile
                    return None
                return _next_check(before, at)

            await self.leases.update(lease, later)
        if times:
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
        records = await self.leases.all()
        owed: dict[str, int] = {}
        for record in records.values():
            if record.unpaid is not None:
                denom, amount = record.unpaid
                owed[denom] = owed.get(denom, 0) + amount
        return len(records), owed

    # -- checks -----------------------------------------------------------------------------
    async def check_due(self) -> int:
        """Look at every lease whose check is due; how many."""
        now = self.now()
        claimed: dict[str, Watched] = {}
        for lease, _ in await self.leases.due(now):
            record = await self._claim(lease, now)
            if record is not None:
                claimed[lease] = record
        if not claimed:
            return 0
        try:
            tip = await self.chain.tip()
        except (ChainUnavailable, NodeCatchingUp) as exc:
            await self._later(claimed, now + self.retry_s, str(exc))
            return len(claimed)
        self.clock.saw(tip)
        withdrawals: list[Withdrawal] = []
        settling = await self._settling()
        for lease, record in claimed.items():
            deployment = deployment_of(lease)
            if deployment in settling:  # another lease of it is being withdrawn: next block
                await self._later({lease: record}, now + max(2 * self.clock.block_time, 1.0), "")
                continue
            metrics.CHECKS.inc()
            try:
                view = await self.chain.escrow(LeaseID.parse(lease), tip.height)
            except ChainUnavailable as exc:
                await self._later({lease: record}, now + self.retry_s, str(exc))
                continue
            if view is None:
                log.info("lease %s is not active any more: no longer monitored", lease)
                await self.leases.update(lease, _forget)
                continue
            decision = decide(
                view,
                now=now,
                next_periodic=record.next_periodic,
                block_time=self.clock.block_time,
                policy=self.policy,
            )
            looked = {
                "next_periodic": decision.next_periodic,
                "checked": now,
                "unpaid": (view.denom, view.pending().truncate()),  # as of this check
            }
            if decision.skipped:
                metrics.SKIPPED.inc()
                log.info("periodic withdrawal from %s skipped: %s", lease, decision.skipped)
            if decision.withdraw is None:
                await self._later({lease: record}, decision.next_check, "", looked)
            else:
                withdrawals.append(
                    Withdrawal(lease, record, looked, decision, view.remaining, view.denom)
                )
                settling.add(deployment)
        for start in range(0, len(withdrawals), self.batch):
            await self._withdraw(withdrawals[start : start + self.batch], tip.height)
        return len(claimed)

    async def _claim(self, lease: str, now: float) -> Watched | None:
        """Take a due lease for this check (its record as claimed), unless another check took
        it since the schedule was read: the claim moves its next check ``CLAIM_S`` on (so a
        replica that dies mid-check leaves it to the others after that), in a write guarded
        by the record. A lease on the schedule without a record is taken off it."""

        def take(before: Watched | None) -> Change[Watched] | None:
            if before is None:
                return Change(delete=True)  # not watched: off the schedule
            if not before.due_by(now):
                return None
            return _next_check(before, now + CLAIM_S)

        _, claimed = await self.leases.update(lease, take)
        return claimed

    async def _later(
        self,
        claimed: Mapping[str, Watched],
        at: float,
        error: str,
        looked: Mapping[str, Any] | None = None,
    ) -> None:
        """The next check of leases this check claimed (``looked``: what it saw of them), if
        the claim still holds (the lease still watched, taken by no other check since)."""
        if error:
            self.last_error = error
            log.warning("lease checks postponed: %s", error)
        for lease, claim in claimed.items():

            def looked_at(before: Watched | None, claim: Watched = claim) -> Change[Watched] | None:
                if before is None or before.due != claim.due:
                    return None
                return _next_check(before, at, **(looked or {}))

            await self.leases.update(lease, looked_at)

    async def _withdraw(self, batch: Sequence[Withdrawal], height: int) -> None:
        """One transaction withdrawing from the leases of ``batch`` still claimed by this
        check, written with their records (guarded by them all), the events and the pending
        record; read again and written again without a lease taken from it meanwhile."""
        key = f"{WITHDRAW_PREFIX}{uuid.uuid4().hex}"
        now = self.now()
        while True:
            kept: list[tuple[Snapshot[Watched], Watched, Withdrawal]] = []
            for w in batch:
                snapshot = await self.leases.read(w.lease)
                if snapshot.record is not None and snapshot.record.due == w.claimed.due:
                    kept.append((snapshot, snapshot.record, w))
            if not kept:
                return
            changes = [(snap, _withdrawing(record, w, now, height)) for snap, record, w in kept]
            chosen = [w for *_, w in kept]
            pending = {
                "leases": [w.lease for w in chosen],
                "next": {w.lease: w.decision.next_check for w in chosen},
                "reasons": {w.lease: w.decision.withdraw for w in chosen},
                "at": now,
            }
            command = BroadcastTx(
                key=key, msgs=[WithdrawLease(lease_id=LeaseID.parse(w.lease)) for w in chosen]
            )

            def writes(
                tx: BusTx, pending: dict[str, Any] = pending, command: BroadcastTx = command
            ) -> None:
                tx.state.hset(PENDING, {key: json.dumps(pending)})
                tx.publish(CHAIN_TX, command)

            if await self.leases.commit_many(changes, writes=writes):
                break
        metrics.WITHDRAWALS.labels("requested").inc(len(chosen))
        log.info(
            "withdrawing from %d lease(s) in %s: %s",
            len(chosen),
            key,
            ", ".join(f"{w.lease} ({w.decision.withdraw})" for w in chosen),
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
        for lease in leases:  # each lease's next check; then the pending record goes
            at = float(pending["next"][lease]) if committed else now + self.retry_s

            def settled(before: Watched | None, at: float = at) -> Change[Watched] | None:
                if before is None:  # no longer watched
                    return None
                # collected: nothing unpaid as of now
                return _next_check(before, at, **({"unpaid": None} if committed else {}))

            await self.leases.update(lease, settled, cause=msg.envelope)

        async def done(tx: BusTx) -> None:
            tx.state.hdel(PENDING, key)

        await msg.apply_once(done)
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


def _next_check(record: Watched, at: float, **update: Any) -> Change[Watched]:
    """``record`` (with ``update``) and its next check at ``at``, in it and on the schedule."""
    return Change(record.model_copy(update={**update, "due": at}), due=at)


def _forget(_: Watched | None) -> Change[Watched]:
    """No longer watched: the record and its next check go."""
    return Change(delete=True)


def _withdrawing(record: Watched, w: Withdrawal, now: float, height: int) -> Change[Watched]:
    """A lease's part of a withdrawal: its record as the check saw it, not due again until
    the result comes (or ``PENDING_TIMEOUT_S``), and its events."""
    lease_id = LeaseID.parse(w.lease)
    reason = w.decision.withdraw or "periodic"
    events: list[tuple[str, Payload]] = [
        (BALANCE_EVENTS, WithdrawalRequested(lease_id=lease_id, reason=reason))
    ]
    if w.decision.withdraw == "out_of_funds":
        balance = DecCoin(denom=w.denom, amount=w.remaining)
        events.append(
            (BALANCE_EVENTS, LeaseOutOfFunds(lease_id=lease_id, balance=balance, height=height))
        )
    change = _next_check(record, now + PENDING_TIMEOUT_S, **w.looked)
    return Change(change.record, publish=events, due=change.due)
