"""The latest status of every service, and of every lease, kept in memory and current.

Services publish their status now and then on ``akash.provider.<service>.status``; reading
those streams on every request put one Redis round trip per service into each ``GET
/status``. :class:`StatusBoard` follows the streams instead (``Bus.follow_statuses``): a
request reads memory, and the ``/status`` body is rendered once per change (and at least
once a second, since how old a status is decides whether it is reported) and served as
bytes by :func:`status_fast_path` ahead of the framework.

Watchers (gRPC ``StreamStatus``, the dashboard) wait on :meth:`StatusBoard.changed` for the
next change. When Redis is unreachable the board keeps what it had: every status then ages
and ``/status`` reports each service as stale once it is older than the allowed age.

:class:`LeaseStatuses` holds each lease's status as the cluster service publishes it from
its Kubernetes watches (``akash.provider.cluster.lease-status``, read with a plain XREAD by
every gateway, and the hash of current values at start). A status is served only while the
cluster confirmed it, or read it, less than ``max_age`` ago; past that the caller asks the
cluster as before (:func:`akgateway.api.routes.lease_report`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from akbus import Bus
from akgateway import metrics
from aktypes.events import (
    Envelope,
    LeaseStatusChanged,
    LeaseStatusesConfirmed,
    LeaseStatusGone,
    LeaseStatusReport,
)
from aktypes.events.streams import CLUSTER_LEASE_STATUS
from aktypes.events.streams import CLUSTER_LEASE_STATUS_HASH as STATUS_HASH
from aktypes.ids import LeaseID

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("akgateway.handlers")

Render = Callable[[Mapping[str, Envelope[Any] | None], dt.datetime], dict[str, Any]]

RERENDER_S = 1.0  # a rendered body is reused this long at most: ages in it must stay true


class StatusBoard:
    """The latest status envelope of each of ``services`` (None: never published)."""

    def __init__(self, bus: Bus, services: tuple[str, ...], render: Render) -> None:
        self._bus = bus
        self._latest: dict[str, Envelope[Any] | None] = dict.fromkeys(services)
        self._render = render
        self._version = 0
        self._changed = asyncio.Condition()
        self._body: tuple[int, float, bytes] | None = None  # (version, when, body)
        self.ready = asyncio.Event()

    @property
    def services(self) -> tuple[str, ...]:
        return tuple(self._latest)

    @property
    def version(self) -> int:
        """Grows by one with every status received."""
        return self._version

    def snapshot(self) -> dict[str, Envelope[Any] | None]:
        return dict(self._latest)

    async def run(self) -> None:
        """Read the latest statuses, then follow the streams (a supervised task)."""
        services = list(self._latest)
        latest = await asyncio.gather(*(self._bus.status(s) for s in services))
        self._latest.update(zip(services, latest, strict=True))
        self.ready.set()
        async for service, envelope in self._bus.follow_statuses(services):
            if envelope == self._latest[service]:
                continue  # the one read above, given again as the stream's latest
            self._latest[service] = envelope
            self._version += 1
            async with self._changed:
                self._changed.notify_all()

    async def changed(self, after: int, timeout_s: float | None = None) -> int:
        """Wait until the board's version is past ``after`` (or ``timeout_s``); the version."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):  # not wait_for (3.11 cancellations)
                    await self._changed.wait_for(lambda: self._version > after)
        return self._version

    def body(self, now: dt.datetime | None = None) -> bytes:
        """The rendered ``/status`` JSON, reused while nothing changed for up to a second."""
        cached = self._body
        clock = time.monotonic()
        if cached is not None and cached[0] == self._version and clock - cached[1] < RERENDER_S:
            return cached[2]
        rendered = json.dumps(
            self._render(self._latest, now or dt.datetime.now(dt.UTC)), separators=(",", ":")
        ).encode()
        self._body = (self._version, clock, rendered)
        return rendered


class HeldStatus:
    """One lease's status as received, and its REST body once rendered."""

    __slots__ = ("body", "checked_at", "report")

    def __init__(self, changed: LeaseStatusChanged) -> None:
        self.report = LeaseStatusReport(
            lease_id=changed.lease_id,
            services=changed.services,
            forwarded_ports=changed.forwarded_ports,
            ips=changed.ips,
        )
        self.checked_at = changed.checked_at
        self.body: bytes | None = None


class LeaseStatuses:
    """Each lease's latest status from the cluster, served while it is fresh."""

    def __init__(self, bus: Bus, max_age: float, clock: Callable[[], float] = time.time) -> None:
        self._bus = bus
        self.max_age = max_age
        self._clock = clock
        self._held: dict[str, HeldStatus] = {}
        self._confirmed_at = 0.0
        self._pending: frozenset[str] = frozenset()

    def __len__(self) -> int:
        return len(self._held)

    def fresh(self, lease_id: LeaseID) -> HeldStatus | None:
        """The lease's status if the cluster vouched for it less than ``max_age`` ago."""
        key = str(lease_id)
        held = self._held.get(key)
        if held is None:
            return None
        vouched = held.checked_at
        if key not in self._pending:
            vouched = max(vouched, self._confirmed_at)
        return held if self._clock() - vouched <= self.max_age else None

    async def run(self) -> None:
        """Load the current values, then follow the stream (a supervised task)."""
        newest = await self._bus.backend.entries(CLUSTER_LEASE_STATUS, count=1, reverse=True)
        position = newest[0].id if newest else "0"
        for raw in (await self._bus.backend.hgetall(STATUS_HASH)).values():
            try:
                self._take(LeaseStatusChanged.model_validate_json(raw))
            except ValueError:
                log.warning("unreadable lease status in %s", STATUS_HASH)
        streams = [CLUSTER_LEASE_STATUS]
        async for _, envelope in self._bus.follow_envelopes(
            streams, since={CLUSTER_LEASE_STATUS: position}
        ):
            payload = envelope.payload
            if isinstance(payload, LeaseStatusChanged):
                self._take(payload)
            elif isinstance(payload, LeaseStatusGone):
                self._held.pop(str(payload.lease_id), None)
            elif isinstance(payload, LeaseStatusesConfirmed):
                self._pending = frozenset(str(lease) for lease in payload.pending)
                self._confirmed_at = payload.at

    def _take(self, changed: LeaseStatusChanged) -> None:
        held = self._held.get(str(changed.lease_id))
        if held is None or held.checked_at <= changed.checked_at:
            self._held[str(changed.lease_id)] = HeldStatus(changed)


JSON_HEADERS = [(b"content-type", b"application/json")]


def status_fast_path(app: ASGIApp, board: StatusBoard, path: str = "/status") -> ASGIApp:
    """``GET path`` answered from the board's rendered body; everything else to ``app``."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == path
            and scope["method"] == "GET"
            and board.ready.is_set()
        ):
            body = board.body()
            metrics.STATUS_SERVED.inc()
            headers = [*JSON_HEADERS, (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return asgi
