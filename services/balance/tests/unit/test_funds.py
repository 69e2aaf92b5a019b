"""When to look again and whether to withdraw: Akash's rules, plus the fee awareness."""

from __future__ import annotations

import itertools
import math

from akbalance.domain.funds import EscrowView, Policy, decide, spread, sweep_amount
from aktypes.coin import Coin, Dec

POLICY = Policy(
    monitor_interval=600.0,
    withdrawal_period=3600.0,
    dry_recheck=600.0,
    min_amount={"uact": Dec(1000)},
    fee=Coin(denom="uakt", amount=7500),
    fee_multiple=Dec(2),
    fee_value={"uact": Dec("0.1")},  # one uakt is worth 0.1 uact
)


def view(
    *, balance: int, rate: str = "10", ours: str = "10", blocks: int = 0, unpaid: int = 0
) -> EscrowView:
    return EscrowView(
        height=1000 + blocks,
        settled_at=1000,
        balance=Dec(balance),
        rate=Dec(rate),
        lease_rate=Dec(ours),
        unpaid=Dec(unpaid),
        denom="uact",
    )


def test_remaining_funds_and_blocks_left_follow_the_block_rate() -> None:
    shared = view(balance=10_000, rate="25", ours="10", blocks=100)  # two leases: 10 + 15
    assert shared.remaining == Dec(10_000 - 25 * 100)
    assert shared.blocks_left() == (10_000 - 2500) // 25
    assert shared.pending() == Dec(10 * 100)
    overdrawn = view(balance=1000, rate="20", ours="5", blocks=100)
    assert overdrawn.blocks_left() == 0
    assert overdrawn.pending() == Dec(1000) * Dec(5).quo(Dec(20))  # our share of what is left


def test_a_dry_lease_is_withdrawn_now_and_looked_at_again_later() -> None:
    decision = decide(
        view(balance=500, blocks=50), now=0, next_periodic=3600, block_time=6, policy=POLICY
    )
    assert (decision.withdraw, decision.next_check) == ("out_of_funds", 600)


def test_the_next_check_is_when_funds_run_out_or_the_interval_whichever_is_first() -> None:
    soon = decide(
        view(balance=1000, blocks=0), now=0, next_periodic=3600, block_time=6, policy=POLICY
    )
    assert (soon.withdraw, soon.next_check) == (None, 100 * 6)  # 100 blocks left
    later = decide(view(balance=10**9), now=0, next_periodic=3600, block_time=6, policy=POLICY)
    assert later.next_check == 600  # the monitor interval
    idle = decide(
        view(balance=10**9, rate="0", ours="0"),
        now=0,
        next_periodic=300,
        block_time=6,
        policy=POLICY,
    )
    assert idle.next_check == 300  # the periodic withdrawal comes first


def test_a_periodic_withdrawal_is_made_when_worth_its_fee_and_the_minimum() -> None:
    decision = decide(
        view(balance=10**9, blocks=500), now=3600, next_periodic=3600, block_time=6, policy=POLICY
    )
    assert decision.withdraw == "periodic" and decision.skipped == ""
    assert decision.next_periodic == 7200


def test_a_small_periodic_withdrawal_is_skipped_with_the_reason() -> None:
    below_minimum = decide(
        view(balance=10**9, blocks=50), now=3600, next_periodic=3600, block_time=6, policy=POLICY
    )
    assert below_minimum.withdraw is None
    assert "below AP_WITHDRAWAL_MIN_AMOUNT 1000uact" in below_minimum.skipped
    assert below_minimum.next_periodic == 7200  # tried again next period
    # 1,400uact collected; the fee is 7,500uakt = 750uact, and 2 × 750 = 1,500 > 1,400
    not_worth_the_fee = decide(
        view(balance=10**9, blocks=140), now=3600, next_periodic=3600, block_time=6, policy=POLICY
    )
    assert not_worth_the_fee.withdraw is None
    assert "less than 2× the withdrawal's fee (750uact)" in not_worth_the_fee.skipped


def test_a_small_withdrawal_is_made_anyway_when_the_lease_is_about_to_run_dry() -> None:
    # 50 blocks of 10uact collected (below the minimum), 20 blocks × 6 s left: dry before the next look
    decision = decide(
        view(balance=700, blocks=50), now=3600, next_periodic=3600, block_time=6, policy=POLICY
    )
    assert (decision.withdraw, decision.skipped) == ("periodic", "")


def test_without_a_period_only_dry_leases_are_withdrawn() -> None:
    policy = Policy(**{**POLICY.__dict__, "withdrawal_period": 0.0})
    decision = decide(
        view(balance=10**9, blocks=10**5),
        now=0,
        next_periodic=math.inf,
        block_time=6,
        policy=policy,
    )
    assert decision.withdraw is None and decision.next_periodic == math.inf


def test_recovered_leases_are_spread_evenly_over_the_window() -> None:
    leases = [f"lease-{n}" for n in range(1000)]
    times = spread(leases, start=100.0, window=60.0)
    assert sorted(times) == sorted(leases)
    ordered = sorted(times.values())
    assert ordered[0] > 100.0 and ordered[-1] < 160.0
    gaps = [b - a for a, b in itertools.pairwise(ordered)]
    assert max(gaps) - min(gaps) < 1e-9  # evenly: 0.06 s apart
    assert spread(leases, 100.0, 60.0) == times  # the same for the same leases


def test_a_sweep_keeps_the_floor_open_bids_and_its_fee() -> None:
    assert sweep_amount(10_000_000, keep=5_000_000, reserved=1_000_000, fee=7_500) == 3_992_500
    assert sweep_amount(5_500_000, keep=5_000_000, reserved=1_000_000, fee=0) == 0
