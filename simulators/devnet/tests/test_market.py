"""The market over the real devnet process: deployment → order → bid → lease → close."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from akchain import msgs
from akchain.errors import TxRejected
from akchain.events import decode_block_results
from akdevnet.testing import DevnetClients
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import chain as ev
from aktypes.events.base import LeaseClosedReason
from aktypes.ids import BidID, DeploymentID
from aktypes.sdl import SDL

BID_DEPOSIT = Coin(denom="uakt", amount=500_000)


async def events_of(chain: DevnetClients, height: int) -> list[ev.ChainEvent]:
    return decode_block_results(await chain.rpc.block_results(height))


async def deploy(chain: DevnetClients, sdl: SDL, deposit: int = 5_000_000) -> DeploymentID:
    return await chain.tenant().deploy(sdl, deposit=Coin(denom="uact", amount=deposit))


def bid_id(deployment: DeploymentID, provider: str, gseq: int = 1) -> BidID:
    return BidID(owner=deployment.owner, dseq=deployment.dseq, gseq=gseq, oseq=1, provider=provider)


async def test_a_deployment_opens_one_order_per_group(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    sdl = corpus("tetris.yaml")
    tenant = chain.tenant()
    deployment = await tenant.deploy(sdl)

    found = await chain.lcd.deployment(deployment)
    assert found.state == "active"
    assert found.hash == sdl.manifest_version.hex()
    assert [g.spec.name for g in found.groups] == [g.name for g in sdl.groups]
    assert found.escrow_account is not None
    assert found.escrow_account.balance("uact") == Dec(5_000_000)

    orders = await chain.lcd.orders(owner=tenant.address, dseq=deployment.dseq)
    assert [(o.id.gseq, o.id.oseq, o.state) for o in orders] == [(1, 1, "open")]
    assert orders[0].spec.price().amount == Dec(10_000)


async def test_bid_lease_and_close_emit_akash_events_in_order(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    provider = chain.wallet("provider")
    deployment = await deploy(chain, corpus("tetris.yaml"))

    bid = bid_id(deployment, provider.address)
    committed = await provider.send(
        msgs.create_bid(bid, DecCoin(denom="uact", amount=Dec("4000.5")), BID_DEPOSIT)
    )
    [bid_created] = [
        e for e in await events_of(chain, committed.height) if isinstance(e, ev.BidCreated)
    ]
    assert bid_created.bid_id == bid
    assert bid_created.price == DecCoin(denom="uact", amount=Dec("4000.5"))

    before = await chain.lcd.balance(provider.address, "uakt")
    leases = await chain.tenant().accept_cheapest(deployment.dseq)
    assert leases == [bid.lease_id]
    lease = await chain.lcd.lease(bid.lease_id)
    assert lease.state == "active"
    assert lease.payment is not None and lease.payment.rate.amount == Dec("4000.5")
    assert (await chain.lcd.order(bid.order_id)).state == "active"
    assert (await chain.lcd.bid(bid)).state == "active"

    await chain.tenant().close(deployment.dseq)
    lease = await chain.lcd.lease(bid.lease_id)
    assert lease.state == "closed"
    assert lease.reason == LeaseClosedReason.OWNER
    assert (await chain.lcd.deployment(deployment)).state == "closed"
    # the bid deposit came back, and the provider was paid for the blocks the lease ran
    assert await chain.lcd.balance(provider.address, "uakt") >= before + BID_DEPOSIT.amount - 10_000
    assert lease.payment is not None
    assert int(lease.payment.withdrawn.amount) > 0


async def test_bid_rules(chain: DevnetClients, corpus: Callable[[str], SDL]) -> None:
    provider = chain.wallet("provider")
    deployment = await deploy(chain, corpus("tetris.yaml"))
    bid = bid_id(deployment, provider.address)

    with pytest.raises(TxRejected) as too_high:
        await provider.send(
            msgs.create_bid(bid, DecCoin(denom="uact", amount=Dec(10_001)), BID_DEPOSIT)
        )
    assert (too_high.value.codespace, too_high.value.code) == ("market", 22)

    with pytest.raises(TxRejected) as small_deposit:
        await provider.send(
            msgs.create_bid(bid, DecCoin(denom="uact", amount=Dec(1)), Coin(denom="uakt", amount=1))
        )
    assert "deposit invalid: minimum" in small_deposit.value.log

    await provider.send(msgs.create_bid(bid, DecCoin(denom="uact", amount=Dec(1)), BID_DEPOSIT))
    with pytest.raises(TxRejected) as twice:
        await provider.send(msgs.create_bid(bid, DecCoin(denom="uact", amount=Dec(1)), BID_DEPOSIT))
    assert (twice.value.codespace, twice.value.code) == ("market", 21)
    assert (
        "failed to execute message; message index: 0: invalid bid: bid exists from provider"
        in twice.value.log
    )

    tenant = chain.wallet("tenant-2")
    with pytest.raises(TxRejected) as unknown:
        await tenant.send(
            msgs.create_bid(
                bid_id(deployment, tenant.address),
                DecCoin(denom="uact", amount=Dec(1)),
                BID_DEPOSIT,
            )
        )
    assert (unknown.value.codespace, unknown.value.code) == ("market", 30)


async def test_provider_closing_an_open_bid_refunds_its_deposit(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    provider = chain.wallet("provider")
    deployment = await deploy(chain, corpus("tetris.yaml"))
    bid = bid_id(deployment, provider.address)
    start = await chain.lcd.balance(provider.address, "uakt")
    await provider.send(msgs.create_bid(bid, DecCoin(denom="uact", amount=Dec(5)), BID_DEPOSIT))
    assert await chain.lcd.balance(provider.address, "uakt") < start - BID_DEPOSIT.amount + 1

    committed = await provider.send(msgs.close_bid(bid, LeaseClosedReason.UNSPECIFIED))
    [closed] = [e for e in await events_of(chain, committed.height) if isinstance(e, ev.BidClosed)]
    assert closed.bid_id == bid
    assert (await chain.lcd.bid(bid)).state == "closed"
    fees = 2 * 7_500
    assert await chain.lcd.balance(provider.address, "uakt") == start - fees
