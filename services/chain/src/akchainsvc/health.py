"""``/healthz`` (the process runs), ``/readyz`` (it can do its job) and ``/metrics``."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

Readiness = Callable[[], list[str]]  # what is not ready yet; empty when ready


def health_app(not_ready: Readiness) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        problems = not_ready()
        if problems:
            return web.json_response({"status": "not ready", "problems": problems}, status=503)
        return web.json_response({"status": "ready"})

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app
