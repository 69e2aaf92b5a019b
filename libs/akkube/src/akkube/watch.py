"""Following resources through the Kubernetes API: list, then watch from the list's version,
for as long as it runs.

The official client is synchronous: a list runs on a worker thread, page by page, each
page reduced to what the follower keeps as it comes; each watch connection is read line by
line on a thread of its own (:class:`Stream`), which hands the events to the event loop;
cancelling stops a blocked read. Only the loop tells the follower (a :class:`Watcher`).

Failures never stop it: a failed list or watch is retried with jittered exponential backoff
(:class:`Backoff`), the watcher told of each failure meanwhile; a watch resumes from the
last version it saw, and one answered 410 Gone (its version older than the server's
history) lists again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, Self

from kubernetes.client import ApiClient

from akkube.calls import Obj, get_json, open_get

_log = logging.getLogger("akkube.watch")
CHANGES = ("ADDED", "MODIFIED", "DELETED")


class Watcher(Protocol):
    """What follows one resource. Everything but ``rows_of`` is called on the event loop."""

    @property
    def name(self) -> str:
        """For logs and threads: ``pods``."""
        ...

    @property
    def path(self) -> str:
        """Where the API lists the resource: ``/api/v1/pods`` (every namespace)."""
        ...

    def rows_of(self, items: list[Obj]) -> dict[str, Any]:
        """A page of a list reduced to what the watcher keeps, by key (on the list's worker
        thread: it must not touch the watcher's state)."""
        ...

    def listed(self, rows: dict[str, Any]) -> None:
        """A whole list, its pages' rows together: what the resource holds now."""
        ...

    def changed(self, kind: str, obj: Obj) -> None:
        """A watch event: ``ADDED``, ``MODIFIED`` or ``DELETED`` (bookmarks are not told)."""
        ...

    def connected(self) -> None:
        """A watch answered: the API can be reached again."""
        ...

    def failed(self, exc: Exception) -> None:
        """A list or watch failed (it is tried again after a backoff)."""
        ...


class Expired(Exception):
    """410 Gone: the version is older than the server's history; list again."""


class Backoff:
    """Jittered exponential delays between failed attempts, reset by a good one."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial, self.maximum, self.attempt = initial, maximum, 0

    def next(self) -> float:
        delay = min(self.initial * 2.0**self.attempt, self.maximum)
        self.attempt += 1
        return delay * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not secrets

    def reset(self) -> None:
        self.attempt = 0


class Stream:
    """One watch connection, read line by line on a thread of its own; what it reads goes
    to an asyncio queue: ("open", None), ("event", dict)…, then ("end", None) or
    ("error", exception). ``stop`` interrupts a blocked read."""

    def __init__(self, open_: Callable[[], Any], loop: asyncio.AbstractEventLoop) -> None:
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.closed: asyncio.Future[None] = loop.create_future()
        self._open, self._loop = open_, loop
        self._response: Any = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kube-watch", daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._response is not None:
            interrupt(self._response)

    def _post(self, *item: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening
            self._loop.call_soon_threadsafe(self.queue.put_nowait, item)

    def _run(self) -> None:
        clean = False
        try:
            self._response = self._open()
            if self._stopped.is_set():
                return
            self._post("open", None)
            for line in lines(self._response):
                if self._stopped.is_set():
                    return
                self._post("event", json.loads(line))
            clean = True
            self._post("end", None)
        except Exception as exc:  # handed to the loop, which decides what to do
            self._post("error", exc)
        finally:
            if self._response is not None:
                if not clean:
                    self._response.close()
                self._response.release_conn()
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(_settle, self.closed)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def lines(response: Any) -> Iterator[bytes]:
    """The non-blank lines of a streamed answer (a watch's events, a log), as they come."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        yield from (line for line in complete if line.strip())
    if buffer.strip():
        yield buffer


def interrupt(response: Any) -> None:
    """Unblock a thread reading ``response`` (urllib3 2.3+ has shutdown; else the socket)."""
    with contextlib.suppress(Exception):
        if callable(shutdown := getattr(response, "shutdown", None)):
            shutdown()
            return
        sock = getattr(getattr(response, "connection", None), "sock", None)
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)


def describe(exc: BaseException) -> str:
    """A failure in a few words: the status and reason of an answer, else the cause."""
    status = getattr(exc, "status", None)
    if isinstance(status, int) and status > 0:
        return f"{status} {getattr(exc, 'reason', '') or ''}".strip()
    reason = getattr(exc, "reason", None)  # urllib3's MaxRetryError carries the cause
    return f"{type(exc).__name__}: {reason if reason is not None else exc}"


def gone(exc: BaseException) -> bool:
    """Whether ``exc`` is a 410 Gone answer."""
    return getattr(exc, "status", None) == 410


class ListWatch:
    """Lists and watches through one client; :meth:`follow` keeps one watcher told."""

    def __init__(
        self,
        client: ApiClient,
        *,
        page_size: int = 500,
        backoff_s: tuple[float, float] = (0.1, 10.0),
        request_timeout_s: float = 30.0,
        watch_timeout_s: float = 300.0,
        log: logging.Logger = _log,
    ) -> None:
        self.client = client
        self._page_size = page_size
        self._backoff = backoff_s
        self._request_timeout = request_timeout_s
        self._watch_timeout = watch_timeout_s
        self._log = log

    async def follow(self, watcher: Watcher, *, selector: str = "") -> None:
        """List, then watch from the list's version, until cancelled; back off after
        failures. ``selector``: only the objects with these labels (a label selector)."""
        labels: list[tuple[str, Any]] = [("labelSelector", selector)] if selector else []
        backoff = Backoff(*self._backoff)
        version: str | None = None
        while True:
            progressed = False
            try:
                if version is None:
                    rows, version = await asyncio.to_thread(self._list, watcher, labels)
                    watcher.listed(rows)
                version, progressed = await self._watch(watcher, version, labels)
            except Exception as exc:
                if isinstance(exc, Expired) or gone(exc):  # a watch's version or a list's
                    self._log.info(  # continue token is older than the server's history
                        "%s: %s; listing again",
                        watcher.name,
                        exc,
                        extra={"resource": watcher.name},
                    )
                    version = None
                else:
                    watcher.failed(exc)
            if progressed:  # a 410 relists after a short pause too: never a tight loop
                backoff.reset()
            else:
                await asyncio.sleep(backoff.next())

    def _list(
        self, watcher: Watcher, labels: list[tuple[str, Any]]
    ) -> tuple[dict[str, Any], str | None]:
        """Every object, page by page (on a worker thread), each page reduced to what the
        watcher keeps as it comes; the first page's version is where the watch starts,
        so nothing that changed while paging is missed."""
        rows: dict[str, Any] = {}
        version: str | None = None
        token: str | None = None
        while True:
            query: list[tuple[str, Any]] = [("limit", self._page_size), *labels]
            if token:
                query.append(("continue", token))
            body = get_json(self.client, watcher.path, query, self._request_timeout)
            rows.update(watcher.rows_of(body.get("items") or []))
            meta = body.get("metadata") or {}
            version = version or meta.get("resourceVersion") or None
            token = meta.get("continue")
            if not token:
                return rows, version

    async def _watch(
        self, watcher: Watcher, version: str | None, labels: list[tuple[str, Any]]
    ) -> tuple[str | None, bool]:
        """Tell a watch's events until the server ends it; the last version seen, and
        whether the watch got anywhere (an event, or a while connected)."""
        timeout = int(self._watch_timeout * (1 + random.random()))  # noqa: S311 - spread
        query: list[tuple[str, Any]] = [
            ("watch", True),
            ("allowWatchBookmarks", True),
            ("timeoutSeconds", timeout),
            *labels,
            *([("resourceVersion", version)] if version else []),
        ]
        stream = Stream(
            lambda: open_get(
                self.client,
                watcher.path,
                query,
                (self._request_timeout, timeout + self._request_timeout),
            ),
            asyncio.get_running_loop(),
        ).start()
        started, events = time.monotonic(), 0
        try:
            while True:
                what, payload = await stream.queue.get()
                if what == "open":
                    watcher.connected()
                    continue
                if what == "end":
                    return version, events > 0 or time.monotonic() - started >= 1.0
                if what == "error":
                    raise Expired(str(payload)) if gone(payload) else payload
                kind, obj = payload.get("type"), payload.get("object") or {}
                if kind == "ERROR":
                    message = f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}"
                    if obj.get("code") == 410:
                        raise Expired(message)
                    raise RuntimeError(f"watch failed: {message}")
                events += 1
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if kind in CHANGES:
                    watcher.changed(kind, obj)
        finally:
            stream.stop()
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
            # cancellation arriving as the thread ends, and the watch loop would go on
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await asyncio.shield(stream.closed)
