"""The relay on the service runtime: shutdown under faults, poison input, readiness, settings."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from akbus import Bus
from akbus.embedded import EmbeddedRedis
from akchainsvc.testing import RelayProcess, results
from akdevnet.testing import TEST_PASSPHRASE, DevnetClients, DevnetProcess
from akservice.testing import eventually, eventually_sync, free_port
from aktypes.coin import Coin
from aktypes.events import BroadcastTx, Send, TxCommitted
from aktypes.events.streams import CHAIN_TX, dlq_stream


@pytest.fixture
def relay_for() -> Iterator[Callable[..., RelayProcess]]:
    made: list[RelayProcess] = []

    def make(devnet: DevnetProcess, redis_url: str, log: Path, **env: str) -> RelayProcess:
        made.append(_relay(devnet, redis_url, log, **env))
        return made[-1]

    yield make
    for relay in made:
        relay.stop()


def _relay(devnet: DevnetProcess, redis_url: str, log: Path, **env: str) -> RelayProcess:
    return RelayProcess(
        redis_url=redis_url,
        node=devnet.rpc_url,
        api=devnet.lcd_url,
        key_file=devnet.key_path("provider"),
        passphrase=TEST_PASSPHRASE,
        log_path=log,
        extra_env={"AKBUS_DRAIN_TIMEOUT_S": "2", **env},
    )


def stopped_within(relay: RelayProcess, seconds: float) -> int | None:
    started = time.monotonic()
    code = relay.stop(signal.SIGTERM, timeout=20)
    took = time.monotonic() - started
    assert took < seconds, f"took {took:.1f}s: {relay.log()[-2000:]}"
    assert "Traceback" not in relay.log()
    return code


def test_killing_redis_then_sigterm_stops_within_the_drain_timeout(
    devnet: DevnetProcess,
    private_redis: EmbeddedRedis,
    tmp_path: Path,
    relay_for: Callable[..., RelayProcess],
) -> None:
    relay = relay_for(devnet, private_redis.url, tmp_path / "relay.log")
    relay.start()
    private_redis.kill()
    eventually_sync(lambda: relay.readiness()[0] == 503, what="not ready without Redis")
    assert stopped_within(relay, 3.0) == 0


def test_sigterm_while_waiting_for_the_node_stops_at_once(
    devnet: DevnetProcess,
    redis_url: str,
    tmp_path: Path,
    relay_for: Callable[..., RelayProcess],
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    relay = relay_for(devnet, redis_url, tmp_path / "relay.log", AP_NODE=dead)
    relay.start(wait_ready=False)

    def node_problem() -> str | None:
        try:
            status, body = relay.readiness()
        except OSError:  # not serving yet
            return None
        found = [p for p in body.get("problems", []) if "the node" in p]
        return found[0] if status == 503 and found else None

    problem = eventually_sync(node_problem, what="readiness naming the node")
    assert problem.startswith(f"waiting for the node at {dead}: ")
    assert stopped_within(relay, 3.0) == 0


async def test_an_entry_that_is_not_utf8_is_dead_lettered_and_commands_behind_it_land(
    devnet: DevnetProcess, redis_server: EmbeddedRedis, redis_url: str, tmp_path: Path,
    bus: Bus, chain: DevnetClients, relay_for: Callable[..., RelayProcess],
) -> None:  # fmt: skip
    client = redis_server.client()
    # the entry of `redis-cli XADD akash.provider.chain.tx '*' ... payload "$(printf 'ab\xffcd')"`
    client.xadd(CHAIN_TX, {
        "type": "tx.broadcast", "id": "v1", "time": "2026-11-23T15:30:00Z", "producer": "p",
        "correlation_id": "", "causation_id": "", "schema": "1", "payload": b"ab\xffcd",
    })  # fmt: skip
    client.close()
    relay = relay_for(devnet, redis_url, tmp_path / "relay.log")
    relay.start()
    payee = chain.devnet.signer("tenant-2").address
    command = BroadcastTx(
        key="after-the-poison", msgs=[Send(to_address=payee, amount=[Coin(denom="uakt", amount=7)])]
    )
    await bus.publish(CHAIN_TX, command)
    [result] = await eventually(
        lambda: results(bus), timeout_s=30.0, what="a result behind the poison"
    )
    assert isinstance(result, TxCommitted) and result.key == "after-the-poison"
    (letter,) = await bus.dead_letters(CHAIN_TX)
    assert "not valid UTF-8" in letter.letter.error
    assert letter.letter.fields["payload"] == "ab\\xffcd"
    assert await bus.backend.length(dlq_stream(CHAIN_TX)) == 1
    relay.stop()
    relay.start()  # and on the next start, nothing is left to crash on
    assert relay.running()
    assert stopped_within(relay, 3.0) == 0


def test_help_names_every_setting_and_version_works() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "akchainsvc", *args],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    helped = run("--help")
    assert helped.returncode == 0
    for name, default in [
        ("AP_NODE", "http://localhost:26657"), ("AP_TX_BROADCAST_TIMEOUT", "30s"),
        ("AP_CHAIN_HEALTH_LISTEN", "0.0.0.0:8091"), ("AP_INSTANCE_ID", "0"),
        ("REDIS_URL", '""'), ("AKBUS_DRAIN_TIMEOUT_S", "10"),
    ]:  # fmt: skip
        (line,) = [line for line in helped.stdout.splitlines() if line.split()[:1] == [name]]
        assert line.split()[1].startswith(default), line
    assert run("--version").stdout.strip() == "python -m akchainsvc 0.1.0"
