"""The runtime as a real process (the toy service): logs, readiness, supervision, signals."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from akbus import Bus, RedisSettings
from akservice.testing import ServiceProcess, eventually, eventually_sync, http_status
from aktypes.events import OrderCreated, streams
from aktypes.ids import OrderID
from aktypes.testing import address

ToyFactory = Callable[..., ServiceProcess]


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def publish_order(redis_url: str, dseq: int) -> str:
    async def run() -> str:
        bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
        try:
            order = OrderCreated(
                order_id=OrderID(owner=address(1), dseq=dseq, gseq=1, oseq=1),
                height=dseq,
                event_index=0,
            )
            return await bus.publish(streams.CHAIN_EVENTS, order)
        finally:
            await bus.close()

    return asyncio.run(run())


def problems(process: ServiceProcess) -> list[str]:
    """What ``/readyz`` says is not ready (asserting it answers 503 while anything is)."""
    status, body = http_status(f"http://{process.env['AP_TOY_HEALTH_LISTEN']}/readyz")
    assert isinstance(body, dict)
    found: list[str] = body.get("problems", [])
    assert (status == 503) == bool(found)
    return found


def stop_timed(process: Any, sig: int = signal.SIGTERM) -> tuple[int | None, float]:
    started = time.monotonic()
    code = process.stop(sig, timeout=15)
    return code, time.monotonic() - started


def test_logs_are_json_lines_with_the_service_the_entry_and_its_ids(
    toy: ToyFactory, redis_url: str
) -> None:
    process = toy()
    process.start()
    entry = publish_order(redis_url, 42)
    line = eventually_sync(
        lambda: next((r for r in json_lines(process.log()) if r["event"] == "order seen"), None),
        what="the handler's log line",
    )
    assert line["service"] == "toy"
    assert line["stream"] == streams.CHAIN_EVENTS and line["entry"] == entry
    assert line["type"] == "chain.order.created"
    assert line["order_id"].endswith("/42/1/1") and line["level"] == "info"
    code, seconds = stop_timed(process)
    assert code == 0 and seconds < 3
    assert "Traceback" not in process.log()
    assert json_lines(process.log())[-1]["event"] == "stopped"


def test_a_services_own_routes_are_served_beside_the_health_endpoints(
    toy: ToyFactory, redis_url: str
) -> None:
    process = toy()
    process.start()
    listen = process.env["AP_TOY_HEALTH_LISTEN"]
    publish_order(redis_url, 7)
    status, body = eventually_sync(
        lambda: http_status(f"http://{listen}/v1/orders"),
        what="the order in the service's own route",
        until=lambda answer: bool(answer[1]["orders"]),
    )
    assert status == 200 and body["orders"][0].endswith("/7/1/1")
    status, text = http_status(f"http://{listen}/v1/nothing")
    assert status == 404 and "/v1/orders" in str(text)
    assert http_status(f"http://{listen}/healthz")[0] == 200


async def test_a_status_is_published_on_each_wake_and_none_is_nothing(
    toy: ToyFactory, redis_url: str
) -> None:
    process = toy()  # a status a minute: what arrives sooner came from a wake
    process.start()
    poke = f"http://{process.env['AP_TOY_HEALTH_LISTEN']}/v1/poke"
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
    try:
        assert await bus.status("bidengine") is None  # the first turn had nothing to say
        for count in (1, 2):
            request = urllib.request.Request(poke, method="POST")
            answer = await asyncio.to_thread(lambda r=request: urllib.request.urlopen(r).read())  # noqa: S310 - local
            assert json.loads(answer) == {"pokes": count}
            latest = await eventually(
                lambda: bus.status("bidengine"),
                what=f"status {count}",
                until=lambda envelope, n=count: (
                    envelope is not None and envelope.payload.orders == n
                ),
            )
            assert latest is not None
        assert await bus.backend.length(streams.status_stream("bidengine")) == 2  # one per wake
    finally:
        await bus.close()


def test_a_supervised_task_that_fails_stops_the_process_with_a_clear_line(
    toy: ToyFactory,
) -> None:
    process = toy(AP_TOY_MODE="die", ready="/healthz")
    process.start()
    assert process.process is not None
    assert process.process.wait(15) == 1
    failed = [r for r in json_lines(process.log()) if r["event"].startswith("task doomed failed")]
    assert len(failed) == 1 and failed[0]["level"] == "error"
    assert "RuntimeError: the disk is on fire" in failed[0]["exception"]


def test_sigterm_while_waiting_for_a_dependency_stops_at_once(toy: ToyFactory) -> None:
    process = toy(AP_TOY_MODE="wait", ready="/healthz")
    process.start()
    problem = eventually_sync(
        lambda: next((p for p in problems(process) if "dependency" in p), None),
        what="readiness naming the dependency",
    )
    assert problem.startswith("waiting for the dependency at 127.0.0.1:9: ")
    code, seconds = stop_timed(process)
    assert code == 0 and seconds < 3, process.log()
    assert "Traceback" not in process.log()


def test_sigterm_while_redis_is_unreachable_stops_within_the_drain_timeout(
    toy: ToyFactory,
) -> None:
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    process = toy(REDIS_URL=f"redis://:hunter2@127.0.0.1:{dead}/0", ready="/healthz")
    process.start()
    problem = eventually_sync(
        lambda: next((p for p in problems(process) if "Redis" in p), None),
        what="readiness naming Redis",
    )
    assert f"redis://:***@127.0.0.1:{dead}/0" in problem
    eventually_sync(lambda: "waiting for Redis" in process.log(), what="a waiting log line")
    assert "hunter2" not in process.log()
    for sig in (signal.SIGINT, signal.SIGTERM):
        if not process.running():
            process.start()
        code, seconds = stop_timed(process, sig)
        assert code == 0 and seconds < 3, process.log()
    assert "Traceback" not in process.log()


def test_a_port_in_use_is_one_line(toy: ToyFactory) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = toy(AP_TOY_HEALTH_LISTEN=f"127.0.0.1:{port}")
        process.start(wait_ready=False)
        assert process.process is not None
        assert process.process.wait(15) == 1
    (line,) = [r for r in json_lines(process.log()) if r["level"] == "error"]
    assert line["event"] == (
        f"cannot serve /healthz on 127.0.0.1:{port} (AP_TOY_HEALTH_LISTEN): "
        "the address is already in use"
    )
    assert "Traceback" not in process.log()


def test_a_restarted_process_keeps_its_consumer_name_and_a_twin_is_refused(
    toy: ToyFactory, redis_url: str
) -> None:
    first = toy(AP_INSTANCE_ID="a")
    first.start()
    twin = toy(AP_INSTANCE_ID="a")
    twin.start(wait_ready=False)
    assert twin.process is not None and twin.process.wait(15) == 1
    assert "runs as consumer toy-" in twin.log() and "own AP_INSTANCE_ID" in twin.log()
    first.kill()  # no chance to release its lease
    first.start()  # the same name at once: the dead predecessor's lease is taken over
    names = {
        r.get("consumer") for r in json_lines(first.log()) if r["event"] == "toy service starting"
    }
    assert len(names) == 1 and next(iter(names)).endswith("-a")
    other = toy(AP_INSTANCE_ID="b")
    other.start()  # another id on the same host is another consumer
    assert other.running()


async def test_eventually_returns_what_it_waited_for() -> None:
    found = await eventually(lambda: [1, 2], what="a list")
    assert found == [1, 2]
