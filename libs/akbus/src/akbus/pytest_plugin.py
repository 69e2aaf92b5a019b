"""pytest fixtures: a real Redis server per test session, flushed before each test.

- ``redis_server``: the session's server (see :mod:`akbus.embedded` for which binary);
- ``redis_url``: its unix-socket URL, after ``FLUSHALL``;
- ``private_redis``: a server of this test's own, with AOF, free to SIGKILL and restart.

No test needs a server started by hand. Installed as a pytest plugin with akbus.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from akbus.embedded import EmbeddedRedis


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


def _short_dir(factory: pytest.TempPathFactory) -> Path:
    # unix socket paths are limited to ~100 bytes; pytest's base temp dir is short enough
    path = factory.mktemp("redis", numbered=True)
    if len(str(path / "redis.sock")) > 100:
        raise pytest.UsageError(f"temp dir {path} is too long for a unix socket path")
    return path
