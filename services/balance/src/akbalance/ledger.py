"""The monitored leases, their schedule and the withdrawals, kept in Redis.

Keys (all ``akbalance:*``):

- ``leases``    hash  lease → ``{"next_periodic": t, "added": t, "unpaid": [denom, n]}``
- ``due``       zset  lease → when to look at its escrow next
- ``due:<lease>``     that time as written: a check claims the lease only while it is unchanged
  (two replicas never check one lease at once)
- ``pending``   hash  transaction key → what it carries (leases, reason, next checks)
- ``withdrawn:<lease>``  ``denom:amount``, the chain's total paid to us, as last counted
- ``earned``    hash  denom → the sum of what our withdrawals collected
- ``sweeps``    hash  denom → the sum swept to the cold address

A check and the withdrawal it decides are one Redis transaction: the ``BroadcastTx`` for the
chain relay (which broadcasts each key at most once), the ``WithdrawalRequested`` events, the
pending record and the lease's next check. A lease whose withdrawal is in flight is not due
until its result comes (``TxCommitted``/``TxFailed`` on ``akash.provider.chain.results``, read
through a consumer group: a restart picks them up), or until ``PENDING_TIMEOUT_S``.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from akbalance import metrics
from akbalance.adapters.chain import BlockClock, Chain
from akbalance.domain.funds import Decision, Policy, decide, spread, sweep_amount
from akbalance.errors import ChainUnavailable, NodeCatchingUp
from akbus import Bus, BusTx, Message
from aktypes.coin import Coin, Dec, DecCoin
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
)
from aktypes.events.streams import BALANCE_EVENTS, CHAIN_TX
from aktypes.ids import LeaseID

log = logging.getLogger("akbalance")

PREFIX = "akbalance:"
LEASES = PREFIX + "leases"
DUE = PREFIX + "due"
PENDING = PREFIX + "pending"
WITHDRAWN = PREFIX + "withdrawn"
EARNED = PREFIX + "earned"
SWEPT = PREFIX + "sweeps"
GUARD = PREFIX + "due:"  # + lease: its due time as written, the claim guard
PENDING_TIMEOUT_S = 900.0
CLAIM_S = 120.0  # a claimed lease is due again after this, should its checker die
WITHDRAW_PREFIX, SWEEP_PREFIX = "withdraw/", "sweep/"


@dataclass
class Ledger:
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
            deployment = _deployment(lease)
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
                found |= {_deployment(lease) for lease in json.loads(raw)["leases"]}
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
            await self._sweep_result(msg, key, pending, failure)
            return
        leases: list[str] = pending["leases"]
        gained: dict[str, int] = {}
        if committed:
            for lease in leases:
                paid = await self.chain.withdrawn(LeaseID.parse(lease))
                if paid is not None:
                    gained[lease] = await self._count(lease, *paid)
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

    async def _count(self, lease: str, denom: str, total: int) -> int:
        """Count what the chain has paid for ``lease`` beyond what was counted (``total``:
        the payment's withdrawn sum); what that added. Guarded, so results handled at once
        or again never count a unit twice."""
        key = WITHDRAWN + ":" + lease
        while True:
            seen = await self.bus.backend.get(key)
            before = _amount(seen, denom)
            if total <= before:
                return 0

            async def write(tx: BusTx, before: int = before) -> None:
                tx.state.set(key, f"{denom}:{total}")
                tx.state.hincrby(EARNED, denom, total - before)

            if await self.bus.apply_if(key, seen, write):
                return total - before

    # -- sweep ------------------------------------------------------------------------------
    async def sweep(
        self, to_address: str, keep: dict[str, Dec], reserved: dict[str, int], fee: Coin | None
    ) -> list[Coin]:
        """Send what is above ``keep`` (and ``reserved``) to ``to_address``; what was sent.
        One sweep at a time: none while the last one has no result."""
        if any(k.startswith(SWEEP_PREFIX) for k in await self.bus.backend.hgetall(PENDING)):
            return []
        balances = await self.chain.balances(self.provider)
        coins = []
        for denom, floor in sorted(keep.items()):
            amount = sweep_amount(
                balances.get(denom, 0),
                keep=floor.ceil(),
                reserved=reserved.get(denom, 0),
                fee=fee.amount if fee is not None and fee.denom == denom else 0,
            )
            if amount > 0:
                coins.append(Coin(denom=denom, amount=amount))
        if not coins:
            return []
        key = f"{SWEEP_PREFIX}{uuid.uuid4().hex}"
        pending = {"coins": [str(c) for c in coins], "to": to_address, "at": self.now()}

        async def write(tx: BusTx) -> None:
            tx.state.hset(PENDING, {key: json.dumps(pending)})
            tx.publish(
                CHAIN_TX, BroadcastTx(key=key, msgs=[Send(to_address=to_address, amount=coins)])
            )
            for coin in coins:
                tx.publish(BALANCE_EVENTS, SweepRequested(to_address=to_address, amount=coin))

        await self.bus.transact(write)
        log.info("sweeping %s to %s (%s)", ", ".join(map(str, coins)), to_address, key)
        return coins

    async def _sweep_result(
        self, msg: Message[Any], key: str, pending: dict[str, Any], failure: str | None
    ) -> None:
        committed = failure is None

        async def write(tx: BusTx) -> None:
            tx.state.hdel(PENDING, key)
            if committed:
                for text in pending["coins"]:
                    coin = Coin.parse(text)
                    tx.state.hincrby(SWEPT, coin.denom, coin.amount)

        await msg.apply_once(write)
        if committed:
            log.info(
                "sweep %s committed: %s to %s", key, ", ".join(pending["coins"]), pending["to"]
            )
        else:
            self.last_error = f"sweep {key} failed: {failure}"
            log.warning(self.last_error)

    # -- figures ----------------------------------------------------------------------------
    async def earned(self) -> dict[str, int]:
        return {d: int(v) for d, v in (await self.bus.backend.hgetall(EARNED)).items()}

    async def swept(self) -> dict[str, int]:
        return {d: int(v) for d, v in (await self.bus.backend.hgetall(SWEPT)).items()}

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


def _deployment(lease: str) -> str:
    """``owner/dseq`` of a lease id."""
    owner, dseq, *_ = lease.split("/")
    return f"{owner}/{dseq}"


def _amount(text: str | None, denom: str) -> int:
    if not text:
        return 0
    found, _, amount = text.partition(":")
    return int(amount) if found == denom else 0
