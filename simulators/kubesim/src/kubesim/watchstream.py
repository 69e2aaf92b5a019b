"""Watch streams: the changes of a list as newline-delimited JSON, as the real server sends
them.

A watch starts with the objects as they are (or replays what happened since a
resourceVersion, from the store's history — 410 Gone, as an `ERROR` event, when that is
compacted away), then sends each change that its selectors see, with bookmarks when asked
for, until `timeoutSeconds`, the client leaving, or the store closing its watches.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from typing import Any

from aiohttp import web

from kubesim import errors, inputs
from kubesim.catalog import ResourceType
from kubesim.responses import present
from kubesim.selectors import field_matcher, label_matcher
from kubesim.store import Store

WATCH_POLL = 1.0  # how often an idle watch checks that its client is still there


class WatchStreams:
    def __init__(self, store: Store, *, bookmark_interval: float, watch_timeout: float) -> None:
        self.store = store
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout

    async def respond(
        self, request: web.Request, rtype: ResourceType, namespace: str | None
    ) -> web.StreamResponse:
        q = request.query
        labels = label_matcher(q.get("labelSelector"))
        fields = field_matcher(q.get("fieldSelector"), rtype.kind, rtype.custom)
        bookmarks = inputs.flag(q, "allowWatchBookmarks")
        initial_end = inputs.flag(q, "sendInitialEvents")
        timeout = inputs.integer(q, "timeoutSeconds") or self.watch_timeout
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        version = inputs.resource_version(q)
        since = None if initial_end or version is None else str(version)
        try:
            watch, initial = self.store.watch(rtype, namespace, since, labels, fields)
            # every write reaches the queue in order, so the version of the last event taken
            # from it (or of the store when the watch began) is as far as a bookmark may
            # claim: the store's own version may be ahead of events still queued
            reached = self.store.rv
        except errors.ApiError as exc:
            if exc.code != 410:
                raise
            await response.prepare(request)
            await self._send(response, "ERROR", exc.status())
            await response.write_eof()
            return response
        try:
            await response.prepare(request)
            for kind, obj in initial:
                await self._send(response, kind, present(rtype, obj))
            if initial_end:
                await self._bookmark(
                    response, rtype, reached, {"k8s.io/initial-events-end": "true"}
                )
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + self.bookmark_interval
            while (left := deadline - time.monotonic()) > 0:
                if request.transport is None or request.transport.is_closing():
                    break  # the client is gone: let go of the watch now, not at its timeout
                wait = min(left, next_bookmark - time.monotonic()) if bookmarks else left
                wait = min(wait, WATCH_POLL)
                try:
                    event = await asyncio.wait_for(watch.queue.get(), timeout=max(wait, 0))
                except TimeoutError:
                    if bookmarks and time.monotonic() >= next_bookmark:
                        await self._bookmark(response, rtype, reached)
                        next_bookmark = time.monotonic() + self.bookmark_interval
                    continue
                if event is None:
                    break
                reached = event.rv
                seen = watch.translate(event)
                if seen is not None:
                    await self._send(response, seen[0], present(rtype, copy.deepcopy(seen[1])))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.unwatch(watch)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _bookmark(
        self,
        response: web.StreamResponse,
        rtype: ResourceType,
        rv: int,
        annotations: dict[str, str] | None = None,
    ) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if annotations:
            meta["annotations"] = annotations
        await self._send(
            response,
            "BOOKMARK",
            {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta},
        )

    async def _send(self, response: web.StreamResponse, kind: str, obj: dict[str, Any]) -> None:
        line = json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n"
        await response.write(line.encode())
