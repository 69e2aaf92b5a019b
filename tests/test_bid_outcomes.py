"""What becomes of orders and bids, across real processes: declines with reasons, leases won
and lost, orders closed, bids timed out, and screening that bids nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from akbus import Bus
from akchain import msgs
from akcli.testing import Provider, sdl, sdl_text, stream
from akcluster.reservations import RESERVATIONS_KEY
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import (
    BidCloseCause,
    BidDeclined,
    BidPlaced,
    BidScreened,
    LeaseWon,
    ProviderBidClosed,
    ScreenBid,
)
from aktypes.events.streams import BIDENGINE_COMMANDS, BIDENGINE_EVENTS
from aktypes.testing import address


async def events(bus: Bus, kind: type[Any]) -> list[Any]:
    return [e.payload for e in await stream(bus, BIDENGINE_EVENTS) if isinstance(e.payload, kind)]


async def our_bid(chain: DevnetClients, tenant: str, dseq: int) -> Any:
    me = chain.wallet("provider").address

    async def found() -> Any:
        bids = await chain.tenant(tenant).bids(dseq, provider=me, state=None)
        return bids[0] if bids else None

    return await eventually(found, timeout_s=30, what=f"our bid on {dseq}")


async def reservations(bus: Bus) -> set[str]:
    return set(await bus.backend.hgetall(RESERVATIONS_KEY))


async def test_orders_that_cannot_fit_get_no_bid_and_a_declined_event_naming_why(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    denied = chain.tenant("tenant-2")
    provider.bidengine_env = {"AP_BID_TENANT_DENY": denied.address}
    provider.start()
    tenant = chain.tenant("tenant-1")
    cases = {
        "gpu_capability": sdl(gpu="h100"),
        "insufficient_capacity": sdl(cpu=60, count=3),
        "attributes_mismatch": sdl(attributes="attributes: {host: akash, region: mars}"),
        "auditor_not_signed": sdl(signed_by=f"signedBy: {{anyOf: [{address(99)}]}}"),
    }
    orders = {}
    for code, spec in cases.items():
        orders[code] = await tenant.deploy(spec)
    orders["tenant_denied"] = await denied.deploy(sdl())
    fits = await tenant.deploy(sdl())
    await our_bid(chain, "tenant-1", fits.dseq)  # the engine is working…

    async def declined() -> dict[str, list[str]]:
        found = {
            str(e.order_id.deployment_id): [r.code for r in e.reasons]
            for e in await events(bus, BidDeclined)
        }
        return found if len(found) >= len(orders) else {}

    reasons = await eventually(declined, timeout_s=30, what="a BidDeclined per order")
    for code, deployment in orders.items():
        assert code in reasons[str(deployment)], (code, reasons[str(deployment)])
        who = denied if code == "tenant_denied" else tenant
        assert await who.bids(deployment.dseq, state=None) == []  # …and bid on none of these
    assert await reservations(bus) == {str(fits.group(1).order(1))}


async def test_won_lost_and_closed_orders(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.start()
    tenant = chain.tenant("tenant-1")
    won = await tenant.deploy(sdl())
    lost = await tenant.deploy(sdl())
    closed = await tenant.deploy(sdl())
    for deployment in (won, lost, closed):
        await our_bid(chain, "tenant-1", deployment.dseq)
    assert len(await reservations(bus)) == 3

    # won: the lease is ours, the reservation stays
    [lease] = await tenant.accept(won.dseq, chain.wallet("provider").address)
    wins = await eventually(lambda: events(bus, LeaseWon), what="LeaseWon")
    assert [w.lease_id for w in wins] == [lease]

    # lost: the competitor bids lower and wins; our bid ends, the reservation goes
    competitor = chain.wallet("competitor")
    ours = await our_bid(chain, "tenant-1", lost.dseq)
    cheaper = DecCoin(denom=ours.price.denom, amount=Dec("0.000001"))
    await competitor.send(
        msgs.create_bid(
            ours.id.order_id.bid(competitor.address),
            cheaper,
            Coin(denom="uakt", amount=500_000),
            ours.resources_offer,
        )
    )
    await tenant.accept(lost.dseq, competitor.address)

    # closed: the tenant closes the deployment
    await tenant.close(closed.dseq)

    async def ended() -> dict[str, BidCloseCause]:
        found = {str(e.bid_id.deployment_id): e.cause for e in await events(bus, ProviderBidClosed)}
        return found if len(found) >= 2 else {}

    causes = await eventually(ended, timeout_s=30, what="two bids closed")
    assert causes == {str(lost): BidCloseCause.LEASE_LOST, str(closed): BidCloseCause.ORDER_CLOSED}
    held = await eventually(
        lambda: _only(reservations(bus), 1), what="only the won lease's reservation left"
    )
    assert held == {str(won.group(1).order(1))}
    for deployment in (lost, closed):
        bid = await our_bid(chain, "tenant-1", deployment.dseq)
        assert bid.state != "open"

    # the won lease closes: what it held is free again
    await tenant.close(won.dseq)
    await eventually(
        lambda: reservations(bus),
        until=lambda held: held == set(),
        what="the lease's reservation freed",
    )


async def _only(values: Any, n: int) -> Any:
    found = await values
    return found if len(found) == n else None


async def test_a_bid_not_won_in_time_is_closed_and_its_reservation_released(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.bidengine_env = {"AP_BID_TIMEOUT": "3s"}
    provider.start()
    tenant = chain.tenant("tenant-1")
    deployment = await tenant.deploy(sdl())
    await our_bid(chain, "tenant-1", deployment.dseq)

    async def timed_out() -> list[ProviderBidClosed]:
        return [
            e for e in await events(bus, ProviderBidClosed) if e.cause == BidCloseCause.BID_TIMEOUT
        ]

    [closed] = await eventually(timed_out, timeout_s=20, what="the bid timed out")
    assert closed.bid_id.dseq == deployment.dseq

    async def closed_on_chain() -> bool:
        return (await our_bid(chain, "tenant-1", deployment.dseq)).state == "closed"

    await eventually(closed_on_chain, timeout_s=20, what="the bid closed on chain")
    assert await reservations(bus) == set()


async def test_screening_answers_without_bidding(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.start()
    await eventually(lambda: _ready(provider), timeout_s=30, what="bid engine ready")
    group = sdl(cpu=2).groups[0]
    answer = await bus.request(
        BIDENGINE_COMMANDS, ScreenBid(group=group, owner=address(5)), BidScreened, timeout_s=20
    )
    assert answer.passed, answer.reasons
    assert answer.price is not None
    assert answer.price.amount == Dec("2") + Dec("5.12") + Dec("10.24") + Dec(
        "1"
    )  # cpu + memory + storage + endpoint
    assert [o.count for o in answer.offer] == [1]
    too_big = await bus.request(
        BIDENGINE_COMMANDS,
        ScreenBid(group=sdl(cpu=60, count=3).groups[0]),
        BidScreened,
        timeout_s=20,
    )
    assert not too_big.passed
    assert [r.code for r in too_big.reasons] == ["insufficient_capacity"]
    assert "replica 3" in too_big.reasons[0].message
    assert await reservations(bus) == set()
    assert await events(bus, BidPlaced) == []


async def _ready(provider: Provider) -> bool:
    return provider.bidengine.readiness()[0] == 200


async def test_the_bid_screen_command_prints_the_answer(
    provider: Provider, chain: DevnetClients, bus: Bus, tmp_path: Path
) -> None:
    provider.start()
    await eventually(lambda: _ready(provider), timeout_s=30, what="bid engine ready")
    fits, too_big = tmp_path / "fits.yaml", tmp_path / "too-big.yaml"
    fits.write_text(sdl_text(cpu=2))
    too_big.write_text(sdl_text(cpu=60, count=3))
    env = {**os.environ, "REDIS_URL": provider.redis_url}
    command = [sys.executable, "-m", "akcli", "bid", "screen", "--json"]

    def screen(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, str(path)], check=False, capture_output=True, text=True, env=env, timeout=60
        )

    yes = await asyncio.to_thread(screen, fits)
    assert yes.returncode == 0, yes.stderr
    [answer] = json.loads(yes.stdout)
    assert answer["passed"] is True
    assert answer["price"] == {"denom": "uact", "amount": "18.360000000000000000"}
    no = await asyncio.to_thread(screen, too_big)
    assert no.returncode == 1
    [refusal] = json.loads(no.stdout)
    assert [r["code"] for r in refusal["reasons"]] == ["insufficient_capacity"]
    assert await events(bus, BidPlaced) == []
