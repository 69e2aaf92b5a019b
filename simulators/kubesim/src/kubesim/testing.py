"""kubesim for tests: in the test's event loop, in a thread of its own, or as a process.

- `running(...)`: an async context manager around `KubeSim` (the `kubesim` fixture);
- `ThreadedKubeSim`: a simulator in a background thread with its own loop, for tests using
  the synchronous `kubernetes` client (the `kubesim_thread` fixture);
- `KubeSimProcess`: `python -m kubesim serve` as a child process on a free port, with its
  fault switches reached over HTTP (the `kubesim_process` fixture); with `users=` it
  checks tokens and RBAC, and `kubeconfig_for(token)` writes a user's kubeconfig;
- `wait_until`: poll a client call until the simulated cluster has caught up.

The process harness, `free_port` and the waiting come from the shared kit (`akservice.testing`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sys
import threading
import urllib.request
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import yaml

from akservice.testing import ServiceProcess, child_environment, eventually_sync, free_port
from kubesim import kubeconfig, tls
from kubesim.authz import ADMIN_TOKEN, Users
from kubesim.cluster import DEFAULT_CLUSTER, ClusterSpec
from kubesim.controllers import ControllerSettings
from kubesim.faults import Faults
from kubesim.sim import KubeSim

T = TypeVar("T")

FAST = ControllerSettings(pod_start_delay=0.05, crash_interval=0.2)


@contextlib.asynccontextmanager
async def running(cluster: ClusterSpec = DEFAULT_CLUSTER, **options: Any) -> AsyncIterator[KubeSim]:
    options.setdefault("controllers", FAST)
    options.setdefault("bookmark_interval", 0.2)
    options.setdefault("log_interval", 0.05)
    async with KubeSim(cluster, **options) as sim:
        yield sim


class ThreadedKubeSim:
    """A KubeSim running in a thread; `call` runs a function on its loop."""

    def __init__(self, cluster: ClusterSpec = DEFAULT_CLUSTER, **options: Any) -> None:
        self._cluster = cluster
        self._options = options
        self.sim: KubeSim | None = None

    def __enter__(self) -> ThreadedKubeSim:
        self._loop = asyncio.new_event_loop()  # made here: a simulator never entered holds none
        self._thread = threading.Thread(target=self._loop.run_forever, name="kubesim", daemon=True)
        self._thread.start()
        self._cm = running(self._cluster, **self._options)
        self.sim = asyncio.run_coroutine_threadsafe(self._cm.__aenter__(), self._loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._cm.__aexit__(None, None, None), self._loop).result(
            30
        )
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    @property
    def running(self) -> KubeSim:
        if self.sim is None:
            raise RuntimeError("the simulator is not started")
        return self.sim

    @property
    def url(self) -> str:
        return self.running.url

    @property
    def faults(self) -> Faults:
        return self.running.faults

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the simulator's loop (store and faults are not thread-safe)."""
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return future.result(30)

    def write_kubeconfig(self, path: Path, *, token: str = ADMIN_TOKEN) -> Path:
        return self.running.write_kubeconfig(path, token=token)


def wait_until(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float = 10.0) -> T:
    """Poll `fetch` until `done` holds for its result (the kit's `eventually_sync`)."""
    return eventually_sync(fetch, timeout, "the cluster to catch up", until=done)


class KubeSimProcess(ServiceProcess):
    """`python -m kubesim serve` as a child process, on a free port."""

    def __init__(
        self,
        workdir: Path,
        nodes: ClusterSpec | None = None,
        *extra: str,
        users: Users | None = None,
        https: bool = False,
    ) -> None:
        self.workdir = workdir
        self.https = https
        self.port = free_port()
        self.kubeconfig = workdir / "kubeconfig"
        args = [
            sys.executable, "-m", "kubesim", "serve", "--port", str(self.port),
            "--kubeconfig", str(self.kubeconfig), "--pod-start-delay", "0.05", *extra,
        ]  # fmt: skip
        if nodes is not None:
            nodes_file = workdir / "nodes.yaml"
            data = {
                "nodes": [
                    n.model_dump(by_alias=True, exclude_defaults=True) | {"name": n.name}
                    for n in nodes.nodes
                ]
            }
            nodes_file.write_text(yaml.safe_dump(data))
            args += ["--nodes", str(nodes_file)]
        if users is not None:
            args += ["--users", str(users.dump(workdir / "users.yaml"))]
        if https:
            args.append("--tls")
        super().__init__(
            args,
            log_path=workdir / "kubesim.log",
            ready=self._ready,
            env=child_environment(PYTHONUNBUFFERED="1"),
            name="kubesim",
        )

    @property
    def url(self) -> str:
        return f"{'https' if self.https else 'http'}://127.0.0.1:{self.port}"

    @property
    def ca_pem(self) -> bytes | None:
        """The server's CA (https), from the kubeconfig it wrote."""
        if not self.https:
            return None
        config = yaml.safe_load(self.kubeconfig.read_text())
        return base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])

    def kubeconfig_for(self, token: str, path: Path | None = None) -> Path:
        """A kubeconfig for this server as the user of ``token``."""
        target = path or self.workdir / f"kubeconfig-{token}"
        return kubeconfig.write(target, self.url, token=token, ca_pem=self.ca_pem)

    def _open(self, request: urllib.request.Request | str, timeout: float) -> Any:
        ca = self.ca_pem
        context = tls.client_context(ca) if ca is not None else None
        return urllib.request.urlopen(request, timeout=timeout, context=context)  # noqa: S310

    def _ready(self) -> bool:
        if not self.kubeconfig.exists():  # written once the server listens
            return False
        try:
            with self._open(f"{self.url}/readyz", 2.0) as reply:
                return bool(reply.status == 200)
        except (OSError, ValueError, KeyError):
            return False

    def faults(self, **switches: Any) -> None:
        """Set fault switches over HTTP: `faults(unavailable={"seconds": 2})` (see Faults.apply)."""
        request = urllib.request.Request(  # noqa: S310 - our own server
            f"{self.url}/_kubesim/faults",
            data=json.dumps(switches).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with self._open(request, 5) as reply:
            reply.read()
