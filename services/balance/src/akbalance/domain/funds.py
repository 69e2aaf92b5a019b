"""When to look at a lease's escrow again, and whether to withdraw now. Pure: no I/O.

Akash's rules (``balance_checker.go``), with the fee awareness it lacks:

- a deployment's escrow account holds ``balance`` as of block ``settled_at``; every active
  lease of the deployment (any provider's) draws its price per block from it, so at
  ``height`` what is left is ``balance - (height - settled_at) * Σ rates``;
- nothing left → withdraw now (the chain settles, finds the account overdrawn and closes the
  lease with ``insufficient_funds``; the provider never closes it itself), look again later;
- otherwise look again when the funds would run out or after the monitor interval,
  whichever is first, and withdraw at the periodic withdrawal time;
- a periodic withdrawal that would collect less than ``AP_WITHDRAWAL_MIN_AMOUNT``, or less
  than ``AP_WITHDRAWAL_FEE_MULTIPLE`` times its fee, is skipped (support#180: fees eating
  small providers' earnings) — unless the lease is about to run dry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from aktypes.coin import Coin, Dec

Reason = Literal["out_of_funds", "periodic"]
MIN_PAUSE_S = 1.0  # never look again sooner than this


@dataclass(frozen=True)
class EscrowView:
    """One lease's deployment escrow at ``height``, in the lease's ``denom``."""

    height: int
    settled_at: int
    balance: Dec  # the account's funds as of settled_at
    rate: Dec  # per block: every active lease of the deployment
    lease_rate: Dec  # per block: ours
    unpaid: Dec  # our payment's settled balance, not withdrawn yet
    denom: str

    @property
    def blocks_since(self) -> int:
        return max(self.height - self.settled_at, 0)

    @property
    def remaining(self) -> Dec:
        """What the account still holds at ``height`` once every lease is paid."""
        return self.balance - self.rate * self.blocks_since

    def blocks_left(self) -> int | None:
        """Blocks until the account is empty (None: nothing draws from it)."""
        if not self.rate.is_positive():
            return None
        if not self.remaining.is_positive():
            return 0
        return self.remaining.quo(self.rate).truncate()

    def pending(self) -> Dec:
        """What a withdrawal now would pay us (an estimate): the settled balance plus our
        share of the blocks since; when the account cannot pay every lease, a share of what
        is left in proportion to our rate (the chain pays leases in key order instead)."""
        accrued = self.lease_rate * self.blocks_since
        if self.remaining.is_negative() and self.rate.is_positive():
            accrued = max(self.balance, Dec(0)) * self.lease_rate.quo(self.rate)
        return self.unpaid + accrued


@dataclass(frozen=True)
class Policy:
    monitor_interval: float  # seconds between looks at most
    withdrawal_period: float  # seconds between periodic withdrawals (0: none)
    dry_recheck: float  # seconds after an out-of-funds withdrawal
    min_amount: Mapping[str, Dec]  # per lease denom
    fee: Coin | None  # the fee of one withdrawal
    fee_multiple: Dec  # a periodic withdrawal must collect this many times its fee
    fee_value: Mapping[str, Dec]  # worth of one unit of the fee's denom, per lease denom

    def fee_in(self, denom: str) -> Dec | None:
        """One withdrawal's fee in ``denom`` (None: no fee, or no known worth in it)."""
        if self.fee is None or self.fee.amount == 0:
            return None
        if self.fee.denom == denom:
            return Dec(self.fee.amount)
        worth = self.fee_value.get(denom)
        return None if worth is None else worth * self.fee.amount


@dataclass(frozen=True)
class Decision:
    withdraw: Reason | None
    next_check: float  # when to look again (epoch seconds)
    next_periodic: float  # when the next periodic withdrawal is due (inf: never)
    skipped: str = ""  # why a due periodic withdrawal was not made


def not_worth_it(pending: Dec, denom: str, policy: Policy) -> str:
    """Why a periodic withdrawal of ``pending`` is not worth making ("" when it is)."""
    least = policy.min_amount.get(denom)
    if least is not None and pending < least:
        return (
            f"{pending.normalized()}{denom} is below AP_WITHDRAWAL_MIN_AMOUNT "
            f"{least.normalized()}{denom}"
        )
    fee = policy.fee_in(denom)
    if fee is not None and pending < fee * policy.fee_multiple:
        return (
            f"{pending.normalized()}{denom} is less than {policy.fee_multiple.normalized()}× "
            f"the withdrawal's fee ({fee.normalized()}{denom})"
        )
    return ""


def decide(
    view: EscrowView, *, now: float, next_periodic: float, block_time: float, policy: Policy
) -> Decision:
    """What to do with a lease whose escrow looks like ``view`` at ``now``."""
    left = view.blocks_left()
    if left == 0:
        return Decision(
            withdraw="out_of_funds",
            next_check=now + max(policy.dry_recheck, MIN_PAUSE_S),
            next_periodic=next_periodic,
        )
    until_dry = float("inf") if left is None else left * block_time
    withdraw: Reason | None = None
    skipped = ""
    if now >= next_periodic:
        skipped = not_worth_it(view.pending(), view.denom, policy)
        if skipped and until_dry <= policy.monitor_interval:
            skipped = ""  # about to run dry: collect while there is something to collect
        withdraw = None if skipped else "periodic"
        next_periodic = now + policy.withdrawal_period if policy.withdrawal_period else float("inf")
    pause = min(policy.monitor_interval, until_dry)
    next_check = min(now + max(pause, MIN_PAUSE_S), max(next_periodic, now + MIN_PAUSE_S))
    return Decision(
        withdraw=withdraw, next_check=next_check, next_periodic=next_periodic, skipped=skipped
    )


def spread(leases: Iterable[str], start: float, window: float) -> dict[str, float]:
    """Check times for leases recovered at once: evenly over ``window`` from ``start``, in an
    order set by a hash of each lease (no burst of queries after a restart)."""
    ordered = sorted(leases, key=lambda lease: hashlib.sha256(lease.encode()).digest())
    if not ordered:
        return {}
    step = window / len(ordered)
    return {lease: start + step * (i + 0.5) for i, lease in enumerate(ordered)}


def sweep_amount(balance: int, *, keep: int, reserved: int, fee: int) -> int:
    """What a sweep may send: the balance above ``keep``, the deposits of bids about to be
    placed (``reserved``) and the sweep's own fee (when paid in the same denom)."""
    return max(balance - keep - reserved - fee, 0)
