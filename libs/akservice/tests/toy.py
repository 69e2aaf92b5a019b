"""A small service on the runtime, run as a real process by the tests (``python toy.py``).

``AP_TOY_MODE``: ``serve`` handles OrderCreated (logging with the order's ids bound);
``die`` also runs a task that fails after ``AP_TOY_TICK``; ``wait`` first waits for a TCP
dependency at ``AP_TOY_DEPENDENCY`` (host:port) that nothing serves. ``GET /v1/orders`` on the
health port lists the orders seen (a service's own route). Its status (on the bid engine's
status stream, as status streams are the provider's parts' own; every
``AP_TOY_STATUS_EVERY``) counts the ``POST /v1/poke`` requests, each of which
wakes the publisher; it has none until the first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from aiohttp import web
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from akbus import Message
from akservice import Duration, Runtime, ServiceSpec, main
from aktypes.events import BidEngineStatus, OrderCreated
from aktypes.events.streams import CHAIN_EVENTS

log = logging.getLogger("toy")


class ToySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AP_TOY_", extra="ignore")

    mode: Literal["serve", "die", "wait"] = Field(default="serve", description="what to do")
    dependency: str = Field(default="127.0.0.1:9", description="what 'wait' waits for")
    tick: Duration = Field(default=0.2, gt=0, description="when 'die' dies")
    status_every: Duration = Field(default=60.0, gt=0, description="status interval")


async def start(rt: Runtime[ToySettings]) -> None:
    if rt.settings.mode == "wait":
        host, _, port = rt.settings.dependency.rpartition(":")

        async def connect() -> None:
            _, writer = await asyncio.open_connection(host, int(port))
            writer.close()

        await rt.wait_for(
            f"the dependency at {rt.settings.dependency}", connect, retry_on=(OSError,)
        )
    orders = rt.subscriber(CHAIN_EVENTS)
    seen: list[str] = []

    async def orders_seen(_: web.Request) -> web.Response:
        return web.json_response({"orders": seen})

    rt.route("GET", "/v1/orders", orders_seen)
    poked = asyncio.Event()
    pokes = 0

    async def poke(_: web.Request) -> web.Response:
        nonlocal pokes
        pokes += 1
        poked.set()
        return web.json_response({"pokes": pokes})

    async def status() -> BidEngineStatus | None:
        return BidEngineStatus(orders=pokes) if pokes else None

    rt.route("POST", "/v1/poke", poke)
    rt.publish_status(status, rt.settings.status_every, wake=poked, name="bidengine")

    @orders.handler(OrderCreated)
    async def on_order(msg: Message[OrderCreated]) -> None:
        seen.append(str(msg.payload.order_id))
        log.info("order seen")

    if rt.settings.mode == "die":

        async def doomed() -> None:
            await asyncio.sleep(rt.settings.tick)
            raise RuntimeError("the disk is on fire")

        rt.supervise(doomed(), "doomed")


SPEC = ServiceSpec(
    name="toy",
    title="toy service",
    summary="a service for the runtime's tests",
    distribution="akservice",
    settings=ToySettings,
    health_listen="127.0.0.1:8099",
    start=start,
)

if __name__ == "__main__":
    main(SPEC)
