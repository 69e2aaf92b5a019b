"""Escrow over the real devnet, rule by rule against Akash's ``x/escrow`` keeper (node v2).

Every expected amount below is computed from the rule and the heights the chain reports:
a settlement charges each open payment ``trunc(rate × (height - settled_at))`` and only
happens when a message touches the account; payments are charged in key order, each from
the deposits; a withdrawal pays the provider the payment's whole balance (no take rate);
running dry makes the account and its payments ``overdrawn`` and closes the leases with
``insufficient_funds``. Deployments are funded in ``uact`` and fees are paid in ``uakt``, so
``uact`` balances move only by escrow.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from akchain import msgs
from akchain.errors import TxRejected
from akchain.events import decode_block_results
from akchain.models import EscrowAccount, EscrowPayment
from akdevnet.testing import DevnetClients
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import chain as ev
from aktypes.events.base import LeaseClosedReason
from aktypes.ids import BidID, DeploymentID, LeaseID
from aktypes.sdl import SDL, parse_sdl

BID_DEPOSIT = Coin(denom="uakt", amount=500_000)

# one service placed twice: two groups, so two orders and two leases on one escrow account
TWO_GROUPS = parse_sdl("""
version: "2.0"
services:
  tetris:
    image: bsord/tetris
    expose:
      - port: 80
        as: 80
        to:
          - global: true
profiles:
  compute:
    tetris:
      resources:
        cpu:
          units: 1.0
        memory:
          size: 512Mi
        storage:
          size: 512Mi
  placement:
    east:
      attributes:
        host: akash
      pricing:
        tetris:
          denom: uact
          amount: 10000
    west:
      attributes:
        host: akash
      pricing:
        tetris:
          denom: uact
          amount: 10000
deployment:
  tetris:
    east:
      profile: tetris
      count: 1
    west:
      profile: tetris
      count: 1
""")


async def uact(chain: DevnetClients, address: str) -> int:
    return await chain.lcd.balance(address, "uact")


async def deploy(chain: DevnetClients, sdl: SDL, deposit: int) -> DeploymentID:
    return await chain.tenant().deploy(sdl, deposit=Coin(denom="uact", amount=deposit))


async def bid(
    chain: DevnetClients, who: str, deployment: DeploymentID, price: int | str, gseq: int = 1
) -> BidID:
    wallet = chain.wallet(who)
    ident = BidID(
        owner=deployment.owner, dseq=deployment.dseq, gseq=gseq, oseq=1, provider=wallet.address
    )
    await wallet.send(msgs.create_bid(ident, DecCoin(denom="uact", amount=Dec(price)), BID_DEPOSIT))
    return ident


async def leased(chain: DevnetClients, sdl: SDL, price: int | str, deposit: int) -> BidID:
    deployment = await deploy(chain, sdl, deposit)
    ident = await bid(chain, "provider", deployment, price)
    await chain.tenant().accept_cheapest(deployment.dseq)
    return ident


async def two_leases(
    chain: DevnetClients, first: int, second: int, deposit: int
) -> tuple[BidID, BidID, int]:
    """Group 1 leased to ``provider`` at ``first``, group 2 to ``competitor`` at ``second``,
    both in one transaction; returns the bids and the height the leases started."""
    deployment = await deploy(chain, TWO_GROUPS, deposit)
    one = await bid(chain, "provider", deployment, first, gseq=1)
    two = await bid(chain, "competitor", deployment, second, gseq=2)
    await chain.tenant().accept_cheapest(deployment.dseq)
    started = (await chain.lcd.lease(one.lease_id)).created_at
    assert (await chain.lcd.lease(two.lease_id)).created_at == started
    return one, two, started


async def account(chain: DevnetClients, deployment: DeploymentID) -> EscrowAccount:
    found = (await chain.lcd.deployment(deployment)).escrow_account
    assert found is not None
    return found


async def payment(chain: DevnetClients, lease: LeaseID) -> EscrowPayment:
    found = (await chain.lcd.lease(lease)).payment
    assert found is not None
    return found


def transferred(found: EscrowAccount) -> Dec:
    return sum((c.amount for c in found.transferred if c.denom == "uact"), Dec(0))


async def test_settlement_is_lazy_and_a_withdrawal_pays_the_blocks_since_the_last_settlement(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    bid = await leased(chain, corpus("tetris.yaml"), price=100, deposit=5_000_000)
    deployment = bid.lease_id.deployment_id
    provider = chain.wallet("provider")
    created = (await chain.lcd.lease(bid.lease_id)).created_at

    # blocks pass, nothing touches the account: nothing is charged
    chain.devnet.wait_height(created + 5)
    idle = await account(chain, deployment)
    assert (idle.settled_at, idle.balance("uact"), transferred(idle)) == (created, 5_000_000, 0)

    before = await uact(chain, provider.address)
    first = (await provider.send(msgs.withdraw_lease(bid.lease_id))).height
    earned = 100 * (first - created)
    assert await uact(chain, provider.address) == before + earned
    second = (await provider.send(msgs.withdraw_lease(bid.lease_id))).height
    earned += 100 * (second - first)
    assert await uact(chain, provider.address) == before + earned

    lease = await chain.lcd.lease(bid.lease_id)
    assert lease.state == "active"
    assert lease.payment is not None
    assert (lease.payment.state, int(lease.payment.withdrawn.amount)) == ("open", earned)
    assert lease.payment.balance.amount == Dec(0)
    found = await account(chain, deployment)
    assert found.settled_at == second
    assert found.balance("uact") == Dec(5_000_000 - earned)
    assert transferred(found) == Dec(earned)


async def test_a_fractional_rate_is_charged_in_whole_units_per_settlement(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    rate = Dec("0.999999999999999999")  # a hair under 1 per block: every truncation shows
    bid = await leased(chain, corpus("tetris.yaml"), price=str(rate), deposit=5_000_000)
    provider = chain.wallet("provider")
    created = (await chain.lcd.lease(bid.lease_id)).created_at
    before = await uact(chain, provider.address)

    first = (await provider.send(msgs.withdraw_lease(bid.lease_id))).height
    second = (await provider.send(msgs.withdraw_lease(bid.lease_id))).height

    # each settlement truncates rate × blocks; the dropped fraction is never charged or
    # paid, not even later: here each settlement charges one unit less than its blocks
    charged = (rate * (first - created)).truncate() + (rate * (second - first)).truncate()
    assert charged == (first - created - 1) + (second - first - 1)
    assert await uact(chain, provider.address) == before + charged
    paid = await payment(chain, bid.lease_id)
    assert (int(paid.withdrawn.amount), paid.balance.amount) == (charged, Dec(0))
    found = await account(chain, bid.lease_id.deployment_id)
    assert found.balance("uact") == Dec(5_000_000 - charged)
    assert transferred(found) == Dec(charged)


async def test_a_second_withdrawal_in_the_same_block_fails_as_on_akash(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    """Akash's ``PaymentWithdraw`` panics when the account was already settled in the
    block (akash-network/support#414); the whole transaction is undone."""
    bid = await leased(chain, corpus("tetris.yaml"), price=100, deposit=5_000_000)
    provider = chain.wallet("provider")
    created = (await chain.lcd.lease(bid.lease_id)).created_at
    before = await uact(chain, provider.address)

    with pytest.raises(TxRejected) as twice:
        await provider.send(msgs.withdraw_lease(bid.lease_id), msgs.withdraw_lease(bid.lease_id))
    assert (twice.value.codespace, twice.value.code) == ("undefined", 111222)
    assert "recovered: couldn't find payment" in twice.value.log
    assert await uact(chain, provider.address) == before
    assert int((await payment(chain, bid.lease_id)).withdrawn.amount) == 0
    assert (await account(chain, bid.lease_id.deployment_id)).settled_at == created

    once = (await provider.send(msgs.withdraw_lease(bid.lease_id))).height
    assert await uact(chain, provider.address) == before + 100 * (once - created)


async def test_one_settlement_charges_every_lease_and_closing_pays_them_all_out(
    chain: DevnetClients,
) -> None:
    tenant = chain.wallet("tenant-1")
    provider, competitor = chain.wallet("provider"), chain.wallet("competitor")
    start = await uact(chain, tenant.address)
    one, two, started = await two_leases(chain, first=300, second=200, deposit=5_000_000)
    deployment = one.lease_id.deployment_id
    before_one, before_two = (
        await uact(chain, provider.address),
        await uact(chain, competitor.address),
    )

    # the provider's withdrawal settles both payments, but pays out only its own
    withdrawn = (await provider.send(msgs.withdraw_lease(one.lease_id))).height
    assert await uact(chain, provider.address) == before_one + 300 * (withdrawn - started)
    assert await uact(chain, competitor.address) == before_two
    other = await payment(chain, two.lease_id)
    assert (other.balance.amount, int(other.withdrawn.amount)) == (
        Dec(200 * (withdrawn - started)),
        0,
    )
    found = await account(chain, deployment)
    assert found.settled_at == withdrawn
    assert found.balance("uact") == Dec(5_000_000 - 500 * (withdrawn - started))
    assert transferred(found) == Dec(500 * (withdrawn - started))

    # closing the deployment settles, pays every open payment and refunds the rest
    closed = (await tenant.send(msgs.close_deployment(deployment))).height
    assert await uact(chain, provider.address) == before_one + 300 * (closed - started)
    assert await uact(chain, competitor.address) == before_two + 200 * (closed - started)
    assert await uact(chain, tenant.address) == start - 500 * (closed - started)
    found = await account(chain, deployment)
    assert (found.state, found.settled_at, found.balance("uact")) == ("closed", closed, Dec(0))
    for ident, rate in ((one, 300), (two, 200)):
        lease = await chain.lcd.lease(ident.lease_id)
        assert (lease.state, lease.reason, lease.closed_on) == (
            "closed",
            LeaseClosedReason.OWNER,
            closed,
        )
        assert lease.payment is not None
        assert (lease.payment.state, int(lease.payment.withdrawn.amount)) == (
            "closed",
            rate * (closed - started),
        )

    # a closed payment has nothing more to withdraw
    with pytest.raises(TxRejected) as late:
        await provider.send(msgs.withdraw_lease(one.lease_id))
    assert (late.value.codespace, late.value.code) == ("escrow", 7)
    assert "payment closed" in late.value.log


async def test_closing_a_lease_pays_its_last_blocks_and_ends_its_charges(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    tenant, provider = chain.wallet("tenant-1"), chain.wallet("provider")
    start = await uact(chain, tenant.address)
    bid = await leased(chain, corpus("tetris.yaml"), price=100, deposit=5_000_000)
    deployment = bid.lease_id.deployment_id
    created = (await chain.lcd.lease(bid.lease_id)).created_at
    before = await uact(chain, provider.address)

    ended = (await tenant.send(msgs.close_lease(bid.lease_id))).height
    assert await uact(chain, provider.address) == before + 100 * (ended - created)
    paid = await payment(chain, bid.lease_id)
    assert (paid.state, int(paid.withdrawn.amount)) == ("closed", 100 * (ended - created))
    assert (await chain.lcd.deployment(deployment)).state == "active"

    # later settlements no longer charge the closed payment
    chain.devnet.wait_height(ended + 5)
    closed = (await tenant.send(msgs.close_deployment(deployment))).height
    assert closed > ended
    assert await uact(chain, provider.address) == before + 100 * (ended - created)
    assert await uact(chain, tenant.address) == start - 100 * (ended - created)


async def test_a_lease_created_later_settles_the_leases_already_running(
    chain: DevnetClients,
) -> None:
    """The new lease's settlement credits the running payments (on Akash, node v2 drops
    that credit: see docs/chain.md, "Where the devnet differs from Akash")."""
    provider = chain.wallet("provider")
    deployment = await deploy(chain, TWO_GROUPS, 5_000_000)
    one = await bid(chain, "provider", deployment, 300, gseq=1)
    tenant = chain.wallet("tenant-1")
    first = (await tenant.send(msgs.create_lease(one))).height
    two = await bid(chain, "competitor", deployment, 200, gseq=2)
    second = (await tenant.send(msgs.create_lease(two))).height
    assert second > first

    found = await account(chain, deployment)
    assert found.settled_at == second
    assert found.balance("uact") == Dec(5_000_000 - 300 * (second - first))
    running = await payment(chain, one.lease_id)
    assert running.balance.amount == Dec(300 * (second - first))

    before = await uact(chain, provider.address)
    withdrawn = (await provider.send(msgs.withdraw_lease(one.lease_id))).height
    assert await uact(chain, provider.address) == before + 300 * (withdrawn - first)
    assert (await payment(chain, two.lease_id)).balance.amount == Dec(200 * (withdrawn - second))


async def test_a_deployment_that_runs_dry_has_its_lease_closed_for_insufficient_funds(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    tenant = chain.wallet("tenant-1")
    start = await uact(chain, tenant.address)
    bid = await leased(
        chain, corpus("tetris.yaml"), price=10_000, deposit=500_000
    )  # 50 blocks of funds
    created = (await chain.lcd.lease(bid.lease_id)).created_at
    chain.devnet.wait_height(created + 60)
    provider = chain.wallet("provider")
    before = await uact(chain, provider.address)

    committed = await provider.send(msgs.withdraw_lease(bid.lease_id))

    kinds = [
        type(e).__name__
        for e in decode_block_results(await chain.rpc.block_results(committed.height))
    ]
    assert kinds == ["DeploymentClosed", "GroupClosed", "OrderClosed", "BidClosed", "LeaseClosed"]
    [closed] = [
        e
        for e in decode_block_results(await chain.rpc.block_results(committed.height))
        if isinstance(e, ev.LeaseClosed)
    ]
    assert closed.lease_id == bid.lease_id
    assert closed.reason == LeaseClosedReason.INSUFFICIENT_FUNDS
    assert LeaseClosedReason.INSUFFICIENT_FUNDS.code == 20000
    lease = await chain.lcd.lease(bid.lease_id)
    assert (lease.state, lease.closed_on) == ("insufficient_funds", committed.height)
    assert lease.reason == LeaseClosedReason.INSUFFICIENT_FUNDS
    assert lease.payment is not None and lease.payment.state == "overdrawn"
    assert (await chain.lcd.deployment(bid.lease_id.deployment_id)).state == "closed"
    assert (await chain.lcd.group(bid.lease_id.group_id)).state == "insufficient_funds"
    # everything in escrow went to the provider; what the tenant still owes is recorded
    owed = 10_000 * (committed.height - created)
    assert await uact(chain, provider.address) == before + 500_000
    assert int(lease.payment.withdrawn.amount) == 500_000
    assert lease.payment.unsettled.amount == Dec(owed - 500_000)
    found = await account(chain, bid.lease_id.deployment_id)
    assert (found.state, found.settled_at) == ("overdrawn", committed.height)
    assert found.balance("uact") == Dec(500_000 - owed)  # negative: the debt
    assert transferred(found) == Dec(500_000)
    assert await uact(chain, tenant.address) == start - 500_000  # nothing refunded

    # an overdrawn payment is no longer open: a withdrawal is refused
    with pytest.raises(TxRejected) as again:
        await provider.send(msgs.withdraw_lease(bid.lease_id))
    assert (again.value.codespace, again.value.code) == ("escrow", 7)
    assert "payment closed" in again.value.log


async def test_an_overdrawn_account_pays_its_leases_in_key_order_not_pro_rata(
    chain: DevnetClients,
) -> None:
    provider, competitor = chain.wallet("provider"), chain.wallet("competitor")
    one, two, started = await two_leases(chain, first=100, second=10_000, deposit=500_000)
    chain.devnet.wait_height(started + 60)  # 60 × 10 100 > 500 000: dry
    before_one, before_two = (
        await uact(chain, provider.address),
        await uact(chain, competitor.address),
    )

    dry = (await competitor.send(msgs.withdraw_lease(two.lease_id))).height

    # payment 1/1/… is charged first and takes all it is owed; 2/1/… gets what is left
    owed_one, owed_two = 100 * (dry - started), 10_000 * (dry - started)
    got_one = min(owed_one, 500_000)
    got_two = min(owed_two, 500_000 - got_one)
    # pro rata, payment 1 would have had only 100/10 100 of the deposit, less than it is owed
    assert got_one == owed_one > 500_000 * 100 // 10_100
    assert await uact(chain, provider.address) == before_one + got_one
    assert await uact(chain, competitor.address) == before_two + got_two
    # both payments become overdrawn and both leases close, even the one paid in full
    for ident, owed, got in ((one, owed_one, got_one), (two, owed_two, got_two)):
        lease = await chain.lcd.lease(ident.lease_id)
        assert (lease.state, lease.reason, lease.closed_on) == (
            "insufficient_funds",
            LeaseClosedReason.INSUFFICIENT_FUNDS,
            dry,
        )
        assert lease.payment is not None
        assert lease.payment.state == "overdrawn"
        assert int(lease.payment.withdrawn.amount) == got
        assert lease.payment.unsettled.amount == Dec(owed - got)
    found = await account(chain, one.lease_id.deployment_id)
    assert found.state == "overdrawn"
    assert found.balance("uact") == Dec(500_000 - owed_one - owed_two)
    assert transferred(found) == Dec(got_one + got_two) == Dec(500_000)


async def test_a_lease_cannot_be_created_on_an_account_that_has_run_dry(
    chain: DevnetClients,
) -> None:
    deployment = await deploy(chain, TWO_GROUPS, 500_000)
    one = await bid(chain, "provider", deployment, 10_000, gseq=1)
    tenant = chain.wallet("tenant-1")
    started = (await tenant.send(msgs.create_lease(one))).height
    chain.devnet.wait_height(started + 60)
    two = await bid(chain, "competitor", deployment, 100, gseq=2)

    with pytest.raises(TxRejected) as dry:
        await tenant.send(msgs.create_lease(two))
    assert (dry.value.codespace, dry.value.code) == ("escrow", 4)
    assert "account overdrawn" in dry.value.log

    # the failed transaction changed nothing: the settlement it ran is undone
    found = await account(chain, deployment)
    assert (found.state, found.settled_at, found.balance("uact")) == ("open", started, 500_000)
    assert (await chain.lcd.lease(one.lease_id)).state == "active"
    assert (await chain.lcd.bid(two)).state == "open"
    assert (await chain.lcd.deployment(deployment)).state == "active"
