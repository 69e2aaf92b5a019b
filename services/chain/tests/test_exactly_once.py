"""Exactly once, no gaps: the relay's stream equals the devnet's own event log.

Tenants deploy, two providers bid, tenants lease and close, for a few hundred blocks; the
devnet is restarted once and the relay is SIGKILLed and restarted twice along the way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from akbus import Bus
from akchain import msgs
from akchain.errors import ChainError
from akchain.wallet import Wallet
from akchainsvc.testing import RelayProcess, chain_events
from akdevnet.testing import DevnetClients, DevnetProcess
from akservice.testing import eventually
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import chain as ev
from aktypes.ids import BidID
from aktypes.sdl import SDL

SHORT = {
    "akash.provider.v1beta4.EventProviderCreated": "ProviderUpdated",
    "akash.provider.v1beta4.EventProviderUpdated": "ProviderUpdated",
    "akash.audit.v1.EventTrustedAuditorCreated": "AuditorAttributesChanged",
    "akash.audit.v1.EventTrustedAuditorDeleted": "AuditorAttributesChanged",
}


def expected_from_log(
    devnet: DevnetProcess, provider: str, last_height: int
) -> list[tuple[str, str]]:
    """The devnet's own log, filtered the way the relay promises: (position, event name)."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "akdevnet",
            "events",
            "--home",
            str(devnet.home),
            "--to",
            str(last_height),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = []
    for line in run.stdout.splitlines():
        event = json.loads(line)
        attrs = {
            a["key"]: json.loads(a["value"]) for a in event["attributes"] if a["key"] != "msg_index"
        }
        kind: str = event["type"]
        name = SHORT.get(kind, kind.rsplit(".", 1)[1].removeprefix("Event"))
        if name == "LeaseCreated":
            keep = True  # every new lease: another provider's means our bid lost
        elif name.startswith(("Bid", "Lease")):
            keep = attrs["id"]["provider"] == provider
        elif name in ("ProviderUpdated", "AuditorAttributesChanged"):
            keep = attrs["owner"] == provider
        else:
            keep = kind.startswith(("akash.market.v1.EventOrder", "akash.deployment.v1."))
        if keep:
            found.append((event["position"], name))
    return found


class Market:
    """Tenants and two providers keeping the chain busy; tolerant of node restarts."""

    def __init__(self, chain: DevnetClients, sdls: list[SDL], rival: Wallet) -> None:
        self.chain = chain
        self.sdls = sdls
        self.provider = chain.wallet("provider")
        self.rival = rival
        self.rng = random.Random(7)
        self.errors: list[str] = []
        self.rounds = 0

    async def _bid(self, wallet: Wallet, deployment: Any, price: int) -> None:
        bid = BidID(
            owner=deployment.owner, dseq=deployment.dseq, gseq=1, oseq=1, provider=wallet.address
        )
        await wallet.send(
            msgs.create_bid(
                bid, DecCoin(denom="uact", amount=Dec(price)), Coin(denom="uakt", amount=500_000)
            )
        )

    async def tenant(self, name: str, stop: asyncio.Event) -> None:
        tenant = self.chain.tenant(name)
        dseq = 1_000 * int(name.rsplit("-", 1)[1])
        while not stop.is_set():
            dseq += 1
            try:
                deployment = await tenant.deploy(self.rng.choice(self.sdls), dseq=dseq)
                await self._bid(
                    self.provider if self.rng.random() < 0.7 else self.rival, deployment, 100
                )
                with contextlib.suppress(LookupError):
                    await tenant.accept_cheapest(deployment.dseq)
                await asyncio.sleep(self.rng.uniform(0.05, 0.3))
                await tenant.close(deployment.dseq)
                self.rounds += 1
            except (ChainError, OSError, TimeoutError) as exc:
                self.errors.append(f"{name}: {exc}")
                await asyncio.sleep(0.2)


async def test_the_stream_equals_the_devnet_log_across_restarts_and_kills(
    devnet: DevnetProcess,
    relay: RelayProcess,
    bus: Bus,
    chain: DevnetClients,
    corpus: Callable[[str], SDL],
) -> None:
    rival = chain.wallet("tenant-3")  # registers as a second provider; its bids must not be relayed
    await rival.send(msgs.create_provider(rival.address, "https://rival.example.com:8443", []))
    market = Market(chain, [corpus("tetris.yaml"), corpus("snake-game.yaml")], rival)
    stop = asyncio.Event()
    workers = [asyncio.create_task(market.tenant(n, stop)) for n in ("tenant-1", "tenant-2")]
    start = devnet.height()

    async def blocks(count: int) -> None:
        await asyncio.to_thread(devnet.wait_height, devnet.height() + count)

    await blocks(60)
    relay.kill()
    await blocks(40)  # the relay is down for a while: it must catch up
    await asyncio.to_thread(relay.start)
    await blocks(50)
    # the relay's websocket and requests fail while the node is down; it must come back
    await asyncio.to_thread(devnet.restart)
    await blocks(50)
    relay.kill()
    await asyncio.to_thread(relay.start)
    await blocks(60)
    stop.set()
    await asyncio.gather(*workers)
    end = devnet.height()
    assert end - start >= 200

    async def caught_up() -> bool:
        cursor = await bus.backend.get("akchainsvc:cursor")
        return cursor is not None and int(cursor) >= end

    await eventually(caught_up, 30, "the relay caught up")

    provider = devnet.signer("provider").address
    expected = expected_from_log(devnet, provider, end)
    streamed = [(e.position, type(e).__name__) for e in await chain_events(bus) if e.height <= end]
    assert market.rounds >= 5, market.errors
    assert sum(1 for _, name in expected if name == "LeaseCreated") >= 3
    assert len(streamed) == len(set(streamed)), "an event was published twice"
    assert streamed == expected
    rival_events = [
        e
        for e in await chain_events(bus)
        if isinstance(e, ev.BidCreated) and e.bid_id.provider == rival.address
    ]
    assert rival_events == []
