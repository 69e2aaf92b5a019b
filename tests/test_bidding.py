"""From order to bid, across real processes: devnet, Redis, relay, cluster, bid engine.

Every assertion reads the chain's own state (bids and leases over the LCD) or the streams
the services wrote, never the services' internals.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from fractions import Fraction

from akbus import Bus
from akcli.testing import SCALES, Provider, stream
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.coin import Dec
from aktypes.events import BidDeclined, BidPlaced
from aktypes.events.streams import BIDENGINE_EVENTS
from aktypes.groupspec import GroupSpec
from aktypes.sdl import SDL

FITTING = [
    "CockroachDB.yaml", "CodiMD.yaml", "Elizaos-ai_Agents.yaml", "Ethereum_2.0.yaml", "Grav.yaml",
    "MemoryGame.yaml", "MySQL.yaml", "Open-Project.yaml", "Piper-TTS__frontend.yaml",
    "RAIR-Dapp.yaml", "StableStudio.yaml", "SurrealDB.yaml", "adminer.yaml", "agent-zero.yaml",
    "anubis.yaml", "big-dipper.yaml", "botpress.yaml", "discourse.yaml", "fio.yaml", "ghost.yaml",
]  # fmt: skip


def scale(name: str) -> Fraction:
    return Fraction(SCALES[name])


def expected_price(group: GroupSpec) -> Fraction:
    """The scale strategy's price, computed here from the settings (integer MiB sizes)."""
    classes = SCALES["AP_BID_PRICE_STORAGE_SCALE"].split(",")[1:]
    storage = {k: Fraction(v) for k, v in (p.split("=") for p in classes)}
    ephemeral = Fraction(SCALES["AP_BID_PRICE_STORAGE_SCALE"].split(",")[0])
    total = Fraction(0)
    for unit in group.resources:
        res, count = unit.resource, unit.count
        total += res.cpu_millis * count * scale("AP_BID_PRICE_CPU_SCALE")
        total += Fraction(res.memory_bytes * count, 2**20) * scale("AP_BID_PRICE_MEMORY_SCALE")
        for volume in res.storage or ():
            persistent = volume.persistent and volume.attribute("class")
            rate = storage[volume.attribute("class") or ""] if persistent else ephemeral
            total += Fraction(volume.size.val * count, 2**20) * rate
        total += len(res.endpoints or ()) * scale("AP_BID_PRICE_ENDPOINT_SCALE")
    return total


def as_fraction(amount: Dec) -> Fraction:
    return Fraction(amount.raw, 10**18)


async def test_orders_that_fit_get_one_bid_at_the_scale_price_and_others_a_reason(
    provider: Provider, chain: DevnetClients, bus: Bus, corpus: Callable[[str], SDL]
) -> None:
    provider.start()
    tenant = chain.tenant("tenant-1")
    me = chain.wallet("provider").address
    deployed = {}
    for name in FITTING:
        sdl = corpus(name)
        deployment = await tenant.deploy(sdl)
        deployed[deployment.dseq] = (name, sdl.groups[0])

    async def all_bid() -> dict[int, object]:
        found = {}
        for dseq in deployed:
            bids = await tenant.bids(dseq, provider=me)
            if bids:
                found[dseq] = bids
        return found if len(found) == len(deployed) else {}

    bids = await eventually(all_bid, timeout_s=90, what="a bid on each of the 20 orders")
    for dseq, (name, group) in deployed.items():
        [bid] = bids[dseq]  # type: ignore[index]
        assert bid.price.denom == "uact", name
        assert as_fraction(bid.price.amount) == expected_price(group), name

    async def placed() -> list[BidPlaced]:
        found = [
            e.payload
            for e in await stream(bus, BIDENGINE_EVENTS)
            if isinstance(e.payload, BidPlaced)
        ]
        return found if len(found) >= 20 else []

    events = await eventually(placed, timeout_s=10, what="20 BidPlaced events")
    assert sorted(str(e.bid_id) for e in events) == sorted(str(b[0].id) for b in bids.values())  # type: ignore[attr-defined, index]
    assert not [
        e for e in await stream(bus, BIDENGINE_EVENTS) if isinstance(e.payload, BidDeclined)
    ]
    await asyncio.sleep(1.0)  # no second bid appears later
    for dseq in deployed:
        assert len(await tenant.bids(dseq, provider=me, state=None)) == 1
