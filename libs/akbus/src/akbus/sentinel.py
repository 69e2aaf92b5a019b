"""A primary, one replica and three Sentinels on free ports: failovers on demand, for tests.

:class:`SentinelRedis` starts two :class:`~akbus.embedded.EmbeddedRedis` servers (the
second a replica of the first) and three Sentinels (the same binary with ``--sentinel``,
so Redis's or Valkey's alike) watching them under the service name ``akbus``, quorum 2.
Its ``url`` is the ``redis+sentinel://`` URL of the three. ``kill_primary()`` SIGKILLs the
current primary, ``wait_failover()`` waits until the Sentinels have promoted the replica,
and ``rejoin()`` starts the killed server again as a replica of the new primary (on its own
files: it loads them, then takes the primary's data in a full sync).

Failover is kept fast: a Sentinel holds a silent primary down after ``down_after_ms``
(1000 ms), and ``failover_timeout_ms`` (2000 ms) bounds a failover's steps. The Sentinels
know each other, the primary and the replica from their configuration files from the
start (fixed ids), so they can fail over at once instead of after their discovery rounds.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

from akbus.embedded import EmbeddedRedis, EmbeddedRedisError, find_server_binary, free_port

SERVICE = "akbus"
QUORUM = 2
# a full sync starts at once (not after the default five seconds' wait for more replicas)
_NODE_ARGS = ("--repl-diskless-sync-delay", "0")


class SentinelRedis:
    """Two data servers and three Sentinels; see the module's docstring."""

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 2000,
        binary: Path | None = None,
    ) -> None:
        # short: the servers' unix sockets live under it
        self.base_dir = base_dir or Path(tempfile.mkdtemp(prefix="aks-", dir="/tmp"))
        self.binary = binary or find_server_binary()
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.nodes = [
            EmbeddedRedis(self.base_dir / name, aof=True, binary=self.binary) for name in ("a", "b")
        ]
        for node in self.nodes:
            node.extra_args = _NODE_ARGS
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.sentinels: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}"

    # -- starting and stopping ----------------------------------------------------------
    def start(self, timeout_s: float = 30.0) -> SentinelRedis:
        primary, replica = self.nodes
        primary.start(timeout_s)
        replica.extra_args = (*_NODE_ARGS, "--replicaof", "127.0.0.1", str(primary.port))
        replica.start(timeout_s)
        self._wait(lambda: _replica_synced(replica), timeout_s, "the replica to sync")
        for index, port in enumerate(self.sentinel_ports):
            self.sentinels.append(self._start_sentinel(index, port, primary, replica))
        self._wait(self._sentinels_ready, timeout_s, "the Sentinels")
        return self

    def _start_sentinel(
        self, index: int, port: int, primary: EmbeddedRedis, replica: EmbeddedRedis
    ) -> subprocess.Popen[bytes]:
        folder = self.base_dir / f"sentinel-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            f"port {port}",
            "bind 127.0.0.1",
            f"dir {folder}",
            f"logfile {folder / 'sentinel.log'}",
            f"sentinel myid {_sentinel_id(index)}",
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary.port} {QUORUM}",
            f"sentinel down-after-milliseconds {SERVICE} {self.down_after_ms}",
            f"sentinel failover-timeout {SERVICE} {self.failover_timeout_ms}",
            f"sentinel parallel-syncs {SERVICE} 1",
            f"sentinel known-replica {SERVICE} 127.0.0.1 {replica.port}",
        ]
        lines += [
            f"sentinel known-sentinel {SERVICE} 127.0.0.1 {other} {_sentinel_id(k)}"
            for k, other in enumerate(self.sentinel_ports)
            if k != index
        ]
        config = folder / "sentinel.conf"  # a Sentinel rewrites its file: one of its own
        config.write_text("\n".join(lines) + "\n")
        return subprocess.Popen(  # noqa: S603 - our own argument list
            [str(self.binary), str(config), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _sentinels_ready(self) -> bool:
        for port in self.sentinel_ports:
            with contextlib.closing(_client(port)) as client:
                info = client.sentinel_master(SERVICE)
                if not isinstance(info, dict):
                    return False
                if (
                    int(info.get("num-slaves", 0)) < 1
                    or int(info.get("num-other-sentinels", 0)) < 2
                ):
                    return False
        return True

    def stop(self) -> None:
        for process in self.sentinels:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
        self.sentinels.clear()
        for node in self.nodes:
            node.stop()

    def remove(self) -> None:
        """Stop everything and delete the folder."""
        self.stop()
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> SentinelRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.remove()

    # -- who is the primary -------------------------------------------------------------
    def primary_port(self) -> int | None:
        """The primary's port as the Sentinels' majority names it; None when they disagree
        or know none."""
        named: dict[int, int] = {}
        for port in self.sentinel_ports:
            try:
                with contextlib.closing(_client(port)) as client:
                    found = client.sentinel_get_master_addr_by_name(SERVICE)
            except (redis.ConnectionError, redis.TimeoutError):
                continue
            if isinstance(found, tuple | list):
                named[int(found[1])] = named.get(int(found[1]), 0) + 1
        for node_port, votes in named.items():
            if votes >= QUORUM:
                return node_port
        return None

    def primary(self) -> EmbeddedRedis:
        """The server the Sentinels name the primary."""
        port = self.primary_port()
        for node in self.nodes:
            if node.port == port:
                return node
        raise EmbeddedRedisError(f"the Sentinels name no known primary (port {port})")

    def client(self) -> redis.Redis:
        """A synchronous client on the current primary (for setup and checks)."""
        return self.primary().client()

    # -- failing over -------------------------------------------------------------------
    def kill_primary(self) -> EmbeddedRedis:
        """SIGKILL the current primary; the server killed."""
        node = self.primary()
        node.kill()
        return node

    def wait_failover(self, killed: EmbeddedRedis, timeout_s: float = 30.0) -> EmbeddedRedis:
        """Wait until the Sentinels name another primary than ``killed`` and it takes
        writes; that primary."""

        def promoted() -> bool:
            port = self.primary_port()
            if port is None or port == killed.port:
                return False
            node = next(n for n in self.nodes if n.port == port)
            return _role(node) == "master"

        self._wait(promoted, timeout_s, "the failover")
        return self.primary()

    def rejoin(self, node: EmbeddedRedis, timeout_s: float = 30.0) -> None:
        """Start the killed ``node`` again as a replica of the current primary, and wait
        until it is in sync."""
        primary = self.primary()
        node.extra_args = (*_NODE_ARGS, "--replicaof", "127.0.0.1", str(primary.port))
        node.socket_path.unlink(missing_ok=True)
        node.start(timeout_s)
        try:
            self._wait(lambda: _replica_synced(node), timeout_s, "the old primary to rejoin")
        except EmbeddedRedisError as exc:
            raise EmbeddedRedisError(f"{exc}: {node._log_tail()}") from None

    def fail_over(self, timeout_s: float = 30.0) -> tuple[float, EmbeddedRedis]:
        """Kill the primary, wait for the new one, restart the old one as its replica;
        (seconds from the kill until the new primary took writes, the new primary)."""
        killed = self.kill_primary()
        began = time.monotonic()
        new = self.wait_failover(killed, timeout_s)
        took = time.monotonic() - began
        self.rejoin(killed, timeout_s)
        return took, new

    @staticmethod
    def _wait(check: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if check():
                    return
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                pass
            time.sleep(0.05)
        raise EmbeddedRedisError(f"timed out after {timeout_s}s waiting for {what}")


def _sentinel_id(index: int) -> str:
    return f"{index + 1:040x}"


def _client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=2, decode_responses=True)


def _role(node: EmbeddedRedis) -> str:
    with contextlib.closing(node.client()) as client:
        role = client.execute_command("ROLE")  # type: ignore[no-untyped-call]
    name = role[0]
    return name.decode() if isinstance(name, bytes) else str(name)


def _replica_synced(node: EmbeddedRedis) -> bool:
    with contextlib.closing(node.client()) as client:
        info = client.info("replication")
    return info.get("role") == "slave" and info.get("master_link_status") == "up"
