"""A real chain relay process for tests: ``python -m akchainsvc`` against a devnet and Redis."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from akbus import Bus
from aktypes.events import Envelope, envelope_from_fields
from aktypes.events.streams import CHAIN_EVENTS, CHAIN_RESULTS


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RelayProcess:
    """The relay in a subprocess; ``kill()`` is SIGKILL, ``start()`` starts a new one."""

    def __init__(
        self,
        *,
        redis_url: str,
        node: str,
        api: str,
        key_file: Path,
        passphrase: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.health_port = _free_port()
        self.log_path = log_path
        self.env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "AP_NODE": node,
            "AP_API": api,
            "AP_KEY_FILE": str(key_file),
            "AP_KEY_PASSPHRASE": passphrase,
            "AP_EVENTS_START_HEIGHT": "1",
            "AP_EVENTS_POLL_INTERVAL": "0.2",
            "AP_TX_POLL_INTERVAL": "0.05",
            "AP_TX_BROADCAST_TIMEOUT": "3s",
            "AP_STATUS_INTERVAL": "0.5",
            "AP_HEALTH_LISTEN": f"127.0.0.1:{self.health_port}",
            "AKBUS_CLAIM_IDLE_S": "1",
            "AKBUS_CLAIM_INTERVAL_S": "0.2",
            "AKBUS_RETRY_INITIAL_S": "0.05",
            "AKBUS_RETRY_MAX_S": "0.5",
            **(extra_env or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.health_port}"

    def start(self, *, wait_ready: bool = True, timeout: float = 30.0) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "akchainsvc"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        if wait_ready:
            self.wait_ready(timeout)

    def readiness(self) -> tuple[int, dict[str, object]]:
        try:
            with urllib.request.urlopen(f"{self.health_url}/readyz", timeout=2) as response:  # noqa: S310
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"relay exited with {self.process.returncode}: {self.log()[-3000:]}"
                )
            try:
                if self.readiness()[0] == 200:
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"relay not ready after {timeout}s: {self.log()[-3000:]}")
            time.sleep(0.05)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int | None:
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

    def __enter__(self) -> RelayProcess:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


# -- reading the relay's streams ------------------------------------------------------------


async def entries(bus: Bus, stream: str) -> list[Envelope[Any]]:
    return [envelope_from_fields(e.fields) for e in await bus.backend.entries(stream)]


async def chain_events(bus: Bus) -> list[Any]:
    return [e.payload for e in await entries(bus, CHAIN_EVENTS)]


async def results(bus: Bus) -> list[Any]:
    return [e.payload for e in await entries(bus, CHAIN_RESULTS)]


async def wait_for(check: Any, timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll the async ``check`` until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        await asyncio.sleep(0.05)
