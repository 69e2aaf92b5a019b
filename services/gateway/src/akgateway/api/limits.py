"""What one client may hold of the gateway: bytes of a request body, time on a connection,
websockets and shells at once.

- :func:`body_limit` refuses a body over its route's limit with 413 before the app sees it
  (from ``Content-Length``, before authentication) and stops reading a chunked body as soon
  as it passes the limit; the answer closes the connection, so nothing more is read. A body
  at most 1 MiB over its limit (unless the client waits for ``100 Continue``), and a body
  within its limit that the answer came before (a 401, say), is read and dropped first (for
  at most 2 s), so that a client that sends its whole body before reading gets the answer
  rather than a reset connection.
- :class:`Timeouts` are the connection's clocks (:mod:`akgateway.adapters.server` runs
  them): the TLS handshake, a request's headers, its body, and a kept-alive connection's
  idle time. A connection that goes quiet or stalls is closed.
- :class:`TenantSlots` counts each tenant's open websockets and shells; one over the limit is
  refused before the upgrade with 429.
- :class:`InputRate` paces each tenant's shell input over all its shells: a tenant that sends
  faster waits, its frames held back in its own connection, so one tenant's input cannot take
  the gateway's or the cluster's time from the others.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from akgateway import metrics
from akgateway.errors import BodyTooLarge, TooManyRequests, too_large

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

MANIFEST_ROUTE = re.compile(r"/deployment/[^/]+/manifest")


CLOSE = (b"connection", b"close")


async def _refuse(send: Send, status: int, message: str) -> None:
    body = ('{"message":"' + message + '"}').encode()  # message: plain ASCII, no quotes
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        CLOSE,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


LINGER_BYTES = 1024 * 1024  # read and dropped for a client whose body is just over the limit
LINGER_S = 2.0  # the most time spent reading a body only to drop it


async def _discard(receive: Receive, most: int) -> bool:
    """Read what is left of the request's body, at most ``most`` bytes within ``LINGER_S``,
    dropping it (uvicorn holds 64 KiB of it at most): whether it ended in time. A client
    that sends its whole body before it reads can then read the answer, where a connection
    closed on unread bytes would be reset under it."""
    dropped = 0
    try:
        async with asyncio.timeout(LINGER_S):
            while dropped <= most:
                message = await receive()
                if message["type"] != "http.request":
                    return False
                dropped += len(message.get("body", b""))
                if not message.get("more_body", False):
                    return dropped <= most
    except TimeoutError:
        return False
    return False


def route_limit(manifest: int, other: int) -> Callable[[str, str], int]:
    """The gateway's limits: ``manifest`` bytes for ``PUT /deployment/…/manifest``,
    ``other`` for every other request."""

    def limit(method: str, path: str) -> int:
        return manifest if method == "PUT" and MANIFEST_ROUTE.fullmatch(path) else other

    return limit


def body_limit(app: ASGIApp, limit_of: Callable[[str, str], int], *, listener: str) -> ASGIApp:
    """``app`` behind a body limit (``limit_of(method, path)``, bytes)."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        limit = limit_of(scope["method"], scope["path"])
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            metrics.BODY_REFUSED.labels(listener).inc()
            waits = (b"expect", b"100-continue") in scope["headers"]  # sends nothing yet
            if not waits and declared.isdigit() and int(declared) <= limit + LINGER_BYTES:
                await _discard(receive, LINGER_BYTES + limit)  # a client just over the limit
            await _refuse(send, 413, too_large(limit))
            return
        received = 0
        unread = declared not in (None, b"0") or any(
            k == b"transfer-encoding" for k, _ in scope["headers"]
        )

        async def limited() -> Message:
            nonlocal received, unread
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    metrics.BODY_REFUSED.labels(listener).inc()
                    raise BodyTooLarge(limit)
                unread = unread and message.get("more_body", False)
            return message

        async def answer(message: Message) -> None:
            nonlocal unread
            if message["type"] == "http.response.start" and unread:
                # answered before the body was read (a 401, say): the rest of a body within
                # the limit is read and dropped, so that the client, still sending, reads
                # the answer; past the limit or its time, the connection is closed instead
                if await _discard(receive, limit - received):
                    unread = False
                else:
                    message = {**message, "headers": [*message.get("headers", ()), CLOSE]}
            await send(message)

        await app(scope, limited, answer)

    return asgi


@dataclass(frozen=True)
class Timeouts:
    """Seconds a connection may take for each step before it is closed."""

    handshake: float = 10.0  # the TLS handshake
    headers: float = 10.0  # a request's headers, from its first byte (or the connection's start)
    body: float = 30.0  # a request's body, from the end of its headers
    idle: float = 30.0  # between requests on a kept-alive connection


class TenantSlots:
    """Each tenant's open websockets (``websockets`` at most) and shells among them
    (``shells`` at most)."""

    def __init__(self, websockets: int, shells: int) -> None:
        self.limits = {"any": websockets, "shell": shells}
        self.held: Counter[tuple[str, str]] = Counter()

    def take(self, tenant: str, stream: str) -> Callable[[], None]:
        """One slot for ``tenant``'s ``stream``; the function that gives it back.
        TooManyRequests when the tenant holds its limit already."""
        kinds = ["any", "shell"] if stream == "shell" else ["any"]
        for kind in kinds:
            if self.held[tenant, kind] >= self.limits[kind]:
                metrics.TENANT_LIMITED.labels(stream).inc()
                what = "shells" if kind == "shell" else "websockets"
                raise TooManyRequests(
                    f"you have {self.limits[kind]} {what} open, the most this provider allows "
                    "at once: close one first"
                )
        for kind in kinds:
            self.held[tenant, kind] += 1
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            if given_back:
                return
            given_back = True
            for kind in kinds:
                self.held[tenant, kind] -= 1
                if not self.held[tenant, kind]:
                    del self.held[tenant, kind]

        return give_back

    def counts(self) -> tuple[int, int, int]:
        """Websockets and shells open, and the tenants holding them."""
        websockets = sum(n for (_, kind), n in self.held.items() if kind == "any")
        shells = sum(n for (_, kind), n in self.held.items() if kind == "shell")
        return websockets, shells, len({tenant for tenant, _ in self.held})


class InputRate:
    """Each tenant's shell input: at most ``rate`` bytes per second over all its shells, after
    a burst of one second's worth; a frame counts as at least ``FRAME`` bytes (a frame costs
    the same work however small). ``rate`` 0: no pacing."""

    FRAME = 1024

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.ready_at: dict[str, float] = {}  # when each tenant's input is paid for

    async def spend(self, tenant: str, size: int) -> None:
        """Account ``size`` bytes of ``tenant``'s input; wait while it is ahead of its rate."""
        wait = self.charge(tenant, size, asyncio.get_running_loop().time())
        if wait > 0:
            await asyncio.sleep(wait)

    def charge(self, tenant: str, size: int, now: float) -> float:
        """Account ``size`` bytes of ``tenant``'s input at ``now``: the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        if len(self.ready_at) > 4096:  # tenants that are paid up hold no entry
            self.ready_at = {t: at for t, at in self.ready_at.items() if at > now}
        ready = max(now, self.ready_at.get(tenant, now)) + max(size, self.FRAME) / self.rate
        self.ready_at[tenant] = ready
        return max(0.0, ready - now - 1.0)  # past the burst: until this frame is within it
