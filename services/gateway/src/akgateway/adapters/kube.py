"""The gateway's narrow window on Kubernetes: pods, logs and exec in lease namespaces, and
nothing else (RBAC: ``pods``, ``pods/log`` read, ``pods/exec``). A lease's events are not
read here: the cluster service keeps them on Redis (:mod:`akgateway.api.leaseevents`).

Interactive streams do not belong on the bus, so this is the one place the gateway talks to
Kubernetes. The official client is synchronous: each log stream runs on a thread
of its own and hands what it reads to the event loop through a bounded queue (:class:`Pump`),
so a slow tenant slows the read from Kubernetes instead of filling the gateway's memory.
Leaving the iteration (the tenant went away) stops the thread: its response is closed.
Short queries run on the adapter's own small thread pool, not the process's default one.
Exec is asynchronous (aiohttp's websocket client, Kubernetes' ``v4.channel.k8s.io``), so
a shell's input never waits for a thread: one tenant pushing input into many shells slows
only those shells, not another tenant's streams.

Requests go by path through the client's ``ApiClient`` (its kubeconfig, TLS and token:
:mod:`akkube.client`, :mod:`akkube.calls`) and answers are read as JSON: the generated
``CoreV1Api`` and its models would cost the process some ninety megabytes for the four
calls made here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import aiohttp
from urllib3.exceptions import HTTPError

from akgateway.errors import KubeError, LeaseGone
from akkube.calls import get_json, open_get, target
from akkube.client import ApiClient, ApiException, api_client, ssl_context
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace

log = logging.getLogger("akgateway.kube")

T = TypeVar("T")
SERVICE_LABEL = "akash.network/manifest-service"


class _End:
    pass


END = _End()


class Pump(Generic[T]):
    """Items read on a thread, delivered to async code through a queue of ``size``."""

    def __init__(self, size: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[T | _End | BaseException] = asyncio.Queue(size)
        self.stopped = threading.Event()
        self.on_stop: list[Callable[[], None]] = []

    def put(self, item: T | _End | BaseException) -> bool:
        """Thread side: hand one item over, waiting for room; False once the reader left."""
        if self.stopped.is_set():
            return False
        try:
            done = asyncio.run_coroutine_threadsafe(self.queue.put(item), self.loop)
        except RuntimeError:  # the loop is closed
            return False
        while True:
            try:
                done.result(timeout=0.5)
                return True
            except concurrent.futures.TimeoutError:
                if self.stopped.is_set():
                    done.cancel()
                    return False
            except concurrent.futures.CancelledError:
                return False

    def run(self, work: Callable[[Pump[T]], None], name: str) -> None:
        def target() -> None:
            try:
                work(self)
            except BaseException as exc:
                self.put(exc if not self.stopped.is_set() else END)
                return
            self.put(END)

        threading.Thread(target=target, name=name, daemon=True).start()

    def stop(self) -> None:
        """Called on the loop: the reader left. The thread's reads are interrupted by
        shutting their sockets down (``on_stop``), which never waits — closing a response
        would wait for the lock the thread's blocked read holds, and with it the loop."""
        self.stopped.set()
        for close in self.on_stop:
            with contextlib.suppress(Exception):
                close()

    async def items(self) -> AsyncIterator[T]:
        try:
            while True:
                item = await self.queue.get()
                if isinstance(item, _End):
                    return
                if isinstance(item, BaseException):
                    raise _translated(item)
                yield item
        finally:
            self.stop()


def _translated(exc: BaseException) -> BaseException:
    if isinstance(exc, ApiException):
        return KubeError(f"Kubernetes answered {exc.status}: {exc.reason}")
    if isinstance(exc, (HTTPError, OSError)):
        return KubeError(f"Kubernetes unreachable: {exc}")
    return exc


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str
    containers: tuple[str, ...]
    service: str
    ready: bool


EXEC_PROTOCOL = "v4.channel.k8s.io"


@dataclass
class ExecSession:
    """A command running in a container: what it writes, and how to write to it."""

    socket: aiohttp.ClientWebSocketResponse
    status: dict[str, Any] = field(default_factory=dict)  # channel 3, once it ended

    async def output(self) -> AsyncIterator[tuple[int, bytes]]:
        """(1 stdout | 2 stderr, data) until the command ends; its status is kept."""
        async for message in self.socket:
            if message.type != aiohttp.WSMsgType.BINARY or not message.data:
                continue
            channel, data = message.data[0], message.data[1:]
            if channel in (1, 2) and data:
                yield channel, data
            elif channel == 3:
                with contextlib.suppress(ValueError):
                    self.status = json.loads(data)

    async def write(self, channel: int, data: bytes) -> None:
        """``data`` to ``channel``: 0 stdin, 4 the terminal's size (JSON)."""
        await self.socket.send_bytes(bytes([channel]) + data)

    async def close(self) -> None:
        """End the command's stream: a close frame if it goes out soon, else the connection
        cut (its input may be stalled behind a command that reads none)."""
        with contextlib.suppress(TimeoutError, aiohttp.ClientError, OSError):
            async with asyncio.timeout(2.0):
                await self.socket.close()

    @property
    def exit_code(self) -> int | None:
        """0 on success, the command's code, None when it never ran to an end."""
        if not self.status:
            return None
        if self.status.get("status") == "Success":
            return 0
        for cause in (self.status.get("details") or {}).get("causes") or ():
            if cause.get("reason") == "ExitCode":
                with contextlib.suppress(ValueError, TypeError):
                    return int(cause.get("message"))
        return None


class LeaseCluster:
    """Pods, logs and exec of lease namespaces."""

    def __init__(self, client: ApiClient, *, queue_size: int = 256, workers: int = 8) -> None:
        self.client: Any = client  # the official client is untyped: Any at the edge
        self.queue_size = queue_size
        self.queries = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="kube")
        self._http: aiohttp.ClientSession | None = None

    @classmethod
    def from_kubeconfig(cls, path: Path | None = None, **kw: Any) -> LeaseCluster:
        """From a kubeconfig file (sealed or not); with None, ``$KUBECONFIG`` or
        ``~/.kube/config``, else in-cluster (:func:`akkube.client.api_client`)."""
        return cls(api_client(path), **kw)

    async def __aenter__(self) -> LeaseCluster:
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._http is not None:
            await self._http.close()
        self.queries.shutdown(wait=False, cancel_futures=True)
        self.client.close()

    async def _call(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(self.queries, fn)
        except (ApiException, HTTPError, OSError) as exc:
            raise _translated(exc) from None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            self._http = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=ssl_context(self.client.configuration)),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
        return self._http

    def _open(self, path: str, query: Sequence[tuple[str, Any]] = (), timeout: Any = None) -> Any:
        """GET ``path``, the body not read yet; :class:`ApiException` unless 2xx."""
        return open_get(self.client, path, query, timeout)

    def _get(self, path: str, query: Sequence[tuple[str, Any]] = ()) -> dict[str, Any]:
        return get_json(self.client, path, query)

    async def pods(self, lease_id: LeaseID, services: Sequence[str] = ()) -> list[Pod]:
        """The lease's pods (of ``services``, if given), by service then name."""
        namespace = lease_namespace(lease_id)
        try:
            await self._call(lambda: self._get(f"/api/v1/namespaces/{namespace}"))
        except KubeError as exc:
            if "answered 404" in str(exc):
                raise LeaseGone(f"lease {lease_id} is not deployed here") from None
            raise
        listed = await self._call(
            lambda: self._get(
                f"/api/v1/namespaces/{namespace}/pods", [("labelSelector", SERVICE_LABEL)]
            )
        )
        found = []
        for pod in listed.get("items") or ():
            meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
            service = (meta.get("labels") or {}).get(SERVICE_LABEL, "")
            if services and service not in services:
                continue
            statuses = status.get("containerStatuses") or []
            found.append(
                Pod(
                    name=meta["name"],
                    namespace=namespace,
                    containers=tuple(c["name"] for c in spec.get("containers") or ()),
                    service=service,
                    ready=bool(statuses) and all(s.get("ready") for s in statuses),
                )
            )
        return sorted(found, key=lambda p: (p.service, p.name))

    async def logs(self, pod: Pod, *, follow: bool, tail: int | None) -> AsyncIterator[str]:
        """The pod's log lines (its first container), following if ``follow``."""
        pump: Pump[bytes] = Pump(self.queue_size)
        query: list[tuple[str, Any]] = [("follow", follow)]
        if pod.containers:
            query.append(("container", pod.containers[0]))
        if tail is not None:
            query.append(("tailLines", tail))

        def read(pump: Pump[bytes]) -> None:
            response = self._open(f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/log", query)
            pump.on_stop.append(response.shutdown)
            try:
                for chunk in response.stream(16 * 1024):
                    if not pump.put(chunk):
                        return
            except (HTTPError, OSError):
                if not pump.stopped.is_set():
                    raise
            finally:
                response.close()

        pump.run(read, f"logs {pod.name}")
        pending = b""
        async for chunk in pump.items():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.decode(errors="replace")
        if pending:
            yield pending.decode(errors="replace")

    async def execute(
        self, pod: Pod, argv: Sequence[str], *, tty: bool, stdin: bool
    ) -> ExecSession:
        """Start ``argv`` in the pod's first container."""
        query: list[tuple[str, Any]] = [("command", arg) for arg in argv]
        if pod.containers:
            query.append(("container", pod.containers[0]))
        query += [("stdin", stdin), ("stdout", True), ("stderr", not tty), ("tty", tty)]
        url, headers = target(
            self.client, f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/exec", query
        )
        try:
            socket = await self._session().ws_connect(
                url,
                headers=headers,
                protocols=(EXEC_PROTOCOL,),
                autoping=True,
                max_msg_size=4 * 1024 * 1024,
            )
        except aiohttp.WSServerHandshakeError as exc:
            raise KubeError(f"Kubernetes answered {exc.status}: {exc.message}") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise KubeError(f"Kubernetes unreachable: {exc}") from None
        return ExecSession(socket)
