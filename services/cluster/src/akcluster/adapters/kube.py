"""The ``kube`` inventory backend: the cluster's capacity, read from the Kubernetes API.

The Go provider asks its inventory operator, which watches nodes and pods; here the cluster
service watches them itself, with the official synchronous ``kubernetes`` client. Four
resources are listed, then watched from the list's version — nodes, pods and persistent
volume claims in every namespace, storage classes — each by a task of its own whose
blocking reads run on worker threads (a list) or a thread per watch connection, handing
events to the event loop. Only the loop touches the state: per resource a table of what
matters for capacity, keyed by name or uid, so an event costs O(1); an :class:`Inventory`
is rebuilt from the tables when asked for and, debounced, pushed to ``on_change``.

Rules, with the Go operator's quirks fixed:

- a node counts if it is Ready, not cordoned and (by default) labelled ``akash.network=true``;
- a pod takes what the scheduler reserves for it — the larger of its containers' and its
  init containers' requests (sidecars included), plus overhead and memory-backed emptyDir
  size limits — while it is bound to a node and not finished (Go counts finished pods until
  they are deleted);
- a storage pool's size comes from the operator's configuration, and is reported while its
  StorageClass exists; claims of that class (the default class for claims naming none) use it.

Failures never stop it: a failed list or watch is retried with jittered exponential backoff
(reported through :attr:`KubeInventory.error` meanwhile), a watch resumes from the last
version it saw, and one answered 410 Gone lists again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, Self, TypeVar

import kubernetes
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

from akcluster.adapters.kube_objects import (
    Obj,
    claim_of,
    is_default_class,
    name_of,
    node_of,
    pod_use,
    uid_of,
)
from akcluster.domain.inventory import Capacity, Inventory, Node, StoragePool
from akservice.secrets import is_sealed, kubeconfig_of

log = logging.getLogger("akcluster.kube")
V = TypeVar("V")
_NO_POOLS: Mapping[str, int] = MappingProxyType({})


@dataclass
class _Table(Generic[V]):
    """One watched resource: how to list it, and what of each object the inventory keeps."""

    name: str
    path: str  # where the API lists it (in every namespace)
    key: Callable[[Obj], str]
    derive: Callable[[Obj], V | None]  # None: the object does not count
    rows: dict[str, V] = field(default_factory=dict)

    def rows_of(self, items: list[Obj]) -> dict[str, V]:
        rows = {}
        for obj in items:
            value = self._derive(obj)
            if value is not None:
                rows[self.key(obj)] = value
        return rows

    def replace(self, rows: dict[str, V]) -> bool:
        changed, self.rows = rows != self.rows, rows
        return changed

    def apply(self, kind: str, obj: Obj) -> bool:
        """Apply one watch event; True if what the inventory keeps changed."""
        key = self.key(obj)
        value = None if kind == "DELETED" else self._derive(obj)
        old = self.rows.pop(key, None) if value is None else self.rows.get(key)
        if value is not None:
            self.rows[key] = value
        return old != value

    def _derive(self, obj: Obj) -> V | None:
        try:
            return self.derive(obj)
        except Exception:  # one malformed object must not stop the inventory
            log.exception("cannot read %s %s", self.name, obj.get("metadata"))
            return None


class _Expired(Exception):
    """410 Gone: the version is older than the server's history; list again."""


class _Backoff:
    """Jittered exponential delays between failed attempts, reset by a good one."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial, self.maximum, self.attempt = initial, maximum, 0

    def next(self) -> float:
        delay = min(self.initial * 2.0**self.attempt, self.maximum)
        self.attempt += 1
        return delay * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not secrets

    def reset(self) -> None:
        self.attempt = 0


class _Stream:
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
            _interrupt(self._response)

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
            for line in _lines(self._response):
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


def _lines(response: Any) -> Iterator[bytes]:
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        yield from (line for line in lines if line.strip())
    if buffer.strip():
        yield buffer


def _interrupt(response: Any) -> None:
    """Unblock a thread reading ``response`` (urllib3 2.3+ has shutdown; else the socket)."""
    with contextlib.suppress(Exception):
        if callable(shutdown := getattr(response, "shutdown", None)):
            shutdown()
            return
        sock = getattr(getattr(response, "connection", None), "sock", None)
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    if isinstance(status, int) and status > 0:
        return f"{status} {getattr(exc, 'reason', '') or ''}".strip()
    reason = getattr(exc, "reason", None)  # urllib3's MaxRetryError carries the cause
    return f"{type(exc).__name__}: {reason if reason is not None else exc}"


def _gone(exc: BaseException) -> bool:
    return getattr(exc, "status", None) == 410


class KubeInventory:
    """Nodes, pods, claims and storage classes, watched; the :class:`Inventory` they make.

    ``run`` follows the cluster until cancelled; ``snapshot`` is the inventory now (None
    until every resource has been listed once); ``on_change`` gets each new inventory,
    at most one per ``debounce_s``.
    """

    def __init__(
        self,
        api_client: ApiClient,
        *,
        storage_pools: Mapping[str, int] = _NO_POOLS,
        on_change: Callable[[Inventory], None] | None = None,
        debounce_s: float = 0.05,
        require_akash_label: bool = True,
        page_size: int = 500,
        backoff_s: tuple[float, float] = (0.1, 10.0),
        request_timeout_s: float = 30.0,
        watch_timeout_s: float = 300.0,
    ) -> None:
        self.api_client = api_client
        self.storage_pools = dict(storage_pools)
        self.on_change = on_change
        self.debounce_s = debounce_s
        self.require_akash_label = require_akash_label
        self._page_size = page_size
        self._backoff = backoff_s
        self._request_timeout = request_timeout_s
        self._watch_timeout = watch_timeout_s
        self._nodes: _Table[Node] = _Table("nodes", "/api/v1/nodes", name_of, self._node)
        self._pods: _Table[tuple[str, Capacity]] = _Table("pods", "/api/v1/pods", uid_of, pod_use)
        self._claims: _Table[tuple[str | None, int]] = _Table(
            "persistentvolumeclaims", "/api/v1/persistentvolumeclaims", uid_of, claim_of
        )
        self._classes: _Table[bool] = _Table(
            "storageclasses", "/apis/storage.k8s.io/v1/storageclasses", name_of, is_default_class
        )
        self._tables: tuple[_Table[Any], ...] = (
            self._nodes,
            self._pods,
            self._claims,
            self._classes,
        )
        self._listed: set[str] = set()
        self._synced = asyncio.Event()
        self._errors: dict[str, str] = {}
        self._current: Inventory | None = None  # None: rebuild on the next snapshot()
        self._published: Inventory | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._owns_client = False

    @classmethod
    def from_kubeconfig(cls, path: Path | None = None, **kw: Any) -> KubeInventory:
        """From a kubeconfig file; with None, ``$KUBECONFIG`` or ``~/.kube/config``, else
        the in-cluster service account. The inventory closes the client in ``close``."""
        inventory = cls(_api_client(path), **kw)
        inventory._owns_client = True
        return inventory

    def close(self) -> None:
        """Close the API client if ``from_kubeconfig`` made it."""
        if self._owns_client:
            self.api_client.close()  # type: ignore[no-untyped-call]

    @property
    def error(self) -> str:
        """The last list or watch failure of each resource still failing; '' when healthy."""
        return "; ".join(f"{name}: {error}" for name, error in sorted(self._errors.items()))

    def snapshot(self) -> Inventory | None:
        if not self._synced.is_set():
            return None
        if self._current is None:
            self._current = self._build()
        return self._current

    async def wait_synced(self, timeout: float) -> Inventory:
        """The inventory once every resource has been listed; TimeoutError naming what
        failed if that takes longer than ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                await self._synced.wait()
        except TimeoutError:
            raise TimeoutError(
                f"the Kubernetes inventory did not sync within {timeout}s"
                + (f": {self.error}" if self.error else "")
            ) from None
        inventory = self.snapshot()
        if inventory is None:  # pragma: no cover - synced means built
            raise RuntimeError("synced without an inventory")
        return inventory

    async def run(self) -> None:
        """List, then watch, every resource until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                for table in self._tables:
                    group.create_task(self._follow(table), name=f"kube-inventory-{table.name}")
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    # -- state -------------------------------------------------------------------
    def _node(self, obj: Obj) -> Node | None:
        return node_of(obj, require_akash_label=self.require_akash_label)

    def _build(self) -> Inventory:
        used: dict[str, Capacity] = {}
        for node, requests in self._pods.rows.values():
            used[node] = used.get(node, Capacity()) + requests
        nodes = tuple(
            replace(node, allocated=used.get(name, Capacity()))
            for name, node in sorted(self._nodes.rows.items())
        )
        default = next((name for name, d in sorted(self._classes.rows.items()) if d), None)
        claimed: dict[str, int] = {}
        for named, size in self._claims.rows.values():
            cls = default if named is None else named
            if cls:
                claimed[cls] = claimed.get(cls, 0) + size
        storage = {
            cls: StoragePool(capacity, claimed.get(cls, 0))
            for cls, capacity in sorted(self.storage_pools.items())
            if cls in self._classes.rows
        }
        return Inventory(nodes, storage)

    def _changed(self) -> None:
        self._current = None
        if self._synced.is_set() and self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.debounce_s, self._publish)

    def _publish(self) -> None:
        self._timer = None
        inventory = self.snapshot()
        if inventory is None or inventory == self._published:
            return
        self._published = inventory
        if self.on_change is not None:
            try:
                self.on_change(inventory)
            except Exception:
                log.exception("inventory on_change callback failed")

    def _listed_once(self, table: _Table[Any]) -> None:
        self._listed.add(table.name)
        if not self._synced.is_set() and len(self._listed) == len(self._tables):
            self._synced.set()
            inventory = self.snapshot()
            log.info(
                "kubernetes inventory synced: %d nodes",
                len(inventory.nodes) if inventory else 0,
                extra={"nodes": [n.name for n in inventory.nodes] if inventory else []},
            )
            self._changed()

    # -- list and watch ----------------------------------------------------------
    async def _follow(self, table: _Table[Any]) -> None:
        """List, then watch from the list's version, forever; back off after failures."""
        backoff = _Backoff(*self._backoff)
        version: str | None = None
        while True:
            progressed = False
            try:
                if version is None:
                    rows, version = await asyncio.to_thread(self._list, table)
                    if table.replace(rows):
                        self._changed()
                    self._recovered(table)
                    self._listed_once(table)
                version, progressed = await self._watch(table, version)
            except Exception as exc:
                if isinstance(exc, _Expired) or _gone(exc):  # a watch's version or a list's
                    log.info(  # continue token is older than the server's history
                        "%s: %s; listing again", table.name, exc, extra={"resource": table.name}
                    )
                    version = None
                else:
                    self._failed(table, exc)
            if progressed:  # a 410 relists after a short pause too: never a tight loop
                backoff.reset()
            else:
                await asyncio.sleep(backoff.next())

    def _failed(self, table: _Table[Any], exc: Exception) -> None:
        """Report a failure: a warning when it is new, quietly while it lasts."""
        error = _describe(exc)
        level = logging.DEBUG if self._errors.get(table.name) == error else logging.WARNING
        log.log(
            level, "%s: list or watch failed: %s", table.name, error, extra={"resource": table.name}
        )
        self._errors[table.name] = error

    def _recovered(self, table: _Table[Any]) -> None:
        if self._errors.pop(table.name, None) is not None:
            log.info("%s: connected again", table.name, extra={"resource": table.name})

    def _open(self, path: str, query: list[tuple[str, Any]], timeout: Any) -> Any:
        """GET ``path`` through the client (its kubeconfig, TLS, token), the response not
        read yet; :class:`ApiException` for an answer other than 2xx. JSON, never the
        generated models: a list of ten thousand pods costs its parsing only."""
        api = self.api_client
        request = api.param_serialize(
            "GET",
            path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        answer = api.call_api(*request, _request_timeout=timeout)
        if not 200 <= answer.status <= 299:
            answer.read()  # type: ignore[no-untyped-call]
            raise ApiException(http_resp=answer)
        return answer.response

    def _list(self, table: _Table[Any]) -> tuple[dict[str, Any], str | None]:
        """Every object, page by page (on a worker thread), each page reduced to what the
        inventory keeps as it comes; the first page's version is where the watch starts,
        so nothing that changed while paging is missed."""
        rows: dict[str, Any] = {}
        version: str | None = None
        token: str | None = None
        while True:
            query: list[tuple[str, Any]] = [("limit", self._page_size)]
            if token:
                query.append(("continue", token))
            response = self._open(table.path, query, self._request_timeout)
            try:
                body = json.loads(response.data)
            finally:
                response.release_conn()
            rows.update(table.rows_of(body.get("items") or []))
            meta = body.get("metadata") or {}
            version = version or meta.get("resourceVersion") or None
            token = meta.get("continue")
            if not token:
                return rows, version

    async def _watch(self, table: _Table[Any], version: str | None) -> tuple[str | None, bool]:
        """Apply a watch's events until the server ends it; the last version seen, and
        whether the watch got anywhere (an event, or a while connected)."""
        timeout = int(self._watch_timeout * (1 + random.random()))  # noqa: S311 - spread
        query: list[tuple[str, Any]] = [
            ("watch", True),
            ("allowWatchBookmarks", True),
            ("timeoutSeconds", timeout),
            *([("resourceVersion", version)] if version else []),
        ]
        stream = _Stream(
            lambda: self._open(
                table.path, query, (self._request_timeout, timeout + self._request_timeout)
            ),
            asyncio.get_running_loop(),
        ).start()
        started, events = time.monotonic(), 0
        try:
            while True:
                what, payload = await stream.queue.get()
                if what == "open":
                    self._recovered(table)
                    continue
                if what == "end":
                    return version, events > 0 or time.monotonic() - started >= 1.0
                if what == "error":
                    raise _Expired(str(payload)) if _gone(payload) else payload
                kind, obj = payload.get("type"), payload.get("object") or {}
                if kind == "ERROR":
                    message = f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}"
                    if obj.get("code") == 410:
                        raise _Expired(message)
                    raise RuntimeError(f"watch failed: {message}")
                events += 1
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if kind in ("ADDED", "MODIFIED", "DELETED") and table.apply(kind, obj):
                    self._changed()
        finally:
            stream.stop()
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
            # cancellation arriving as the thread ends, and the watch loop would go on
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await asyncio.shield(stream.closed)


def _api_client(path: Path | None) -> ApiClient:
    """A client from ``path`` (a ``.sealed`` one opened with the key file beside it), else
    ``$KUBECONFIG`` (read now: the library reads it once, on import) or ``~/.kube/config``,
    else the in-cluster service account."""
    config = kubernetes.config
    if path is not None and is_sealed(path):  # sealed by `cluster onboard`: opened in memory
        return config.new_client_from_config_dict(kubeconfig_of(path))  # type: ignore[no-untyped-call, no-any-return]
    files = str(path) if path else os.environ.get("KUBECONFIG") or "~/.kube/config"
    try:
        client: ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=os.path.expanduser(files)
        )
    except config.ConfigException as no_file:
        if path is not None:
            raise
        configuration = Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException as exc:
            raise config.ConfigException(
                f"no kubeconfig ({no_file}) and not in a cluster ({exc})"
            ) from exc
        client = ApiClient(configuration)
    return client
