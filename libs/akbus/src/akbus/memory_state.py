"""The in-memory backend's plain keys (strings, hashes, sets, sorted sets) and transactions.

Part of :mod:`akbus.memory`: :class:`MemoryTx` reads the store at once and applies its
writes together when the backend commits it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from akbus.backend import Fields


class Store:
    """Plain keys: strings, hashes, sets and sorted sets, with expiry."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.expires: dict[str, float] = {}

    def alive(self, key: str) -> Any:
        deadline = self.expires.get(key)
        if deadline is not None and deadline <= time.monotonic():
            self.values.pop(key, None)
            self.expires.pop(key, None)
        return self.values.get(key)

    def of(self, key: str, kind: type) -> Any:
        value = self.alive(key)
        if value is None:
            value = self.values[key] = kind()
        elif not isinstance(value, kind):
            raise TypeError(f"WRONGTYPE {key} holds {type(value).__name__}, not {kind.__name__}")
        return value


class Keys(Protocol):
    """What a transaction uses of its :class:`~akbus.memory.MemoryBackend`: the store, and
    the writes that also touch streams or expiry."""

    @property
    def _store(self) -> Store: ...
    async def hgetall(self, key: str) -> dict[str, str]: ...
    async def smembers(self, key: str) -> set[str]: ...
    def _live(self, name: str) -> object | None: ...  # the stream of that name
    def _set(self, key: str, value: str, ex: int | None) -> None: ...
    def _delete(self, *keys: str) -> int: ...
    def _expire(self, key: str, seconds: int) -> None: ...
    def _xadd(self, name: str, fields: Mapping[str, str], maxlen: int | None) -> str: ...


class MemoryTx:
    """Reads see the store now; writes are applied together at commit."""

    def __init__(self, backend: Keys) -> None:
        self._b = backend
        self.queued: list[Callable[[], object]] = []

    async def get(self, key: str) -> str | None:
        value = self._b._store.alive(key)
        return value if isinstance(value, str) else None

    async def hget(self, key: str, field: str) -> str | None:
        value = self._b._store.alive(key)
        return value.get(field) if isinstance(value, dict) else None

    async def hgetall(self, key: str) -> dict[str, str]:
        return await self._b.hgetall(key)

    async def smembers(self, key: str) -> set[str]:
        return await self._b.smembers(key)

    async def exists(self, key: str) -> bool:
        return self._b._store.alive(key) is not None or self._b._live(key) is not None

    def set(self, key: str, value: str, *, ex: int | None = None) -> None:
        self.queued.append(lambda: self._b._set(key, value, ex))

    def delete(self, *keys: str) -> None:
        self.queued.append(lambda: self._b._delete(*keys))

    def hset(self, key: str, mapping: Mapping[str, str]) -> None:
        values = dict(mapping)
        self.queued.append(lambda: self._b._store.of(key, dict).update(values))

    def hdel(self, key: str, *fields: str) -> None:
        def run() -> None:
            target = self._b._store.of(key, dict)
            for name in fields:
                target.pop(name, None)

        self.queued.append(run)

    def hincrby(self, key: str, field: str, amount: int = 1) -> None:
        def run() -> None:
            target = self._b._store.of(key, dict)
            target[field] = str(int(target.get(field, "0")) + amount)

        self.queued.append(run)

    def incrby(self, key: str, amount: int = 1) -> None:
        def run() -> None:
            current = self._b._store.alive(key)
            self._b._store.values[key] = str(int(current or "0") + amount)

        self.queued.append(run)

    def sadd(self, key: str, *members: str) -> None:
        self.queued.append(lambda: self._b._store.of(key, set).update(members))

    def srem(self, key: str, *members: str) -> None:
        self.queued.append(lambda: self._b._store.of(key, set).difference_update(members))

    def zadd(self, key: str, mapping: Mapping[str, float]) -> None:
        values = dict(mapping)
        self.queued.append(lambda: self._b._store.of(key, ZSet).update(values))

    def zrem(self, key: str, *members: str) -> None:
        def run() -> None:
            target = self._b._store.of(key, ZSet)
            for member in members:
                target.pop(member, None)

        self.queued.append(run)

    def expire(self, key: str, seconds: int) -> None:
        self.queued.append(lambda: self._b._expire(key, seconds))

    def xadd(
        self, stream: str, fields: Fields, *, maxlen: int | None = None, exact: bool = False
    ) -> None:
        del exact  # memory trims exactly, always
        values = dict(fields)
        self.queued.append(lambda: self._b._xadd(stream, values, maxlen))


class ZSet(dict[str, float]):
    """A sorted set: member → score."""
