"""The operator's dashboard: its own listener (``AP_GATEWAY_DASHBOARD_LISTEN``, loopback by
default), its own token, nothing of the tenant API.

:class:`DashboardFeed` folds the event streams into an :class:`aktypes.overview.Overview`
(the last events at start, then every new one) and samples capacity use whenever the
cluster's status changes. The page (plain HTML and JavaScript in ``static/``) loads
``/api/view`` once and then follows ``/api/stream``: server-sent events carrying the whole
view each time something changed (at most a few times a second), so it never reloads.

The token comes in the URL once (``/?token=…``): that first load sets an HTTP-only,
SameSite=Strict cookie (Secure on HTTPS and loopback) and redirects to the address without
the token, so it leaves the address bar and history; API clients can send
``Authorization: Bearer``. The gateway never logs the token (access lines drop query values).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hmac
import json
from collections import deque
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sse_starlette.sse import EventSourceResponse

from akbus import Bus
from akgateway.domain.overview import capacity_sample, dashboard_view
from akgateway.errors import DashboardDenied
from akgateway.handlers import StatusBoard
from aktypes.events import ClusterStatus
from aktypes.overview import STREAMS, Overview

COOKIE = "akash_provider_dashboard"
HISTORY = 2000  # events read back at start, per stream
PUSH_EVERY_S = 0.25  # coalesce bursts of events into one push


class DashboardFeed:
    """The overview and capacity history, kept current from the bus and the status board."""

    def __init__(self, bus: Bus, board: StatusBoard, *, samples: int = 720) -> None:
        self.bus = bus
        self.board = board
        self.overview = Overview()
        self.capacity: deque[dict[str, Any]] = deque(maxlen=samples)
        self._version = 0
        self._changed = asyncio.Condition()
        self.ready = asyncio.Event()

    @property
    def version(self) -> int:
        return self._version

    async def _bump(self) -> None:
        self._version += 1
        async with self._changed:
            self._changed.notify_all()

    async def run_events(self) -> None:
        """Fold the streams: their recent history, then each new event (a supervised task)."""
        async for stream, envelope in self.bus.recent_then_follow(STREAMS, last=HISTORY):
            self.overview.apply(stream, envelope)
            await self._bump()

    async def run_capacity(self) -> None:
        """A capacity sample per new cluster status (a supervised task)."""
        await self.board.ready.wait()
        self.ready.set()
        seen = -1
        last = None
        while True:
            seen = await self.board.changed(seen, timeout_s=30.0)
            cluster = self.board.snapshot().get("cluster")
            if (
                cluster is not None
                and cluster is not last
                and isinstance(cluster.payload, ClusterStatus)
            ):
                last = cluster
                self.capacity.append(capacity_sample(cluster.payload, cluster.time))
            await self._bump()

    async def changed(self, after: int, timeout_s: float) -> int:
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):  # not wait_for (3.11 cancellations)
                    await self._changed.wait_for(lambda: self._version > after)
        return self._version

    def view(self) -> dict[str, Any]:
        return dashboard_view(
            self.board.snapshot(),
            self.overview.snapshot(),
            list(self.capacity),
            dt.datetime.now(dt.UTC),
        )


def _static(name: str) -> str:
    return resources.files("akgateway").joinpath("static", name).read_text()


PRIVATE = {"cache-control": "no-store", "referrer-policy": "no-referrer"}
LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")


def secure_origin(request: Request) -> bool:
    """Whether the browser keeps a ``Secure`` cookie from this address: HTTPS, or loopback
    (which browsers trust as secure); on plain HTTP elsewhere it would drop the cookie."""
    host = request.url.hostname or ""
    return request.url.scheme == "https" or host in LOOPBACK or host.startswith("127.")


def create_dashboard(feed: DashboardFeed, token: str) -> FastAPI:
    app = FastAPI(title="Akash provider dashboard", docs_url=None, redoc_url=None, openapi_url=None)

    def authorized(request: Request) -> None:
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or ""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            given = header[7:].strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise DashboardDenied

    app.router.dependencies.append(Depends(authorized))

    @app.exception_handler(DashboardDenied)
    async def denied(request: Request, _: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"message": "the dashboard needs its token"}, status_code=401)
        return HTMLResponse(
            "<!doctype html><title>Dashboard</title><p>Open the dashboard with its token: "
            "<code>/?token=…</code>, the token being <code>AP_GATEWAY_DASHBOARD_TOKEN</code> "
            "or the one the gateway wrote to <code>dashboard.token</code> in its TLS folder "
            "(its log names the file).</p>",
            status_code=401,
        )

    @app.get("/", response_class=HTMLResponse)
    async def page(request: Request) -> Response:
        if "token" not in request.query_params:
            return HTMLResponse(_static("dashboard.html"), headers=PRIVATE)
        # the token is exchanged for the cookie, and the address bar (and history) lose it
        rest = request.url.remove_query_params("token")
        target = rest.path + (f"?{rest.query}" if rest.query else "")
        response = RedirectResponse(target, status_code=303, headers=PRIVATE)
        response.set_cookie(
            COOKIE,
            token,
            httponly=True,
            samesite="strict",
            secure=secure_origin(request),
            path="/",
        )
        return response

    @app.get("/dashboard.js")
    async def script() -> Response:
        return Response(_static("dashboard.js"), media_type="text/javascript")

    @app.get("/api/view")
    async def view() -> JSONResponse:
        return JSONResponse(feed.view())

    @app.get("/api/stream")
    async def stream() -> EventSourceResponse:
        async def views() -> AsyncIterator[dict[str, str]]:
            seen = -1
            while True:
                seen = await feed.changed(seen, timeout_s=5.0)
                yield {"event": "view", "data": json.dumps(feed.view(), separators=(",", ":"))}
                await asyncio.sleep(PUSH_EVERY_S)

        return EventSourceResponse(views(), ping=15)

    return app
