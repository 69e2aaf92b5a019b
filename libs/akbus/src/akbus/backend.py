"""The storage seam under the bus: Redis streams and state, as a small protocol.

:class:`akbus.redis_backend.RedisBackend` talks to a real Redis or Valkey;
:class:`akbus.memory.MemoryBackend` emulates the same semantics in memory. The bus logic
(:mod:`akbus.bus`, :mod:`akbus.subscriber`) is written once against this protocol and the
contract suite runs it over both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

Fields = dict[str, str]


@dataclass(frozen=True, slots=True)
class StreamEntry:
    id: str
    fields: Fields


@dataclass(frozen=True, slots=True)
class PendingEntry:
    """One entry delivered to a consumer and not acknowledged yet."""

    id: str
    consumer: str
    idle_ms: int
    deliveries: int


@dataclass(frozen=True, slots=True)
class GroupInfo:
    name: str
    consumers: int
    pending: int
    last_delivered_id: str
    lag: int | None  # entries not yet delivered to the group (None when unknown)


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """One consumer of a group."""

    name: str
    pending: int  # entries delivered to it and not acknowledged
    idle_ms: int  # since it last read or claimed


@dataclass(frozen=True, slots=True)
class PendingSummary:
    count: int
    min_id: str | None


@dataclass(frozen=True, slots=True)
class Durability:
    """How a durable commit waits for replicas: until ``replicas`` of them hold it (at most as
    many as are connected), for at most ``timeout_ms``."""

    replicas: int
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class Guard:
    """What a guarded commit checks: that ``key`` holds ``expected`` (None: that it is
    absent); with ``field``, that this field of the hash ``key`` does."""

    key: str
    expected: str | None
    field: str | None = None


class Tx(Protocol):
    """A state change applied atomically: reads run now, writes commit together."""

    async def get(self, key: str) -> str | None: ...
    async def hget(self, key: str, field: str) -> str | None: ...
    async def hgetall(self, key: str) -> dict[str, str]: ...
    async def smembers(self, key: str) -> set[str]: ...
    async def exists(self, key: str) -> bool: ...

    def set(self, key: str, value: str, *, ex: int | None = None) -> None: ...
    def delete(self, *keys: str) -> None: ...
    def hset(self, key: str, mapping: Mapping[str, str]) -> None: ...
    def hdel(self, key: str, *fields: str) -> None: ...
    def hincrby(self, key: str, field: str, amount: int = 1) -> None: ...
    def incrby(self, key: str, amount: int = 1) -> None: ...
    def sadd(self, key: str, *members: str) -> None: ...
    def srem(self, key: str, *members: str) -> None: ...
    def zadd(self, key: str, mapping: Mapping[str, float]) -> None: ...
    def zrem(self, key: str, *members: str) -> None: ...
    def expire(self, key: str, seconds: int) -> None: ...
    def xadd(
        self, stream: str, fields: Fields, *, maxlen: int | None = None, exact: bool = False
    ) -> None:
        """Add an entry; with ``maxlen``, trim the stream to about that many entries (Redis'
        ``MAXLEN ~``, whole nodes at a time), or to exactly that many with ``exact``."""
        ...


TxBody = Callable[[Tx], Awaitable[None]]


class Backend(Protocol):
    """Everything the bus needs from Redis."""

    # -- streams ------------------------------------------------------------------------
    async def xadd(
        self, stream: str, fields: Mapping[str, str], *, maxlen: int | None = None
    ) -> str: ...
    async def xadd_many(self, stream: str, items: Sequence[Mapping[str, str]]) -> list[str]: ...
    async def create_group(self, stream: str, group: str) -> bool: ...
    async def read_group(
        self,
        stream: str,
        group: str,
        consumer: str,
        *,
        count: int,
        block_ms: int | None,
        own_pending: bool = False,
        ack: Sequence[str] = (),
    ) -> list[StreamEntry]:
        """New entries for ``consumer`` (its own pending ones with ``own_pending``).

        ``ack`` names entries to acknowledge first, in the same round trip.
        """
        ...

    async def ack(self, stream: str, group: str, ids: Sequence[str]) -> int: ...
    async def pending(
        self,
        stream: str,
        group: str,
        *,
        start: str = "-",
        end: str = "+",
        count: int = 100,
        consumer: str | None = None,
    ) -> list[PendingEntry]: ...
    async def pending_summary(self, stream: str, group: str) -> PendingSummary: ...
    async def autoclaim(
        self, stream: str, group: str, consumer: str, *, min_idle_ms: int, count: int
    ) -> tuple[list[StreamEntry], list[str]]: ...
    async def claim(
        self, stream: str, group: str, consumer: str, ids: Sequence[str], *, justid: bool = False
    ) -> list[str]: ...
    async def groups(self, stream: str) -> list[GroupInfo]: ...
    async def consumers(self, stream: str, group: str) -> list[ConsumerInfo]: ...
    async def delete_idle_consumers(
        self, stream: str, group: str, *, idle_ms: int, keep: str
    ) -> list[str]:
        """Delete consumers idle ``idle_ms`` or more with nothing pending (never ``keep``).

        Checking and deleting are one atomic step; returns the names deleted.
        """
        ...

    async def entries(
        self,
        stream: str,
        *,
        start: str = "-",
        end: str = "+",
        count: int | None = None,
        reverse: bool = False,
    ) -> list[StreamEntry]: ...
    async def read(
        self, stream: str, after: str, *, count: int, block_ms: int | None
    ) -> list[StreamEntry]: ...
    async def read_many(
        self, positions: Mapping[str, str], *, count: int, block_ms: int | None
    ) -> list[tuple[str, StreamEntry]]:
        """Entries after each stream's position (``$``: only new ones), up to ``count`` per
        stream, waiting up to ``block_ms`` for the first; (stream, entry) in stream order."""
        ...

    async def length(self, stream: str) -> int: ...
    async def trim_minid(self, stream: str, minid: str) -> int: ...
    async def dead_letter(
        self, stream: str, group: str, entry_id: str, dlq: str, fields: Fields
    ) -> str: ...
    async def move(self, source: str, entry_id: str, target: str, fields: Fields) -> str: ...

    # -- keys and state -----------------------------------------------------------------
    async def get(self, key: str) -> str | None: ...
    async def mget(self, keys: Sequence[str]) -> list[str | None]:
        """The values of ``keys`` in their order (``None`` where missing), in one read."""
        ...

    async def hget(self, key: str, field: str) -> str | None: ...
    async def hgetall(self, key: str) -> dict[str, str]: ...
    async def smembers(self, key: str) -> set[str]: ...
    async def zrangebyscore(self, key: str, low: float, high: float) -> list[tuple[str, float]]: ...
    async def delete(self, *keys: str) -> int: ...
    async def expire(self, key: str, seconds: int) -> None: ...
    async def apply_once(
        self, marker: str, ttl_s: int, body: TxBody, *, durable: Durability | None = None
    ) -> bool:
        """Commit ``body`` with ``marker`` unless it is set; with ``durable``, return only
        once replicas hold the commit (or the wait timed out: see :class:`Durability`)."""
        ...

    async def transact(self, body: TxBody, *, durable: Durability | None = None) -> None: ...
    async def apply_if(
        self, guards: Sequence[Guard], body: TxBody, *, durable: Durability | None = None
    ) -> bool:
        """Commit ``body``'s writes if every guard holds (see :class:`Guard`)."""
        ...

    async def ping(self) -> None: ...
    async def close(self) -> None: ...
