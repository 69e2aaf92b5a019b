"""The gateway's narrow window on Kubernetes: pods, logs, events and exec in lease
namespaces, and nothing else (RBAC: ``pods``, ``pods/log``, ``events`` read, ``pods/exec``).

Interactive streams do not belong on the bus, so this is the one place the gateway talks to
Kubernetes. The official client is synchronous: each stream runs on a thread of its own and
hands what it reads to the event loop through a bounded queue (:class:`Pump`), so a slow
tenant slows the read from Kubernetes instead of filling the gateway's memory. Leaving the
iteration (the tenant went away) stops the thread: its response or websocket is closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import kubernetes
from kubernetes.client import ApiClient, Configuration, CoreV1Api
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream as exec_stream
from urllib3.exceptions import HTTPError

from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace

log = logging.getLogger("akgateway.kube")

T = TypeVar("T")
SERVICE_LABEL = "akash.network/manifest-service"


class KubeError(Exception):
    """Kubernetes could not be reached or refused the request."""


class LeaseGone(Exception):
    """The lease has no namespace here (never deployed, or torn down)."""


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


@dataclass
class ExecSession:
    """A command running in a container: what it writes, and how to write to it."""

    output: AsyncIterator[tuple[int, bytes]]  # (1 stdout | 2 stderr, data)
    write: Callable[[int, bytes], None]  # (channel, data): 0 stdin, 4 resize JSON
    close_stdin: Callable[[], None]
    status: dict[str, Any] = field(default_factory=dict)  # channel 3, once it ended

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


def api_client(path: Path | None) -> ApiClient:
    """A client from ``path``, else ``$KUBECONFIG`` or ``~/.kube/config``, else in-cluster."""
    config = kubernetes.config
    files = str(path) if path else os.environ.get("KUBECONFIG") or "~/.kube/config"
    try:
        client: ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=os.path.expanduser(files)
        )
    except config.ConfigException:
        if path is not None:
            raise
        configuration = Configuration()
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        client = ApiClient(configuration)
    return client


class LeaseCluster:
    """Pods, logs, events and exec of lease namespaces."""

    def __init__(self, client: ApiClient, *, queue_size: int = 256) -> None:
        self.client: Any = client  # the official client is untyped: Any at the edge
        self.core: Any = CoreV1Api(client)
        self.queue_size = queue_size

    def close(self) -> None:
        self.client.close()

    async def _call(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except (ApiException, HTTPError, OSError) as exc:
            raise _translated(exc) from None

    async def pods(self, lease_id: LeaseID, services: Sequence[str] = ()) -> list[Pod]:
        """The lease's pods (of ``services``, if given), by service then name."""
        namespace = lease_namespace(lease_id)
        try:
            await self._call(lambda: self.core.read_namespace(namespace))
        except KubeError as exc:
            if "answered 404" in str(exc):
                raise LeaseGone(f"lease {lease_id} is not deployed here") from None
            raise
        listed = await self._call(
            lambda: self.core.list_namespaced_pod(namespace, label_selector=SERVICE_LABEL)
        )
        found = []
        for pod in listed.items:
            service = (pod.metadata.labels or {}).get(SERVICE_LABEL, "")
            if services and service not in services:
                continue
            statuses = (pod.status and pod.status.container_statuses) or []
            found.append(
                Pod(
                    name=pod.metadata.name,
                    namespace=namespace,
                    containers=tuple(c.name for c in pod.spec.containers),
                    service=service,
                    ready=bool(statuses) and all(s.ready for s in statuses),
                )
            )
        return sorted(found, key=lambda p: (p.service, p.name))

    async def logs(self, pod: Pod, *, follow: bool, tail: int | None) -> AsyncIterator[str]:
        """The pod's log lines (its first container), following if ``follow``."""
        pump: Pump[bytes] = Pump(self.queue_size)

        def read(pump: Pump[bytes]) -> None:
            response = self.core.read_namespaced_pod_log(
                pod.name,
                pod.namespace,
                container=pod.containers[0] if pod.containers else None,
                follow=follow,
                tail_lines=tail,
                _preload_content=False,
            )
            pump.on_stop.append(response.close)
            try:
                for chunk in response.stream(16 * 1024):
                    if not pump.put(chunk):
                        return
            except (HTTPError, OSError):
                if not pump.stopped.is_set():
                    raise

        pump.run(read, f"logs {pod.name}")
        pending = b""
        async for chunk in pump.items():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.decode(errors="replace")
        if pending:
            yield pending.decode(errors="replace")

    async def events(self, lease_id: LeaseID, *, follow: bool) -> AsyncIterator[dict[str, Any]]:
        """The namespace's events (core/v1, as dicts), then, if ``follow``, new ones."""
        namespace = lease_namespace(lease_id)
        pump: Pump[dict[str, Any]] = Pump(self.queue_size)

        def read(pump: Pump[dict[str, Any]]) -> None:
            listed = self.client.sanitize_for_serialization(
                self.core.list_namespaced_event(namespace)
            )
            for item in listed.get("items") or ():
                if not pump.put(item):
                    return
            if not follow:
                return
            version = (listed.get("metadata") or {}).get("resourceVersion")
            watch: Any = kubernetes.watch.Watch()  # type: ignore[no-untyped-call]
            pump.on_stop.append(watch.stop)
            for change in watch.stream(
                self.core.list_namespaced_event,
                namespace,
                resource_version=version,
                _request_timeout=(5, 60),
            ):
                if change["type"] in ("ADDED", "MODIFIED"):
                    event = self.client.sanitize_for_serialization(change["object"])
                    if not pump.put(event):
                        return
                if pump.stopped.is_set():
                    return

        pump.run(read, f"events {namespace}")
        async for event in pump.items():
            yield event

    async def execute(
        self, pod: Pod, argv: Sequence[str], *, tty: bool, stdin: bool
    ) -> ExecSession:
        """Start ``argv`` in the pod's first container."""
        response = await self._call(
            lambda: exec_stream(
                self.core.connect_get_namespaced_pod_exec,
                pod.name,
                pod.namespace,
                container=pod.containers[0] if pod.containers else None,
                command=list(argv),
                stdin=stdin,
                stdout=True,
                stderr=not tty,
                tty=tty,
                binary=True,
                _preload_content=False,
            )
        )
        pump: Pump[tuple[int, bytes]] = Pump(self.queue_size)
        pump.on_stop.append(response.close)
        pump.on_stop.append(response.sock.shutdown)  # the client leaves its socket open
        session = ExecSession(
            output=pump.items(),
            write=response.write_channel,
            close_stdin=lambda: response.close_channel(0),
        )

        def read(pump: Pump[tuple[int, bytes]]) -> None:
            while not pump.stopped.is_set():
                open_ = response.is_open()
                if open_:
                    response.update(timeout=0.5)
                for channel in (1, 2):
                    data = response.read_channel(channel)
                    if data and not pump.put((channel, data)):
                        return
                if not open_:
                    break
            raw = response.read_channel(3)
            if raw:
                with contextlib.suppress(ValueError):
                    session.status = json.loads(raw)

        pump.run(read, f"exec {pod.name}")
        return session
