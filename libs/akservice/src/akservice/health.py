"""``/healthz`` (the process runs), ``/readyz`` (it can do its job now) and ``/metrics``.

``/readyz`` answers 503 with the list of what is wrong (Redis unreachable, a dependency
still awaited, the service still starting) and 200 once nothing is; Kubernetes stops
sending work to a pod that is not ready and restarts one whose ``/healthz`` fails.
"""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

Readiness = Callable[[], list[str]]  # what is not ready yet; empty when ready
Routes = dict[tuple[str, str], Callable[[web.Request], Awaitable[web.StreamResponse]]]
"""A service's own routes beside the three, by (method, path): an operator's REST API."""


class StartupError(Exception):
    """The process cannot start; the message is one line for the operator."""


Details = Callable[[], dict[str, str]]
"""What ``/readyz`` adds to its answer (a part with a standby: its role and the leader)."""


def health_app(
    not_ready: Readiness, routes: Routes | None = None, details: Details | None = None
) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        problems = not_ready()
        extra = details() if details is not None else {}
        if problems:
            return web.json_response(
                {"status": "not ready", "problems": problems, **extra}, status=503
            )
        return web.json_response({"status": "ready", **extra})

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    if routes is not None:
        extra = routes

        async def dispatch(request: web.Request) -> web.StreamResponse:
            handler = extra.get((request.method, request.path))
            if handler is None:
                known = sorted({path for _, path in extra} | {"/healthz", "/readyz", "/metrics"})
                raise web.HTTPNotFound(
                    text=f"no route {request.method} {request.path}; known: {', '.join(known)}"
                )
            return await handler(request)

        app.router.add_route("*", "/{tail:.*}", dispatch)
    return app


class HealthServer:
    """The three endpoints on ``host:port``; ``variable`` names the setting in errors."""

    def __init__(
        self,
        host: str,
        port: int,
        not_ready: Readiness,
        *,
        variable: str,
        routes: Routes | None = None,
        details: Details | None = None,
    ) -> None:
        self.host, self.port, self.variable = host, port, variable
        self._runner = web.AppRunner(health_app(not_ready, routes, details), access_log=None)

    async def start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            reason = (
                "the address is already in use"
                if exc.errno == errno.EADDRINUSE
                else (exc.strerror or str(exc))
            )
            raise StartupError(
                f"cannot serve /healthz on {self.host}:{self.port} ({self.variable}): {reason}"
            ) from None

    async def stop(self) -> None:
        await self._runner.cleanup()
