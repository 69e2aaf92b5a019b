"""The REST API on the health port: ``GET /v1/inventory`` and ``GET /v1/inventory/watch``.

``/v1/inventory`` answers the current :class:`~aktypes.events.InventoryCluster` as JSON (the
shape of the bus event), or 503 with the reason before the first full sync.
``/v1/inventory/watch`` streams newline-delimited JSON: the current inventory first, then
each new one (a reader that falls behind gets the latest, not every one in between); it
ends when the operator stops.

A standby replica answers ``/v1/inventory`` with what its leader last published (the
retained status on the bus), and ``/v1/inventory/watch`` with 503 naming the leader.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from akbus import ConnectionLost
from akoperators.inventory.publisher import Publisher
from akservice import Runtime
from aktypes.events import InventoryCluster


def _standby(rt: Runtime[Any]) -> bool:
    return rt.leadership is not None and rt.leadership.role == "standby"


async def _leaders(rt: Runtime[Any]) -> web.Response:
    """A standby's answer: the inventory its leader last published."""

    def unavailable(problem: str) -> web.Response:
        return web.json_response(
            {"status": "standby", "problems": [problem], **rt.role()}, status=503
        )

    try:
        retained = await rt.bus.status("inventory")
    except ConnectionLost as exc:
        return unavailable(f"Redis: {exc}")
    current = retained.payload if retained is not None else None
    if not isinstance(current, InventoryCluster):
        return unavailable("the leader has not published an inventory yet")
    return web.Response(text=current.model_dump_json(), content_type="application/json")


def serve(rt: Runtime[Any], publisher: Publisher) -> None:
    async def inventory(_: web.Request) -> web.Response:
        current = publisher.current
        if current is None and _standby(rt):
            return await _leaders(rt)
        if current is None:
            return web.json_response(
                {"status": "not synced", "problems": publisher.not_ready()}, status=503
            )  # as soon as it is built, even if the bus or the labels lag behind
        return web.Response(text=current.model_dump_json(), content_type="application/json")

    async def watch(request: web.Request) -> web.StreamResponse:
        if _standby(rt):
            return web.json_response(
                {"status": "standby", "problems": ["a standby streams nothing"], **rt.role()},
                status=503,
            )
        if publisher.current is None:
            return web.json_response(
                {"status": "not synced", "problems": publisher.not_ready()}, status=503
            )
        response = web.StreamResponse(
            headers={"Content-Type": "application/x-ndjson", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        sent = -1
        try:
            while (current := await publisher.next_change(sent, rt.stopping)) is not None:
                await response.write(current.model_dump_json().encode() + b"\n")
                sent = current.generation
        except ConnectionError:  # the reader went away
            return response
        await response.write_eof()
        return response

    rt.route("GET", "/v1/inventory", inventory)
    rt.route("GET", "/v1/inventory/watch", watch)
