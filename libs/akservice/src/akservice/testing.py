"""The testing kit the services share: a subprocess harness, free ports, waiting.

    with ServiceProcess([sys.executable, "-m", "akchainsvc"], env=..., log_path=...,
                        ready=http_ready("http://127.0.0.1:8091/readyz")) as relay:
        relay.kill(); relay.start()               # SIGKILL, then a new process

- :class:`ServiceProcess`: a real process with its output in a log file; ``start`` waits
  until ``ready()`` says so (or the process exits: the error carries its log's tail);
  ``stop`` sends a signal and waits; ``kill`` is SIGKILL; ``restart`` both.
- :class:`RuntimeProcess`: a service on the runtime (``python -m <module>``) with its own
  health port, fast bus timings and a clean environment.
- :func:`free_port`; :func:`eventually` and, for threads and synchronous clients,
  :func:`eventually_sync` (both from :mod:`akbus.testing`); :func:`http_ready`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from akbus.embedded import free_port
from akbus.testing import eventually, eventually_sync

__all__ = [
    "FAST_BUS_ENV",
    "RuntimeProcess",
    "ServiceProcess",
    "eventually",
    "eventually_sync",
    "free_port",
    "http_ready",
    "http_status",
]


def http_status(url: str, timeout_s: float = 2.0) -> tuple[int, object]:
    """Status and JSON body (or text) of a GET, whatever the status."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - local
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    try:
        return status, json.loads(body or b"null")
    except ValueError:
        return status, body.decode(errors="replace")


def http_ready(url: str) -> Callable[[], bool]:
    """A readiness check: ``url`` answers 200."""

    def ready() -> bool:
        try:
            return http_status(url)[0] == 200
        except OSError:
            return False

    return ready


SECRET_NAMES = re.compile(r"PASSPHRASE|PASSWORD|SECRET|TOKEN|CREDENTIAL|(^|_)KEY($|_)", re.I)


def child_environment(**extra: str) -> dict[str, str]:
    """This process's environment for a child, without the services' settings (``AP_*``,
    ``AKBUS_*``, ``REDIS_*``) and without anything named like a secret (passphrases,
    tokens, keys), plus ``extra``: a child gets only the secrets it is given."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AP_", "AKBUS_", "REDIS_")) and not SECRET_NAMES.search(k)
    }
    return {**kept, **extra}


class ServiceProcess:
    """A child process for tests: started, checked for readiness, signalled, killed."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        log_path: Path,
        ready: Callable[[], bool],
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.command = list(command)
        self.log_path = log_path
        self.ready = ready
        self.env = dict(os.environ if env is None else env)
        self.name = name or " ".join(self.command[-2:])
        self.cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self, *, wait_ready: bool = True, timeout: float = 30.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # the log is its owner's alone: it may name tenants, leases and addresses
        descriptor = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "ab") as log:
            self.process = subprocess.Popen(  # noqa: S603 - the test's own command
                self.command, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd
            )
        if wait_ready:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.process.returncode}: {self.log()[-3000:]}"
                )
            if self.ready():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} not ready after {timeout}s: {self.log()[-3000:]}")
            time.sleep(0.05)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int | None:
        """Send ``sig`` and wait (SIGKILL after ``timeout``); the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        code = self.process.returncode
        self.process = None
        return code

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self, sig: int = signal.SIGTERM) -> None:
        self.stop(sig)
        self.start()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


FAST_BUS_ENV = {
    "AKBUS_CLAIM_IDLE_S": "1",
    "AKBUS_CLAIM_INTERVAL_S": "0.2",
    "AKBUS_RETRY_INITIAL_S": "0.05",
    "AKBUS_RETRY_MAX_S": "0.5",
}
"""Bus timings that make a killed service's entries change hands within about a second."""


class RuntimeProcess(ServiceProcess):
    """``python -m <module>``, a service on the runtime: on a health port of its own, with
    JSON logs, fast bus timings, and none of the test's own ``AP_*``/``AKBUS_*``/``REDIS_*``
    settings; ready when its ``/readyz`` says so."""

    def __init__(
        self,
        module: str,
        service: str,
        *,
        redis_url: str,
        log_path: Path,
        env: Mapping[str, str],
        name: str | None = None,
    ) -> None:
        self.health_port = free_port()
        inherited = child_environment()
        settings = {
            "REDIS_URL": redis_url,
            f"AP_{service.upper()}_HEALTH_LISTEN": f"127.0.0.1:{self.health_port}",
            "AP_LOG_FORMAT": "json",
            **FAST_BUS_ENV,
            **env,
        }
        super().__init__(
            [sys.executable, "-m", module],
            log_path=log_path,
            ready=http_ready(f"{self.health_url}/readyz"),
            env={**inherited, **settings},
            name=name or service,
        )

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.health_port}"

    def readiness(self) -> tuple[int, object]:
        return http_status(f"{self.health_url}/readyz")
