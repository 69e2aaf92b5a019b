"""Reaching Redis: TCP, unix sockets, TLS, passwords, Sentinel, and refusing bad settings."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trustme
from prometheus_client import REGISTRY
from pydantic import ValidationError

from akbus import Bus, ConnectionLost, RedisSettings
from akbus.embedded import EmbeddedRedis, free_port, stop_shared_server
from akbus.settings import parse_sentinel, redact
from akbus.testing import eventually_sync
from aktypes.events import BidEngineStatus


async def round_trip(url: str, **settings: object) -> None:
    bus = Bus.connect(RedisSettings(url=url, **settings), producer="conn-test")  # type: ignore[arg-type]
    try:
        await bus.wait_ready(timeout_s=10)
        await bus.publish_status("bidengine", BidEngineStatus(orders=3))
        latest = await bus.status("bidengine")
        assert latest is not None and latest.payload == BidEngineStatus(orders=3)
    finally:
        await bus.close()


async def test_tcp_and_unix_urls(redis_server: EmbeddedRedis) -> None:
    redis_server.flush()
    await round_trip(redis_server.tcp_url)
    await round_trip(redis_server.url)


async def test_passwords_in_the_url_or_the_settings(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = EmbeddedRedis(
        tmp_path_factory.mktemp("auth"), aof=False, extra_args=("--requirepass", "s3cret")
    )
    with server:
        await round_trip(f"redis://:s3cret@127.0.0.1:{server.port}/0")
        await round_trip(server.tcp_url, password="s3cret")
        bus = Bus.connect(
            RedisSettings(url=f"redis://:wrong@127.0.0.1:{server.port}/0"), producer="x"
        )
        with pytest.raises(Exception, match="invalid|WRONGPASS|AUTH") as info:
            await bus.backend.ping()
        assert "wrong" not in str(info.value).replace("WRONGPASS", "")
        await bus.close()


@contextlib.asynccontextmanager
async def tls_proxy(target: Path, certificate: trustme.LeafCert) -> AsyncIterator[int]:
    """A TLS terminator in front of the server's unix socket; yields its port."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(context)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(str(target))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_tls_urls(redis_server: EmbeddedRedis, tmp_path: Path) -> None:
    authority = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    async with tls_proxy(redis_server.socket_path, authority.issue_cert("localhost")) as port:
        await round_trip(f"rediss://localhost:{port}/0?ssl_ca_certs={ca_file}")
        bus = Bus.connect(RedisSettings(url=f"rediss://localhost:{port}/0"), producer="x")
        with pytest.raises(ConnectionLost, match="certificate"):
            await bus.backend.ping()  # an unknown authority is refused
        await bus.close()


@pytest.fixture
def sentinel(
    redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[int]:
    """A Sentinel watching the session server as master ``akash``; yields its port."""
    directory = tmp_path_factory.mktemp("sentinel")
    probe = EmbeddedRedis(directory, aof=False)  # borrows the free-port finder and binary
    config = directory / "sentinel.conf"
    config.write_text(
        f"port {probe.port}\nbind 127.0.0.1\ndir {directory}\n"
        f"sentinel monitor akash 127.0.0.1 {redis_server.port} 1\n"
    )
    process = subprocess.Popen(
        [str(redis_server.binary), str(config), "--sentinel"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def listening() -> bool:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", probe.port)):
                return True
            return False

        eventually_sync(listening, 10, "the sentinel listening")
        yield probe.port
    finally:
        process.kill()
        process.wait(10)


async def test_sentinel_urls(redis_server: EmbeddedRedis, sentinel: int) -> None:
    redis_server.flush()
    await round_trip(f"redis+sentinel://127.0.0.1:{sentinel}/akash")


@pytest.mark.parametrize("sentinel_url", [False, True])
async def test_more_concurrent_commands_than_connections_wait_their_turn(
    redis_server: EmbeddedRedis,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
    sentinel_url: bool,
) -> None:
    redis_server.flush()
    url = (
        f"redis+sentinel://127.0.0.1:{request.getfixturevalue('sentinel')}/akash"
        if sentinel_url
        else redis_server.url
    )
    bus = Bus.connect(RedisSettings(url=url, max_connections=4), producer="pool-test")
    before = _reconnects()
    try:
        statuses = [BidEngineStatus(orders=n) for n in range(300)]
        ids = await asyncio.gather(*(bus.publish_status("bidengine", s) for s in statuses))
        assert len(set(ids)) == 300
    finally:
        await bus.close()
    assert _reconnects() == before
    assert not [r for r in caplog.records if "unreachable" in r.getMessage()]


def _reconnects() -> float:
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "akbus_reconnects"
        for sample in metric.samples
        if sample.name == "akbus_reconnects_total"
    )


async def test_an_unreachable_server_is_reported_not_hung() -> None:
    bus = Bus.connect(
        RedisSettings(url="redis://127.0.0.1:9/0", connect_timeout_s=0.2), producer="x"
    )
    bus.publish_timeout_s = 0.3
    started = time.monotonic()
    with pytest.raises(ConnectionLost, match="127.0.0.1:9"):
        await bus.wait_ready(timeout_s=0.3)
    with pytest.raises(ConnectionLost):
        await bus.publish_status("bidengine", BidEngineStatus(orders=1))
    assert time.monotonic() - started < 5
    await bus.close()


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("localhost:6379", "must start with one of"),
        ("http://localhost", "must start with one of"),
        ("redis+sentinel://host:26379", "names no service"),
        ("redis+sentinel://:pw@,other:1/svc", "empty host"),
    ],
)
def test_bad_urls_are_refused_by_name(url: str, fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        RedisSettings(url=url)


def test_passwords_never_reach_messages() -> None:
    assert redact("redis://:hunter2@db:6379/0") == "redis://:***@db:6379/0"
    with pytest.raises(ValidationError) as info:
        RedisSettings(url="http://:hunter2@db")
    assert "hunter2" not in str(info.value)
    target = parse_sentinel("redis+sentinel://:pw@s1:26379,s2/mymaster/2")
    assert (target.hosts, target.service, target.db, target.password) == (
        [("s1", 26379), ("s2", 26379)],
        "mymaster",
        2,
        "pw",
    )


def test_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "unix:///run/redis.sock")
    monkeypatch.setenv("REDIS_PASSWORD", "pw")
    settings = RedisSettings()
    assert settings.url == "unix:///run/redis.sock"
    assert settings.password is not None and settings.password.get_secret_value() == "pw"
    assert "pw" not in repr(settings)


async def test_an_empty_url_means_the_shared_embedded_server(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path_factory.mktemp("shared")
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("REDIS_EMBEDDED_DIR", str(folder))
    settings = RedisSettings()
    assert settings.url == "" and settings.where == f"the embedded server in {folder}"
    first, second = (Bus.connect(settings, producer=p) for p in ("one", "two"))
    try:
        pid = (folder / "redis.pid").read_text()
        await first.publish_status("bidengine", BidEngineStatus(orders=7))
        latest = await second.status("bidengine")  # another process would find it too
        assert latest is not None and latest.payload == BidEngineStatus(orders=7)
        assert (folder / "redis.pid").read_text() == pid  # one server, started once
        assert (folder / "appendonly.aof").exists() or (folder / "appendonlydir").is_dir()
    finally:
        await first.close()
        await second.close()
        assert stop_shared_server(folder)
    assert not stop_shared_server(folder)


def test_parallel_test_workers_draw_ports_from_disjoint_stripes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    for worker in range(3):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
        ports = [free_port() for _ in range(20)]
        assert {port % 3 for port in ports} == {worker}
        assert len(set(ports)) == 20
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    assert len({free_port() % 3 for _ in range(30)}) > 1
