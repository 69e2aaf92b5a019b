"""Escrow over the real devnet: lazy per-block payment, withdrawal, running out of funds."""

from __future__ import annotations

from collections.abc import Callable

from akchain import msgs
from akchain.events import decode_block_results
from akdevnet.testing import DevnetClients
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import chain as ev
from aktypes.events.base import LeaseClosedReason
from aktypes.ids import BidID
from aktypes.sdl import SDL


async def leased(chain: DevnetClients, sdl: SDL, price: int, deposit: int) -> BidID:
    tenant = chain.tenant()
    deployment = await tenant.deploy(sdl, deposit=Coin(denom="uact", amount=deposit))
    provider = chain.wallet("provider")
    bid = BidID(
        owner=deployment.owner, dseq=deployment.dseq, gseq=1, oseq=1, provider=provider.address
    )
    await provider.send(
        msgs.create_bid(
            bid, DecCoin(denom="uact", amount=Dec(price)), Coin(denom="uakt", amount=500_000)
        )
    )
    await tenant.accept_cheapest(deployment.dseq)
    return bid


async def test_withdrawal_pays_the_provider_for_the_blocks_since_the_last_settlement(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    bid = await leased(chain, corpus("tetris.yaml"), price=100, deposit=5_000_000)
    provider = chain.wallet("provider")
    created = (await chain.lcd.lease(bid.lease_id)).created_at
    before = await chain.lcd.balance(provider.address, "uact")
    committed = await provider.send(msgs.withdraw_lease(bid.lease_id))
    earned = 100 * (committed.height - created)
    assert await chain.lcd.balance(provider.address, "uact") == before + earned
    lease = await chain.lcd.lease(bid.lease_id)
    assert lease.state == "active"
    assert lease.payment is not None and int(lease.payment.withdrawn.amount) == earned
    deployment = await chain.lcd.deployment(bid.lease_id.deployment_id)
    assert deployment.escrow_account is not None
    assert deployment.escrow_account.balance("uact") == Dec(5_000_000 - earned)
    assert deployment.escrow_account.settled_at == committed.height


async def test_a_deployment_that_runs_dry_has_its_lease_closed_for_insufficient_funds(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    bid = await leased(
        chain, corpus("tetris.yaml"), price=10_000, deposit=500_000
    )  # 50 blocks of funds
    created = (await chain.lcd.lease(bid.lease_id)).created_at
    chain.devnet.wait_height(created + 60)
    provider = chain.wallet("provider")
    before = await chain.lcd.balance(provider.address, "uact")

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
    lease = await chain.lcd.lease(bid.lease_id)
    assert (lease.state, lease.closed_on) == ("insufficient_funds", committed.height)
    assert lease.payment is not None and lease.payment.state == "overdrawn"
    assert (await chain.lcd.deployment(bid.lease_id.deployment_id)).state == "closed"
    assert (await chain.lcd.group(bid.lease_id.group_id)).state == "insufficient_funds"
    # everything in escrow went to the provider; what the tenant still owes is recorded
    assert await chain.lcd.balance(provider.address, "uact") == before + 500_000
    owed = 10_000 * (committed.height - created) - 500_000
    assert lease.payment.unsettled.amount == Dec(owed)
