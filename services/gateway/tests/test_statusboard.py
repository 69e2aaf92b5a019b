"""The status board on a real Redis: what it serves, when it changes, how it is awaited."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from akbus import Bus
from akbus.testing import eventually
from akgateway.handlers import StatusBoard, status_fast_path
from aktypes.events import BidEngineStatus, Envelope, ManifestStatus

SERVICES = ("bidengine", "manifest")


def render(statuses: Mapping[str, Envelope[Any] | None], now: dt.datetime) -> dict[str, Any]:
    return {
        name: None if e is None else e.payload.model_dump(mode="json", exclude={"type"})
        for name, e in statuses.items()
    } | {"rendered": now.isoformat()}


async def test_the_board_serves_the_latest_statuses_and_wakes_watchers(bus: Bus) -> None:
    await bus.publish_status("bidengine", BidEngineStatus(orders=1))
    await bus.publish_status("bidengine", BidEngineStatus(orders=2))
    board = StatusBoard(bus, SERVICES, render)
    task = asyncio.create_task(board.run())
    try:
        await asyncio.wait_for(board.ready.wait(), 10)
        body = json.loads(board.body())
        assert body["bidengine"] == {"orders": 2}
        assert body["manifest"] is None
        assert board.body() is board.body()  # rendered once while nothing changes
        version = board.version
        waiter = asyncio.create_task(board.changed(version, timeout_s=10))
        await bus.publish_status("manifest", ManifestStatus(deployments=3))
        assert await waiter > version
        assert json.loads(board.body())["manifest"] == {"deployments": 3}
        assert await board.changed(board.version, timeout_s=0.05) == board.version  # timeout
    finally:
        task.cancel()


async def test_get_status_is_answered_from_memory_and_the_rest_goes_through(bus: Bus) -> None:
    board = StatusBoard(bus, SERVICES, render)
    task = asyncio.create_task(board.run())
    reached: list[str] = []

    async def app(scope: Any, _receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def call(path: str, method: str = "GET") -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "path": path, "method": method}
        await status_fast_path(app, board)(scope, None, send)  # type: ignore[arg-type]
        return sent

    try:
        await asyncio.wait_for(board.ready.wait(), 10)
        await bus.publish_status("bidengine", BidEngineStatus(orders=7))
        await eventually(lambda: board.version > 0, what="the new status on the board")
        start, body = await call("/status")
        assert start["status"] == 200
        assert json.loads(body["body"])["bidengine"] == {"orders": 7}
        assert dict(start["headers"])[b"content-length"] == str(len(body["body"])).encode()
        assert reached == []
        await call("/status", "POST")
        await call("/address")
        assert reached == ["/status", "/address"]
    finally:
        task.cancel()
