"""pytest fixtures: a real Redis server per test session, flushed before each test.

- ``redis_server``: the session's server (see :mod:`akbus.embedded` for which binary);
- ``redis_url``: its unix-socket URL, after ``FLUSHALL``;
- ``private_redis``: a server of this test's own, with AOF, free to SIGKILL and restart;
- ``bus``: a :class:`~akbus.Bus` on ``redis_url`` (producer ``test``), closed after the test.

No test needs a server started by hand. Installed as a pytest plugin with akbus.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from akbus.bus import Bus
from akbus.embedded import EmbeddedRedis
from akbus.settings import RedisSettings


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(_short_dir(tmp_path_factory), aof=False)
    with server:
        yield server


@pytest.fixture
def redis_url(redis_server: EmbeddedRedis) -> str:
    redis_server.flush()
    return redis_server.url


@pytest.fixture
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(_short_dir(tmp_path_factory), aof=True)
    with server:
        yield server


@pytest.fixture
async def bus(redis_url: str) -> AsyncIterator[Bus]:
    made = Bus.connect(RedisSettings(url=redis_url), producer="test")
    try:
        yield made
    finally:
        await made.close()


def _short_dir(factory: pytest.TempPathFactory) -> Path:
    # unix socket paths are limited to ~100 bytes; pytest's base temp dir is short enough
    path = factory.mktemp("redis", numbered=True)
    if len(str(path / "redis.sock")) > 100:
        raise pytest.UsageError(f"temp dir {path} is too long for a unix socket path")
    return path
