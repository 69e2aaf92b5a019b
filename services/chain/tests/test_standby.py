"""Two relays for one key, as real processes on the devnet: one holds the relay's lease and
relays, the other waits ready as a hot standby and broadcasts nothing; SIGKILL the active one
with commands in flight and the standby takes over within ten seconds, each command paid on
chain exactly once and no block's events published twice."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from akbus import Bus
from akchainsvc.testing import RelayProcess, chain_events, results
from akdevnet.testing import TEST_PASSPHRASE, DevnetClients, DevnetProcess
from akservice.testing import eventually
from aktypes.coin import Coin
from aktypes.events import BroadcastTx, ChainStatus, Send, TxCommitted
from aktypes.events import chain as ev
from aktypes.events.streams import CHAIN_TX
from aktypes.sdl import SDL


def pay(key: str, to: str, amount: int) -> BroadcastTx:
    return BroadcastTx(
        key=key, msgs=[Send(to_address=to, amount=[Coin(denom="uakt", amount=amount)])]
    )


def relay(devnet: DevnetProcess, redis_url: str, folder: Path, name: str) -> RelayProcess:
    return RelayProcess(
        redis_url=redis_url,
        node=devnet.rpc_url,
        api=devnet.lcd_url,
        key_file=devnet.key_path("provider"),
        passphrase=TEST_PASSPHRASE,
        log_path=folder / name / "relay.log",
        extra_env={"AP_INSTANCE_ID": name},
    )


def handled(process: RelayProcess) -> float:
    """Commands this process finished (its ``akchainsvc_txs_total``)."""
    with urllib.request.urlopen(f"{process.health_url}/metrics") as response:  # noqa: S310
        lines = response.read().decode().splitlines()
    return sum(float(ln.split()[1]) for ln in lines if ln.startswith("akchainsvc_txs_total{"))


async def test_a_killed_relay_hands_over_to_its_standby_without_a_second_broadcast(
    devnet: DevnetProcess,
    redis_url: str,
    bus: Bus,
    chain: DevnetClients,
    corpus: Callable[[str], SDL],
    tmp_path: Path,
) -> None:
    active = relay(devnet, redis_url, tmp_path, "one")
    standby = relay(devnet, redis_url, tmp_path, "two")
    payee = chain.devnet.signer("tenant-2").address
    tenant = chain.tenant()
    try:
        await asyncio.to_thread(active.start)
        await asyncio.to_thread(standby.start)  # ready, as a standby
        one, two = active.readiness()[1], standby.readiness()[1]
        assert isinstance(one, dict) and isinstance(two, dict)
        assert (one["role"], two["role"]) == ("leader", "standby")
        assert two["leader"] == one["identity"]
        first = await tenant.deploy(corpus("tetris.yaml"))
        before = await chain.lcd.balance(payee, "uakt")
        commands = [pay(f"before/{i}", payee, i) for i in range(1, 11)]
        await asyncio.gather(*(bus.publish(CHAIN_TX, c) for c in commands))

        async def answered(count: int) -> list[object] | None:
            found = await results(bus)
            return found if len(found) >= count else None

        await eventually(lambda: answered(3), timeout_s=30.0, what="the first results")
        assert handled(standby) == 0  # the standby has broadcast nothing
        active.kill()  # with most commands in flight
        killed = time.monotonic()
        after = pay("after", payee, 1000)
        await bus.publish(CHAIN_TX, after)

        async def after_committed() -> bool:
            return any(getattr(r, "key", "") == "after" for r in await results(bus))

        await eventually(after_committed, timeout_s=15.0, what="the command sent after the kill")
        took = time.monotonic() - killed
        assert took < 10.0, f"the standby took {took:.1f}s"

        found = await eventually(lambda: answered(11), timeout_s=30.0, what="every result")

        async def all_acknowledged() -> bool:  # nothing left in flight: no result can follow
            return (await bus.backend.pending_summary(CHAIN_TX, "chain")).count == 0

        await eventually(all_acknowledged, timeout_s=15.0, what="every command acknowledged")
        found = await results(bus)
        keys = Counter(getattr(r, "key", "") for r in found)
        assert keys == Counter([c.key for c in commands] + ["after"]), keys
        assert all(isinstance(r, TxCommitted) for r in found), found
        assert len({r.tx_hash for r in found if isinstance(r, TxCommitted)}) == 11
        paid = sum(range(1, 11)) + 1000
        assert await chain.lcd.balance(payee, "uakt") == before + paid  # each paid once

        now = standby.readiness()[1]
        assert isinstance(now, dict) and now["role"] == "leader"
        second = await tenant.deploy(corpus("tetris.yaml"))  # relayed by the new leader
        height = (await chain.rpc.status()).latest_height

        async def relayed_on() -> bool:
            status = await bus.status("chain")
            payload = status.payload if status is not None else None
            return (
                isinstance(payload, ChainStatus)
                and payload.leader == two["identity"]
                and payload.height >= height
            )

        await eventually(relayed_on, timeout_s=15.0, what="the standby following the chain")
        events = await chain_events(bus)
        orders = Counter(e.order_id.dseq for e in events if isinstance(e, ev.OrderCreated))
        assert orders == {first.dseq: 1, second.dseq: 1}, orders
        positions = [(e.height, e.tx_index, e.event_index) for e in events]
        assert len(positions) == len(set(positions))  # no height published twice
        assert "Traceback" not in standby.log()
    finally:
        active.stop()
        standby.stop()
