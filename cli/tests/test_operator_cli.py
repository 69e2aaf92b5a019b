"""``akash-provider status | leases | orders | events``: against a real Redis, through the
commands themselves, on events seeded as the services publish them."""

from __future__ import annotations

import asyncio
import datetime as dt
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO

from typer.testing import CliRunner

from akbus import Bus, RedisSettings
from akcli.main import app
from aktypes import events as ev
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events.streams import (
    BALANCE_EVENTS,
    BIDENGINE_EVENTS,
    CHAIN_EVENTS,
    CLUSTER_EVENTS,
    MANIFEST_EVENTS,
    status_stream,
)
from aktypes.ids import LeaseID, OrderID
from aktypes.testing import address, example_payloads

runner = CliRunner()
OWNER, PROVIDER, OTHER_PROVIDER = address(1), address(2), address(4)
GiB = 2**30


def order(dseq: int) -> OrderID:
    return OrderID(owner=OWNER, dseq=dseq, gseq=1, oseq=1)


def lease(dseq: int) -> LeaseID:
    return LeaseID(owner=OWNER, dseq=dseq, gseq=1, oseq=1, provider=PROVIDER)


def uakt(amount: str) -> DecCoin:
    return DecCoin(denom="uakt", amount=Dec(amount))


def example(kind: type[ev.Payload]) -> ev.Payload:
    return next(p for p in example_payloads() if isinstance(p, kind))


def won(dseq: int, price: str) -> ev.Payload:
    return example(ev.LeaseWon).model_copy(update={"lease_id": lease(dseq), "price": uakt(price)})


def manifest_received(dseq: int) -> ev.Payload:
    return example(ev.ManifestReceived).model_copy(update={"lease_id": lease(dseq)})


def publish(url: str, items: Sequence[tuple[str, ev.Payload]]) -> None:
    """Publish each payload on its stream, in order, as its service would."""

    async def run() -> None:
        bus = Bus.connect(RedisSettings(url=url), producer="test")
        try:
            for stream, payload in items:
                await bus.publish(stream, payload)
        finally:
            await bus.close()

    asyncio.run(run())


def publish_status(url: str, service: str, payload: ev.Payload, age_s: float = 0.0) -> None:
    """``service``'s status, as published ``age_s`` seconds ago."""

    async def run() -> None:
        bus = Bus.connect(RedisSettings(url=url), producer=service)
        try:
            envelope = bus.envelope(payload)
            then = envelope.time - dt.timedelta(seconds=age_s)
            fields = envelope.model_copy(update={"time": then}).to_fields()
            await bus.backend.xadd(status_stream(service), fields)
        finally:
            await bus.close()

    asyncio.run(run())


def row(output: str, needle: str) -> str:
    """The one line of ``output`` that mentions ``needle``."""
    lines = [line for line in output.splitlines() if needle in line]
    assert len(lines) == 1, f"{needle!r} in {len(lines)} lines of:\n{output}"
    return lines[0]


def service_row(output: str, service: str) -> str:
    return row(output, f"│ {service} ")


def invoke(url: str, *args: str) -> str:
    result = runner.invoke(app, [*args, "--redis-url", url])
    assert result.exit_code == 0, result.output
    return result.output


# -- status -------------------------------------------------------------------------------


def test_status_shows_each_services_figures_and_which_are_missing(redis_url: str) -> None:
    allocatable = ev.ResourceTotals(cpu=64_000, memory=256 * GiB, gpu=8)
    available = ev.ResourceTotals(cpu=60_500, memory=200 * GiB, gpu=6)
    publish_status(
        redis_url,
        "chain",
        ev.ChainStatus(height=1200, node_height=1203, pending_txs=2, last_error="rpc timeout"),
    )
    publish_status(redis_url, "bidengine", ev.BidEngineStatus(orders=4))
    publish_status(
        redis_url,
        "cluster",
        ev.ClusterStatus(
            leases=7,
            allocatable=allocatable,
            available=available,
            reservations_pending=1,
            reservations_active=3,
        ),
    )
    publish_status(redis_url, "manifest", ev.ManifestStatus(deployments=5))
    publish_status(
        redis_url, "gateway", ev.GatewayStatus(websockets=3, shells=1, tenants=2, version="1.2.3")
    )
    publish_status(
        redis_url,
        "hostname",
        ev.OperatorStatus(operator="hostname", figures={"conflict": 1, "routed": 4}),
    )
    publish_status(
        redis_url,
        "ip",
        ev.OperatorStatus(operator="ip", figures={"capacity": 4, "in_use": 1}, last_error="x"),
    )
    publish_status(
        redis_url,
        "inventory",
        ev.InventoryCluster(
            nodes=[ev.NodeInventory(name="a"), ev.NodeInventory(name="b")],
            unknown_gpus=["nvidia/abc"],
            generation=9,
        ),
    )

    output = invoke(redis_url, "status")

    chain = service_row(output, "chain")
    assert "ok" in chain and "s ago" in chain
    assert "height 1200, node height 1203, lag 3, pending txs 2" in chain
    assert "last error: rpc timeout" in chain
    assert "orders 4" in service_row(output, "bidengine")
    cluster = service_row(output, "cluster")
    assert "leases 7, reservations 1 pending / 3 active" in cluster
    assert "cpu 60.5 of 64 free, memory 200Gi of 256Gi free, gpu 6 of 8 free" in cluster
    assert "deployments 5" in service_row(output, "manifest")
    assert "missing" in service_row(output, "balance")
    assert "websockets 3 (1 shells) of 2 tenants, version 1.2.3" in service_row(output, "gateway")
    assert "conflict 1, routed 4" in service_row(output, "hostname")
    assert "capacity 4, in_use 1, last error: x" in service_row(output, "ip")
    inventory = service_row(output, "inventory")
    assert "nodes 2, storage classes 0, generation 9, unknown GPUs: nvidia/abc" in inventory
    assert "missing: balance (no status published)" in output
    assert "stale" not in output


def test_status_marks_old_statuses_stale(redis_url: str) -> None:
    publish_status(redis_url, "manifest", ev.ManifestStatus(deployments=2), age_s=300)
    publish_status(redis_url, "bidengine", ev.BidEngineStatus(orders=1), age_s=5)

    output = invoke(redis_url, "status", "--max-age", "60")
    manifest = service_row(output, "manifest")
    assert "stale" in manifest and "5m ago" in manifest and "deployments 2" in manifest
    assert "ok" in service_row(output, "bidengine")
    assert "stale: manifest (older than 60s)" in output
    assert "missing: chain, cluster, balance, gateway, inventory, hostname, ip" in output

    relaxed = invoke(redis_url, "status", "--max-age", "600")
    assert "stale" not in relaxed and "ok" in service_row(relaxed, "manifest")


def test_status_without_any_status_still_exits_zero(redis_url: str) -> None:
    output = invoke(redis_url, "status")
    assert "missing: chain, bidengine, cluster, manifest, balance" in output


# -- orders and leases --------------------------------------------------------------------


def test_orders_show_what_was_decided_and_why(redis_url: str) -> None:
    publish(
        redis_url,
        [
            (CHAIN_EVENTS, ev.OrderCreated(order_id=order(1), height=10, event_index=0)),
            (CHAIN_EVENTS, ev.OrderCreated(order_id=order(2), height=10, event_index=1)),
            (CHAIN_EVENTS, ev.OrderCreated(order_id=order(3), height=11, event_index=0)),
            (
                BIDENGINE_EVENTS,
                ev.BidPlaced(
                    bid_id=lease(1).bid_id,
                    price=uakt("12.500000"),
                    deposit=Coin(denom="uakt", amount=500_000),
                ),
            ),
            (
                BIDENGINE_EVENTS,
                ev.BidDeclined(
                    order_id=order(2),
                    reasons=[ev.DeclineReason(code="price_above_max", message="20 > 12.5")],
                ),
            ),
        ],
    )

    output = invoke(redis_url, "orders")

    placed = row(output, str(order(1)))
    assert "bid" in placed and "12.5uakt" in placed
    declined = row(output, str(order(2)))
    assert "declined" in declined and "20 > 12.5" in declined
    assert "open" in row(output, str(order(3)))
    lines = output.splitlines()  # newest first: the last one changed comes first
    assert lines.index(declined) < lines.index(placed) < lines.index(row(output, str(order(3))))
    assert "3 order(s): bid 1, declined 1, open 1" in output


def test_leases_show_state_health_and_price(redis_url: str) -> None:
    publish(
        redis_url,
        [
            (BIDENGINE_EVENTS, won(1, "12.5")),
            (MANIFEST_EVENTS, manifest_received(1)),
            (
                CLUSTER_EVENTS,
                ev.DeploymentApplied(
                    lease_id=lease(1), manifest_version="ab" * 32, services=["web"]
                ),
            ),
            (CLUSTER_EVENTS, ev.DeploymentHealth(lease_id=lease(1), state="deployed")),
            (BIDENGINE_EVENTS, won(2, "7")),
            (
                CLUSTER_EVENTS,
                ev.DeploymentHealth(lease_id=lease(2), state="failed", message="web: pull failed"),
            ),
            (BIDENGINE_EVENTS, won(3, "3.25")),
            (CLUSTER_EVENTS, ev.LeaseTornDown(lease_id=lease(3))),
            (BIDENGINE_EVENTS, won(4, "1")),
            (MANIFEST_EVENTS, manifest_received(4)),
        ],
    )

    output = invoke(redis_url, "leases")

    deployed = row(output, str(lease(1)))
    assert "deployed" in deployed and "12.5uakt" in deployed and "web" in deployed
    failed = row(output, str(lease(2)))
    assert "failed" in failed and "7uakt" in failed and "web: pull failed" in failed
    assert "closed" in row(output, str(lease(3)))
    assert "manifest" in row(output, str(lease(4)))
    assert "4 lease(s): closed 1, deployed 1, failed 1, manifest 1" in output


def test_empty_streams_say_nothing_was_seen(redis_url: str) -> None:
    assert "no leases seen in the last 5000 entries" in invoke(redis_url, "leases")
    assert "no orders seen in the last 40 entries" in invoke(redis_url, "orders", "--last", "40")


def test_only_the_last_entries_are_folded(redis_url: str) -> None:
    publish(
        redis_url,
        [
            (CHAIN_EVENTS, ev.OrderCreated(order_id=order(n), height=n, event_index=0))
            for n in (1, 2, 3)
        ],
    )
    output = invoke(redis_url, "orders", "--last", "2")
    assert str(order(1)) not in output
    assert "open" in row(output, str(order(2))) and "open" in row(output, str(order(3)))


# -- events -------------------------------------------------------------------------------

SEEDED = [
    (CHAIN_EVENTS, ev.OrderCreated(order_id=order(1), height=10, event_index=0)),
    (  # another provider's bid: not ours to show
        CHAIN_EVENTS,
        ev.BidCreated(
            bid_id=LeaseID(owner=OWNER, dseq=1, gseq=1, oseq=1, provider=OTHER_PROVIDER).bid_id,
            price=uakt("9"),
            height=11,
            event_index=0,
        ),
    ),
    (
        BIDENGINE_EVENTS,
        ev.BidPlaced(
            bid_id=lease(1).bid_id, price=uakt("12.5"), deposit=Coin(denom="uakt", amount=5)
        ),
    ),
    (CLUSTER_EVENTS, ev.DeploymentHealth(lease_id=lease(1), state="pending", message="0/1 up")),
    (BALANCE_EVENTS, ev.WithdrawalRequested(lease_id=lease(1), reason="periodic")),
]
SEEDED_LINES = [
    f"chain      chain.order.created   order {order(1)} opened",
    f"bidengine  bid.placed            bid on {order(1)} at 12.5",
    f"cluster    deployment.health     {lease(1)} pending: 0/1 up",
    f"balance    withdrawal.requested  withdrawal from {lease(1)} (periodic)",
]


def event_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def test_events_are_printed_in_order_as_sentences(redis_url: str) -> None:
    publish(redis_url, SEEDED)

    lines = event_lines(invoke(redis_url, "events"))

    assert len(lines) == len(SEEDED_LINES), lines
    for line, expected in zip(lines, SEEDED_LINES, strict=True):
        assert expected in line
        dt.datetime.strptime(line[:19], "%Y-%m-%d %H:%M:%S")  # the time comes first
    assert str(OTHER_PROVIDER) not in "\n".join(lines)


def test_events_last_and_stream_narrow_the_lines(redis_url: str) -> None:
    publish(redis_url, SEEDED)

    last_two = event_lines(invoke(redis_url, "events", "--last", "2"))
    assert len(last_two) == 2
    assert SEEDED_LINES[2] in last_two[0] and SEEDED_LINES[3] in last_two[1]

    by_stream = event_lines(
        invoke(redis_url, "events", "--stream", "cluster", "--stream", CHAIN_EVENTS)
    )
    assert len(by_stream) == 2
    assert SEEDED_LINES[0] in by_stream[0] and SEEDED_LINES[2] in by_stream[1]

    result = runner.invoke(app, ["events", "--stream", "nope", "--redis-url", redis_url])
    assert result.exit_code == 2
    assert "unknown stream nope" in result.output


def test_events_follow_prints_new_events_until_ctrl_c(redis_url: str) -> None:
    publish(redis_url, SEEDED[:1])
    command = [sys.executable, "-m", "akcli", "events", "--follow", "--redis-url", redis_url]
    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,  # noqa: PLW1509 - a signal disposition, before exec
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        reader = threading.Thread(target=pump, args=(process.stdout, lines))
        reader.start()
        try:
            assert SEEDED_LINES[0] in next_line(lines, timeout_s=30)  # the recent ones first
            publish(redis_url, SEEDED[1:3])  # another provider's bid (hidden), then ours
            assert SEEDED_LINES[1] in next_line(lines, timeout_s=10)
        finally:
            process.send_signal(signal.SIGINT)
            stopped = stop(process)
            reader.join(timeout=10)
        stderr = process.stderr.read()
    assert stopped, f"Ctrl-C did not stop --follow within 30 s: {stderr}"
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "Aborted" not in stderr


def interruptible() -> None:
    """Ctrl-C as at a terminal. A test run may itself ignore SIGINT (a run started in the
    background of a non-interactive shell did, from its first test on); every process it
    starts inherits that, and a Python program that starts with SIGINT ignored keeps it
    ignored (as under nohup): the command would follow forever."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop(process: subprocess.Popen[str]) -> bool:
    """Whether the process ended within 30 s of its signal; killed if not, so that a test
    that already timed out cannot wait for it forever."""
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False
    return True


def pump(out: IO[str], lines: queue.Queue[str]) -> None:
    for line in out:
        lines.put(line)


def next_line(lines: queue.Queue[str], timeout_s: float) -> str:
    try:
        return lines.get(timeout=timeout_s)
    except queue.Empty:
        raise AssertionError(f"no line within {timeout_s}s") from None


def test_status_shows_the_balance_services_earnings_and_a_low_balance(redis_url: str) -> None:
    publish_status(
        redis_url,
        "balance",
        ev.BalanceStatus(
            leases=3,
            earned={"uact": 1_250_000},
            unpaid={"uact": 30_000},
            swept={"uakt": 7_000_000},
            below_minimum=["uakt"],
        ),
    )
    balance = service_row(invoke(redis_url, "status"), "balance")
    assert "ok" in balance
    assert (
        "leases 3, earned 1250000uact, unpaid 30000uact, swept 7000000uakt, "
        "below AP_MINIMUM_BALANCE: uakt" in balance
    )
