"""The relay as a process, against real Redis and a real devnet process."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable

from akbus import Bus
from akchainsvc.testing import RelayProcess, chain_events, results
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import BroadcastTx, ChainStatus, CreateBid, TxCommitted, TxFailed
from aktypes.events import chain as ev
from aktypes.events.streams import CHAIN_TX
from aktypes.ids import BidID
from aktypes.sdl import SDL

DEPOSIT = Coin(denom="uakt", amount=500_000)


async def test_an_order_reaches_the_stream_once_and_a_bid_command_lands_on_chain(
    relay: RelayProcess, bus: Bus, chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    deployment = await chain.tenant().deploy(corpus("tetris.yaml"))

    async def orders() -> list[ev.OrderCreated]:
        return [
            e
            for e in await chain_events(bus)
            if isinstance(e, ev.OrderCreated) and e.order_id.deployment_id == deployment
        ]

    [order] = await eventually(orders, timeout_s=30.0, what="OrderCreated on akash.chain.events")
    provider = chain.devnet.signer("provider").address
    o = order.order_id
    bid = BidID(owner=o.owner, dseq=o.dseq, gseq=o.gseq, oseq=o.oseq, provider=provider)
    command = BroadcastTx(
        key=f"create-bid/{order.order_id}",
        msgs=[
            CreateBid(bid_id=bid, price=DecCoin(denom="uact", amount=Dec(5_000)), deposit=DEPOSIT)
        ],
    )
    await bus.publish(CHAIN_TX, command)

    async def answered() -> list[TxCommitted | TxFailed]:
        return [r for r in await results(bus) if r.key == command.key]

    [result] = await eventually(answered, timeout_s=30.0, what="a result for the bid")
    assert isinstance(result, TxCommitted), result
    on_chain = await chain.lcd.bid(bid)
    assert on_chain.state == "open"
    assert on_chain.price == DecCoin(denom="uact", amount=Dec(5_000))
    tx = await chain.rpc.tx(result.tx_hash)
    assert tx.ok and tx.height == result.height

    async def bid_event() -> list[ev.BidCreated]:
        return [
            e for e in await chain_events(bus) if isinstance(e, ev.BidCreated) and e.bid_id == bid
        ]

    await eventually(bid_event, timeout_s=30.0, what="BidCreated on akash.chain.events")
    assert len(await orders()) == 1

    async def status() -> ChainStatus | None:
        latest = await bus.status("chain")
        payload = latest.payload if latest else None
        return (
            payload
            if isinstance(payload, ChainStatus) and payload.height >= result.height
            else None
        )

    reported = await eventually(status, timeout_s=30.0, what="a chain status past the bid's height")
    assert reported.node_height >= reported.height
    assert reported.lag < 50
    with urllib.request.urlopen(f"{relay.health_url}/metrics") as response:  # noqa: S310
        text = response.read().decode()
    assert "akchainsvc_height" in text
    assert 'akchainsvc_txs_total{outcome="committed"} 1.0' in text
    code, body = relay.readiness()
    assert code == 200, json.dumps(body)
