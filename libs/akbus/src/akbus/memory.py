"""An in-memory backend with Redis Streams semantics, for tests and for running without Redis.

It keeps what the bus relies on: entry IDs that only grow, consumer groups that start at
the beginning of their stream, a pending list per group with owners, idle times and
delivery counts, consumers and when they last read or claimed, claiming, blocking reads,
atomic transactions and keys that expire (those live in :mod:`akbus.memory_state`). It is
one process's memory: nothing survives a restart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from akbus.backend import (
    ConsumerInfo,
    Durability,
    Fields,
    GroupInfo,
    Guard,
    PendingEntry,
    PendingSummary,
    StreamEntry,
    TxBody,
)
from akbus.memory_state import MemoryTx, Store, ZSet


def _key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _bound(entry_id: str, *, low: bool) -> tuple[int, int]:
    if entry_id == "-":
        return (0, 0)
    if entry_id == "+":
        return (2**64, 2**64)
    if "-" not in entry_id:
        return (int(entry_id), 0 if low else 2**64)
    return _key(entry_id)


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class _Pending:
    consumer: str
    delivered_at: int
    deliveries: int


@dataclass
class _Group:
    last_delivered: tuple[int, int] = (0, 0)
    pending: dict[str, _Pending] = field(default_factory=dict)
    consumers: dict[str, int] = field(default_factory=dict)  # name -> last read or claim (ms)


@dataclass
class _Stream:
    entries: dict[str, Fields] = field(default_factory=dict)  # insertion order = ID order
    groups: dict[str, _Group] = field(default_factory=dict)
    last_id: tuple[int, int] = (0, 0)
    waiters: set[asyncio.Future[None]] = field(default_factory=set)
    expires_at: float | None = None

    async def wait(self, deadline: float) -> bool:
        """Wait for the next entry until ``deadline`` (monotonic); False on timeout."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter, remaining)
        except TimeoutError:
            return False
        finally:
            self.waiters.discard(waiter)
        return True

    def notify(self) -> None:
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)


class MemoryBackend:
    """:class:`akbus.backend.Backend` in this process's memory."""

    description = "memory"

    def __init__(self) -> None:
        self._streams: dict[str, _Stream] = {}
        self._store = Store()
        self._lock = asyncio.Lock()
        self.closed = False

    def _live(self, name: str) -> _Stream | None:
        stream = self._streams.get(name)
        if (
            stream is not None
            and stream.expires_at is not None
            and stream.expires_at <= time.monotonic()
        ):
            del self._streams[name]
            return None
        return stream

    def _stream(self, name: str) -> _Stream:
        stream = self._live(name)
        if stream is None:
            stream = self._streams[name] = _Stream()
        return stream

    # -- streams ------------------------------------------------------------------------
    def _xadd(self, name: str, fields: Mapping[str, str], maxlen: int | None) -> str:
        stream = self._stream(name)
        ms = int(time.time() * 1000)
        last_ms, last_seq = stream.last_id
        key = (ms, 0) if ms > last_ms else (last_ms, last_seq + 1)
        stream.last_id = key
        entry_id = f"{key[0]}-{key[1]}"
        stream.entries[entry_id] = dict(fields)
        if maxlen is not None:
            while len(stream.entries) > maxlen:
                del stream.entries[next(iter(stream.entries))]
        stream.notify()
        return entry_id

    async def xadd(
        self, stream: str, fields: Mapping[str, str], *, maxlen: int | None = None
    ) -> str:
        return self._xadd(stream, fields, maxlen)

    async def xadd_many(self, stream: str, items: Sequence[Mapping[str, str]]) -> list[str]:
        return [self._xadd(stream, fields, None) for fields in items]

    async def create_group(self, stream: str, group: str) -> bool:
        target = self._stream(stream)
        if group in target.groups:
            return False
        target.groups[group] = _Group()
        return True

    def _deliver(
        self, stream: _Stream, group: _Group, consumer: str, count: int
    ) -> list[StreamEntry]:
        delivered: list[StreamEntry] = []
        for entry_id, fields in stream.entries.items():
            if len(delivered) >= count:
                break
            if _key(entry_id) <= group.last_delivered:
                continue
            group.last_delivered = _key(entry_id)
            group.pending[entry_id] = _Pending(consumer, _now_ms(), 1)
            delivered.append(StreamEntry(entry_id, dict(fields)))
        return delivered

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
        target = self._stream(stream)
        state = target.groups.get(group)
        if state is None:
            await self.create_group(stream, group)
            return []
        for entry_id in ack:
            state.pending.pop(entry_id, None)
        state.consumers[consumer] = _now_ms()
        if own_pending:
            mine = sorted((i for i, p in state.pending.items() if p.consumer == consumer), key=_key)
            return [
                StreamEntry(i, dict(target.entries[i])) for i in mine[:count] if i in target.entries
            ]
        delivered = self._deliver(target, state, consumer, count)
        if delivered or not block_ms:
            return delivered
        deadline = time.monotonic() + block_ms / 1000
        while not delivered and await target.wait(deadline):
            delivered = self._deliver(target, state, consumer, count)
        return delivered

    async def ack(self, stream: str, group: str, ids: Sequence[str]) -> int:
        state = self._stream(stream).groups.get(group)
        if state is None:
            return 0
        return sum(1 for i in ids if state.pending.pop(i, None) is not None)

    async def pending(
        self,
        stream: str,
        group: str,
        *,
        start: str = "-",
        end: str = "+",
        count: int = 100,
        consumer: str | None = None,
    ) -> list[PendingEntry]:
        state = self._stream(stream).groups.get(group)
        if state is None:
            return []
        low, high, now = _bound(start, low=True), _bound(end, low=False), _now_ms()
        found = [
            PendingEntry(i, p.consumer, now - p.delivered_at, p.deliveries)
            for i, p in sorted(state.pending.items(), key=lambda kv: _key(kv[0]))
            if low <= _key(i) <= high and (consumer is None or p.consumer == consumer)
        ]
        return found[:count]

    async def pending_summary(self, stream: str, group: str) -> PendingSummary:
        state = self._stream(stream).groups.get(group)
        if state is None or not state.pending:
            return PendingSummary(0, None)
        return PendingSummary(len(state.pending), min(state.pending, key=_key))

    async def autoclaim(
        self, stream: str, group: str, consumer: str, *, min_idle_ms: int, count: int
    ) -> tuple[list[StreamEntry], list[str]]:
        target = self._stream(stream)
        state = target.groups.get(group)
        if state is None:
            return [], []
        now = state.consumers[consumer] = _now_ms()
        claimed: list[StreamEntry] = []
        deleted: list[str] = []
        for entry_id in sorted(state.pending, key=_key):
            if len(claimed) + len(deleted) >= count:
                break
            info = state.pending[entry_id]
            if now - info.delivered_at < min_idle_ms:
                continue
            if entry_id not in target.entries:
                del state.pending[entry_id]
                deleted.append(entry_id)
                continue
            state.pending[entry_id] = _Pending(consumer, now, info.deliveries + 1)
            claimed.append(StreamEntry(entry_id, dict(target.entries[entry_id])))
        return claimed, deleted

    async def claim(
        self, stream: str, group: str, consumer: str, ids: Sequence[str], *, justid: bool = False
    ) -> list[str]:
        target = self._stream(stream)
        state = target.groups.get(group)
        if state is None:
            return []
        state.consumers[consumer] = _now_ms()
        claimed = []
        for entry_id in ids:
            info = state.pending.get(entry_id)
            if info is None:
                continue
            if entry_id not in target.entries:
                del state.pending[entry_id]
                continue
            deliveries = info.deliveries if justid else info.deliveries + 1
            state.pending[entry_id] = _Pending(consumer, _now_ms(), deliveries)
            claimed.append(entry_id)
        return claimed

    async def groups(self, stream: str) -> list[GroupInfo]:
        target = self._live(stream)
        if target is None:
            return []
        return [
            GroupInfo(
                name=name,
                consumers=len(g.consumers),
                pending=len(g.pending),
                last_delivered_id=f"{g.last_delivered[0]}-{g.last_delivered[1]}",
                lag=sum(1 for i in target.entries if _key(i) > g.last_delivered),
            )
            for name, g in target.groups.items()
        ]

    async def consumers(self, stream: str, group: str) -> list[ConsumerInfo]:
        target = self._live(stream)
        state = target.groups.get(group) if target is not None else None
        if state is None:
            return []
        now = _now_ms()
        return [
            ConsumerInfo(
                name=name,
                pending=sum(1 for p in state.pending.values() if p.consumer == name),
                idle_ms=now - seen,
            )
            for name, seen in state.consumers.items()
        ]

    async def delete_idle_consumers(
        self, stream: str, group: str, *, idle_ms: int, keep: str
    ) -> list[str]:
        removed = [
            c.name
            for c in await self.consumers(stream, group)
            if c.name != keep and c.pending == 0 and c.idle_ms >= idle_ms
        ]
        for name in removed:
            del self._streams[stream].groups[group].consumers[name]
        return removed

    async def entries(
        self,
        stream: str,
        *,
        start: str = "-",
        end: str = "+",
        count: int | None = None,
        reverse: bool = False,
    ) -> list[StreamEntry]:
        target = self._live(stream)
        if target is None:
            return []
        low, high = _bound(start, low=True), _bound(end, low=False)
        found = [
            StreamEntry(i, dict(f)) for i, f in target.entries.items() if low <= _key(i) <= high
        ]
        if reverse:
            found.reverse()
        return found[:count] if count is not None else found

    async def read(
        self, stream: str, after: str, *, count: int, block_ms: int | None
    ) -> list[StreamEntry]:
        target = self._stream(stream)

        def newer() -> list[StreamEntry]:
            last = target.last_id if after == "$" else _key(after)
            return [StreamEntry(i, dict(f)) for i, f in target.entries.items() if _key(i) > last][
                :count
            ]

        if after == "$":
            after = f"{target.last_id[0]}-{target.last_id[1]}"
        found = newer()
        if found or not block_ms:
            return found
        deadline = time.monotonic() + block_ms / 1000
        while not found and await target.wait(deadline):
            found = newer()
        return found

    async def read_many(
        self, positions: Mapping[str, str], *, count: int, block_ms: int | None
    ) -> list[tuple[str, StreamEntry]]:
        last = {
            name: self._stream(name).last_id if after == "$" else _key(after)
            for name, after in positions.items()
        }

        def newer() -> list[tuple[str, StreamEntry]]:
            found: list[tuple[str, StreamEntry]] = []
            for name, seen in last.items():
                entries = self._stream(name).entries.items()
                found += [(name, StreamEntry(i, dict(f))) for i, f in entries if _key(i) > seen][
                    :count
                ]
            return found

        found = newer()
        if found or not block_ms:
            return found
        deadline = time.monotonic() + block_ms / 1000
        while not found:
            waits = [asyncio.ensure_future(self._stream(name).wait(deadline)) for name in last]
            done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for waiting in pending:
                waiting.cancel()
            if not any(w.result() for w in done):
                return []  # nothing before the deadline
            found = newer()
        return found

    async def length(self, stream: str) -> int:
        target = self._live(stream)
        return 0 if target is None else len(target.entries)

    async def trim_minid(self, stream: str, minid: str) -> int:
        target = self._live(stream)
        if target is None:
            return 0
        bound = _key(minid)
        doomed = [i for i in target.entries if _key(i) < bound]
        for entry_id in doomed:
            del target.entries[entry_id]
        return len(doomed)

    async def dead_letter(
        self, stream: str, group: str, entry_id: str, dlq: str, fields: Fields
    ) -> str:
        new_id = self._xadd(dlq, fields, None)
        await self.ack(stream, group, [entry_id])
        return new_id

    async def move(self, source: str, entry_id: str, target: str, fields: Fields) -> str:
        new_id = self._xadd(target, fields, None)
        self._stream(source).entries.pop(entry_id, None)
        return new_id

    # -- keys and state -----------------------------------------------------------------
    def _set(self, key: str, value: str, ex: int | None) -> None:
        self._store.values[key] = value
        self._store.expires.pop(key, None)
        if ex is not None:
            self._expire(key, ex)

    def _delete(self, *keys: str) -> int:
        removed = 0
        for key in keys:
            if self._store.alive(key) is not None:
                removed += 1
            self._store.values.pop(key, None)
            self._store.expires.pop(key, None)
            if self._streams.pop(key, None) is not None:
                removed += 1
        return removed

    def _expire(self, key: str, seconds: int) -> None:
        if self._store.alive(key) is not None:
            self._store.expires[key] = time.monotonic() + seconds

    async def get(self, key: str) -> str | None:
        value = self._store.alive(key)
        return value if isinstance(value, str) else None

    async def mget(self, keys: Sequence[str]) -> list[str | None]:
        return [await self.get(key) for key in keys]

    async def hget(self, key: str, field: str) -> str | None:
        value = self._store.alive(key)
        return value.get(field) if isinstance(value, dict) and not isinstance(value, ZSet) else None

    async def hgetall(self, key: str) -> dict[str, str]:
        value = self._store.alive(key)
        return dict(value) if isinstance(value, dict) and not isinstance(value, ZSet) else {}

    async def smembers(self, key: str) -> set[str]:
        value = self._store.alive(key)
        return set(value) if isinstance(value, set) else set()

    async def zrangebyscore(self, key: str, low: float, high: float) -> list[tuple[str, float]]:
        value = self._store.alive(key)
        if not isinstance(value, ZSet):
            return []
        return sorted(
            ((m, s) for m, s in value.items() if low <= s <= high), key=lambda kv: (kv[1], kv[0])
        )

    async def delete(self, *keys: str) -> int:
        return self._delete(*keys)

    async def expire(self, key: str, seconds: int) -> None:
        stream = self._live(key)
        if stream is not None:
            stream.expires_at = time.monotonic() + seconds
        else:
            self._expire(key, seconds)

    async def apply_once(
        self, marker: str, ttl_s: int, body: TxBody, *, durable: Durability | None = None
    ) -> bool:
        del durable  # one copy in memory: nothing to wait for
        async with self._lock:
            if self._store.alive(marker) is not None:
                return False
            tx = MemoryTx(self)
            await body(tx)
            for command in tx.queued:
                command()
            self._set(marker, "1", ttl_s)
            return True

    async def apply_if(
        self, guards: Sequence[Guard], body: TxBody, *, durable: Durability | None = None
    ) -> bool:
        del durable  # one copy in memory: nothing to wait for
        async with self._lock:
            for guard in guards:
                current = self._store.alive(guard.key)
                if guard.field is not None:
                    is_hash = isinstance(current, dict) and not isinstance(current, ZSet)
                    current = current.get(guard.field) if is_hash else None
                if current != guard.expected:
                    return False
            tx = _WriteOnlyTx(self)
            await body(tx)
            for command in tx.queued:
                command()
            return True

    async def transact(self, body: TxBody, *, durable: Durability | None = None) -> None:
        del durable  # one copy in memory: nothing to wait for
        async with self._lock:
            tx = MemoryTx(self)
            await body(tx)
            for command in tx.queued:
                command()

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self.closed = True


class _WriteOnlyTx(MemoryTx):
    """A guarded commit's transaction: writes only, as on Redis."""

    async def _refuse(self, *_: object, **__: object) -> Any:
        raise TypeError("a guarded commit (apply_if) cannot read; read before it")

    get = hget = hgetall = smembers = exists = _refuse
