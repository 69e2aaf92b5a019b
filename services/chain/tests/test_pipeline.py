"""The transaction pipeline as a process: many commands, duplicates, a stolen sequence,
a relay killed mid-flight, escrow running out, commands the chain or the relay refuses."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

from akbus import Bus
from akchain import msgs
from akchainsvc.testing import RelayProcess, chain_events, results
from akdevnet.testing import DevnetClients, DevnetProcess
from akservice.testing import eventually
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import BroadcastTx, CreateBid, Send, TxCommitted, TxFailed, WithdrawLease
from aktypes.events import chain as ev
from aktypes.events.base import LeaseClosedReason
from aktypes.events.streams import CHAIN_TX
from aktypes.ids import BidID
from aktypes.sdl import SDL


def pay(key: str, to: str, amount: int) -> BroadcastTx:
    return BroadcastTx(
        key=key, msgs=[Send(to_address=to, amount=[Coin(denom="uakt", amount=amount)])]
    )


async def answers(bus: Bus, count: int, timeout: float = 60.0) -> list[TxCommitted | TxFailed]:
    async def enough() -> list[TxCommitted | TxFailed] | None:
        found = await results(bus)
        return found if len(found) >= count else None

    found: list[TxCommitted | TxFailed] = await eventually(
        enough, timeout_s=timeout, what=f"{count} results"
    )
    return found


def resyncs(relay: RelayProcess) -> float:
    with urllib.request.urlopen(f"{relay.health_url}/metrics") as response:  # noqa: S310
        for line in response.read().decode().splitlines():
            if line.startswith("akchainsvc_sequence_resyncs_total "):
                return float(line.split()[1])
    return 0.0


async def test_fifty_concurrent_commands_commit_once_each_despite_duplicates_and_a_stolen_sequence(
    relay: RelayProcess, bus: Bus, chain: DevnetClients
) -> None:
    provider = chain.devnet.signer("provider").address
    payee = chain.devnet.signer("tenant-2").address
    before = await chain.lcd.balance(payee, "uakt")
    first = [pay(f"pay/{i}", payee, i) for i in range(1, 26)]
    second = [pay(f"pay/{i}", payee, i) for i in range(26, 51)]

    await asyncio.gather(*(bus.publish(CHAIN_TX, c) for c in first))
    await asyncio.gather(*(bus.publish(CHAIN_TX, c) for c in first[:10]))  # the same keys again
    await answers(bus, 25)

    # someone uses the provider key behind the relay's back: its next sequence is now stale
    stolen = await chain.wallet("provider").send(
        msgs.send(provider, payee, [Coin(denom="uakt", amount=1_000_000)])
    )
    assert stolen.ok
    await asyncio.gather(*(bus.publish(CHAIN_TX, c) for c in second))
    found = await answers(bus, 50)
    await asyncio.sleep(0.5)  # a straggler would show up here

    found = await results(bus)
    assert sorted(r.key for r in found) == sorted(c.key for c in first + second)
    assert all(isinstance(r, TxCommitted) for r in found), [
        r for r in found if isinstance(r, TxFailed)
    ]
    assert len({r.tx_hash for r in found if isinstance(r, TxCommitted)}) == 50
    assert await chain.lcd.balance(payee, "uakt") == before + sum(range(1, 51)) + 1_000_000
    assert resyncs(relay) >= 1


async def test_a_relay_killed_mid_flight_resumes_without_losing_or_repeating(
    relay: RelayProcess, bus: Bus, chain: DevnetClients
) -> None:
    payee = chain.devnet.signer("tenant-2").address
    before = await chain.lcd.balance(payee, "uakt")
    commands = [pay(f"kill/{i}", payee, 10 * i) for i in range(1, 31)]
    await asyncio.gather(*(bus.publish(CHAIN_TX, c) for c in commands))
    await eventually(lambda: _some(bus), timeout_s=30.0, what="first results")
    relay.kill()
    await asyncio.to_thread(relay.start)
    found = await answers(bus, 30)
    await asyncio.sleep(0.5)
    found = await results(bus)
    assert sorted(r.key for r in found) == sorted(c.key for c in commands)
    assert all(isinstance(r, TxCommitted) for r in found)
    assert await chain.lcd.balance(payee, "uakt") == before + sum(10 * i for i in range(1, 31))


async def _some(bus: Bus) -> bool:
    return len(await results(bus)) >= 3


async def test_escrow_running_out_closes_the_lease_and_the_event_reaches_the_stream(
    relay: RelayProcess, bus: Bus, chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    tenant = chain.tenant()
    deployment = await tenant.deploy(
        corpus("tetris.yaml"), deposit=Coin(denom="uact", amount=500_000)
    )
    provider = chain.devnet.signer("provider").address
    bid = BidID(owner=deployment.owner, dseq=deployment.dseq, gseq=1, oseq=1, provider=provider)
    await bus.publish(
        CHAIN_TX,
        BroadcastTx(
            key=f"create-bid/{bid.order_id}",
            msgs=[
                CreateBid(
                    bid_id=bid,
                    price=DecCoin(denom="uact", amount=Dec(10_000)),
                    deposit=Coin(denom="uakt", amount=500_000),
                )
            ],
        ),
    )
    await answers(bus, 1)
    await tenant.accept_cheapest(deployment.dseq)
    created = (await chain.lcd.lease(bid.lease_id)).created_at
    await asyncio.to_thread(
        chain.devnet.wait_height, created + 55
    )  # 50 blocks of funds, and then some

    await bus.publish(
        CHAIN_TX,
        BroadcastTx(key=f"withdraw/{bid.lease_id}", msgs=[WithdrawLease(lease_id=bid.lease_id)]),
    )
    found = await answers(bus, 2)
    assert all(isinstance(r, TxCommitted) for r in found), found

    async def closed() -> list[ev.LeaseClosed]:
        return [
            e
            for e in await chain_events(bus)
            if isinstance(e, ev.LeaseClosed) and e.lease_id == bid.lease_id
        ]

    [event] = await eventually(closed, timeout_s=30.0, what="LeaseClosed on akash.chain.events")
    assert event.reason == LeaseClosedReason.INSUFFICIENT_FUNDS
    assert (await chain.lcd.lease(bid.lease_id)).state == "insufficient_funds"
    deployment_closed = [
        e
        for e in await chain_events(bus)
        if isinstance(e, ev.DeploymentClosed) and e.deployment_id == deployment
    ]
    assert len(deployment_closed) == 1


async def test_commands_refused_by_the_chain_or_the_relay_fail_with_the_reason(
    relay: RelayProcess, bus: Bus, chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    deployment = await chain.tenant().deploy(corpus("tetris.yaml"))
    provider = chain.devnet.signer("provider").address
    other = chain.devnet.signer("tenant-3").address
    too_high = BidID(
        owner=deployment.owner, dseq=deployment.dseq, gseq=1, oseq=1, provider=provider
    )
    not_ours = BidID(owner=deployment.owner, dseq=deployment.dseq, gseq=1, oseq=1, provider=other)
    price, deposit = DecCoin(denom="uact", amount=Dec(10**6)), Coin(denom="uakt", amount=500_000)
    await bus.publish(
        CHAIN_TX,
        BroadcastTx(
            key="too-high", msgs=[CreateBid(bid_id=too_high, price=price, deposit=deposit)]
        ),
    )
    await bus.publish(
        CHAIN_TX,
        BroadcastTx(
            key="not-ours", msgs=[CreateBid(bid_id=not_ours, price=price, deposit=deposit)]
        ),
    )
    found = {r.key: r for r in await answers(bus, 2)}
    refused = found["too-high"]
    assert isinstance(refused, TxFailed)
    assert (refused.codespace, refused.code) == ("market", 22)
    assert "bid price is invalid" in refused.log
    assert refused.tx_hash  # it was broadcast and refused in its block
    local = found["not-ours"]
    assert isinstance(local, TxFailed)
    assert local.codespace == "akchainsvc"
    assert other in local.log and local.tx_hash is None


def test_a_wrong_passphrase_stops_the_relay_with_a_clear_message(
    devnet: DevnetProcess, redis_url: str, tmp_path: Path
) -> None:
    relay = RelayProcess(
        redis_url=redis_url,
        node=devnet.rpc_url,
        api=devnet.lcd_url,
        key_file=devnet.key_path("provider"),
        passphrase="not the passphrase",
        log_path=tmp_path / "relay.log",
    )
    run = subprocess.run(
        [sys.executable, "-m", "akchainsvc"],
        env=relay.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 1
    assert "wrong passphrase for key file" in run.stderr
    assert "Traceback" not in run.stderr
    assert "not the passphrase" not in run.stderr


def test_missing_settings_are_named_without_a_traceback(tmp_path: Path) -> None:
    def start(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "akchainsvc"],
            env={"PATH": "", "AP_KEY_FILE": str(tmp_path / "k.json"), **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    bad_price = start(AP_KEY_PASSPHRASE="x", AP_GAS_PRICES="cheap")
    assert bad_price.returncode == 2
    assert "AP_GAS_PRICES='cheap': 'cheap' is not an amount" in bad_price.stderr
    assert "0.025uakt" in bad_price.stderr
    no_passphrase = start()
    assert no_passphrase.returncode == 2
    assert "AP_KEY_PASSPHRASE" in no_passphrase.stderr
    for run in (bad_price, no_passphrase):
        assert "Traceback" not in run.stderr
