"""kubesim for tests: in the test's event loop, in a thread of its own, or as a process.

- `running(...)`: an async context manager around `KubeSim` (the `kubesim` fixture);
- `ThreadedKubeSim`: a simulator in a background thread with its own loop, for tests using
  the synchronous `kubernetes` client (the `kubesim_thread` fixture);
- `KubeSimProcess`: `python -m kubesim serve` as a child process on a free port, with its
  fault switches reached over HTTP (the `kubesim_process` fixture);
- `wait_until`: poll a client call until the simulated cluster has caught up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import yaml

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
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kubesim", daemon=True)
        self.sim: KubeSim | None = None

    def __enter__(self) -> ThreadedKubeSim:
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

    def write_kubeconfig(self, path: Path) -> Path:
        return self.running.write_kubeconfig(path)


def wait_until(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float = 10.0) -> T:
    """Poll `fetch` until `done` holds for its result; fails with the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached within {timeout}s; last value: {value!r}")
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class KubeSimProcess:
    """`python -m kubesim serve` as a child process."""

    def __init__(self, workdir: Path, nodes: ClusterSpec | None = None, *extra: str) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.kubeconfig = workdir / "kubeconfig"
        self.log = workdir / "kubesim.log"
        self.args = [
            sys.executable,
            "-m",
            "kubesim",
            "serve",
            "--port",
            str(self.port),
            "--kubeconfig",
            str(self.kubeconfig),
            "--pod-start-delay",
            "0.05",
            *extra,
        ]
        if nodes is not None:
            nodes_file = workdir / "nodes.yaml"
            data = {
                "nodes": [
                    n.model_dump(by_alias=True, exclude_defaults=True) | {"name": n.name}
                    for n in nodes.nodes
                ]
            }
            nodes_file.write_text(yaml.safe_dump(data))
            self.args += ["--nodes", str(nodes_file)]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> KubeSimProcess:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(  # noqa: S603 - our own command line
                self.args,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"kubesim exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}"
                )
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/readyz", timeout=1) as reply,  # noqa: S310
            ):
                if reply.status == 200 and self.kubeconfig.exists():
                    return self
            time.sleep(0.05)
        raise TimeoutError(f"kubesim did not start within {timeout}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> KubeSimProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def faults(self, **switches: Any) -> None:
        """Set fault switches over HTTP: `faults(unavailable={"seconds": 2})` (see Faults.apply)."""
        request = urllib.request.Request(  # noqa: S310 - our own server
            f"{self.url}/_kubesim/faults",
            data=json.dumps(switches).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as reply:  # noqa: S310
            reply.read()
