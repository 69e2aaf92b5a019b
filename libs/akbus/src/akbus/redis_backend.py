"""The bus backend on a real Redis (≥ 7.0) or Valkey, through redis-py's asyncio client.

Every Redis failure that means "not reachable right now" (connection refused or dropped,
timeouts, the server loading its AOF, a replica during failover) becomes
:class:`~akbus.errors.ConnectionLost`, which callers retry with backoff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis.asyncio as aioredis
from hiredis import pack_command as hiredis_pack
from redis import exceptions as rexc
from redis.asyncio.connection import (
    AbstractConnection,
    BlockingConnectionPool,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool

from akbus.backend import (
    Fields,
    GroupInfo,
    PendingEntry,
    PendingSummary,
    StreamEntry,
    TxBody,
)
from akbus.embedded import shared_server
from akbus.errors import ConnectionLost
from akbus.settings import RedisSettings, parse_sentinel, redact

_UNREACHABLE = (
    rexc.ConnectionError,
    rexc.TimeoutError,
    rexc.BusyLoadingError,
    rexc.ReadOnlyError,
    OSError,
)


class _HiredisPacking:
    """Pack commands with hiredis (C) instead of redis-py's Python packer.

    redis-py's asyncio connections always pack in Python, which costs ~8x more than
    hiredis for the eight-field entries the bus writes.
    """

    def pack_command(self, *args: Any) -> list[bytes]:
        if isinstance(args[0], str) and " " in args[0]:
            args = (*args[0].split(), *args[1:])
        try:
            packed: bytes = hiredis_pack(args)
        except UnicodeEncodeError:  # text read from undecodable bytes: write those bytes back
            packed = hiredis_pack(tuple(_raw(arg) for arg in args))
        return [packed]


def _raw(arg: Any) -> Any:
    return arg.encode("utf-8", "surrogateescape") if isinstance(arg, str) else arg


class _FastConnection(_HiredisPacking, Connection):
    pass


class _FastUnixConnection(_HiredisPacking, UnixDomainSocketConnection):
    pass


class _FastSSLConnection(_HiredisPacking, SSLConnection):
    pass


class _BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """The sentinel's master pool, waiting for a free connection like the plain one."""


def _fast_class(url: str) -> type[AbstractConnection]:
    if url.startswith("unix://"):
        return _FastUnixConnection
    return _FastSSLConnection if url.startswith("rediss://") else _FastConnection


def connect(settings: RedisSettings) -> tuple[aioredis.Redis, list[aioredis.Redis]]:
    """A client for ``settings.url`` (connecting on first use), and any helper clients.

    For Sentinel the helpers are the connections to the sentinels, closed with the client.
    """
    password = settings.password.get_secret_value() if settings.password else None
    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": settings.socket_timeout_s,
        "socket_connect_timeout": settings.connect_timeout_s,
        "health_check_interval": 30,
        # An entry holding bytes that are not UTF-8 must reach the dead-letter stream, not
        # crash the reader: such bytes decode to lone surrogates (and encode back unchanged);
        # aktypes refuses them as an unreadable entry.
        "encoding_errors": "surrogateescape",
    }
    if settings.is_sentinel:
        target = parse_sentinel(settings.url)
        sentinel = Sentinel(  # type: ignore[no-untyped-call]
            target.hosts,
            sentinel_kwargs={"password": target.password, **common},
            password=password or target.password,
            db=target.db,
            **common,
        )
        client: aioredis.Redis = sentinel.master_for(
            target.service,
            connection_pool_class=_BlockingSentinelPool,
            max_connections=settings.max_connections,
            timeout=None,
        )
        return client, list(sentinel.sentinels)
    kwargs = dict(common, max_connections=settings.max_connections)
    if password:
        kwargs["password"] = password
    # A blocking pool: more concurrent commands than connections wait their turn instead of
    # failing with "Too many connections" (which would read as Redis being unreachable).
    pool = BlockingConnectionPool.from_url(settings.url, timeout=None, **kwargs)
    # from_url picks the connection class from the scheme; swap in the hiredis-packing one
    pool.connection_class = _fast_class(settings.url)
    return aioredis.Redis.from_pool(pool), []


def _entries(raw: Any) -> list[StreamEntry]:
    return [
        StreamEntry(entry_id, dict(fields)) for entry_id, fields in raw or () if fields is not None
    ]


class RedisTx:
    """Reads WATCH their key and run now; writes are queued for MULTI/EXEC.

    Watching every key a body reads makes the transaction optimistic: if another client
    changes one of them before EXEC, EXEC fails and the body runs again on fresh values,
    so a read-modify-write body behaves as if it ran alone.
    """

    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe
        self._watched: set[str] = set()
        self.queued: list[Callable[[Any], Any]] = []

    async def _watch(self, key: str) -> None:
        if key not in self._watched:
            self._watched.add(key)
            await self._pipe.watch(key)

    async def get(self, key: str) -> str | None:
        await self._watch(key)
        value: str | None = await self._pipe.get(key)
        return value

    async def hget(self, key: str, field: str) -> str | None:
        await self._watch(key)
        value: str | None = await self._pipe.hget(key, field)
        return value

    async def hgetall(self, key: str) -> dict[str, str]:
        await self._watch(key)
        return dict(await self._pipe.hgetall(key))

    async def smembers(self, key: str) -> set[str]:
        await self._watch(key)
        return set(await self._pipe.smembers(key))

    async def exists(self, key: str) -> bool:
        await self._watch(key)
        return bool(await self._pipe.exists(key))

    def set(self, key: str, value: str, *, ex: int | None = None) -> None:
        self.queued.append(lambda p: p.set(key, value, ex=ex))

    def delete(self, *keys: str) -> None:
        self.queued.append(lambda p: p.delete(*keys))

    def hset(self, key: str, mapping: Mapping[str, str]) -> None:
        values = dict(mapping)
        self.queued.append(lambda p: p.hset(key, mapping=values))

    def hdel(self, key: str, *fields: str) -> None:
        self.queued.append(lambda p: p.hdel(key, *fields))

    def hincrby(self, key: str, field: str, amount: int = 1) -> None:
        self.queued.append(lambda p: p.hincrby(key, field, amount))

    def incrby(self, key: str, amount: int = 1) -> None:
        self.queued.append(lambda p: p.incrby(key, amount))

    def sadd(self, key: str, *members: str) -> None:
        self.queued.append(lambda p: p.sadd(key, *members))

    def srem(self, key: str, *members: str) -> None:
        self.queued.append(lambda p: p.srem(key, *members))

    def zadd(self, key: str, mapping: Mapping[str, float]) -> None:
        values = dict(mapping)
        self.queued.append(lambda p: p.zadd(key, values))

    def zrem(self, key: str, *members: str) -> None:
        self.queued.append(lambda p: p.zrem(key, *members))

    def expire(self, key: str, seconds: int) -> None:
        self.queued.append(lambda p: p.expire(key, seconds))

    def xadd(self, stream: str, fields: Fields, *, maxlen: int | None = None) -> None:
        values: dict[Any, Any] = dict(fields)
        self.queued.append(
            lambda p: p.xadd(stream, values, maxlen=maxlen, approximate=maxlen is not None)
        )


class RedisBackend:
    """:class:`akbus.backend.Backend` on Redis or Valkey."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        description: str = "redis",
        helpers: list[aioredis.Redis] | None = None,
    ) -> None:
        self._r = client
        self._helpers = helpers or []
        self.description = description

    @classmethod
    def from_settings(cls, settings: RedisSettings) -> RedisBackend:
        """A backend on ``settings.url``; with no URL, on the shared embedded server."""
        if not settings.url:
            url = shared_server(settings.embedded_dir)
            settings = settings.model_copy(update={"url": url})
        client, helpers = connect(settings)
        return cls(client, description=redact(settings.url), helpers=helpers)

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a command; one immediate retry on a fresh connection, then ConnectionLost.

        The retry covers the common case of a pooled connection the server or the network
        closed while idle. Retried writes are safe here: a repeated XADD carries the same
        envelope id, and "apply once" transactions re-check their mark.
        """
        try:
            return await fn(*args, **kwargs)
        except _UNREACHABLE:
            pass
        try:
            return await fn(*args, **kwargs)
        except _UNREACHABLE as exc:
            raise ConnectionLost(f"{self.description}: {type(exc).__name__}: {exc}") from exc

    # -- streams ------------------------------------------------------------------------
    async def xadd(
        self, stream: str, fields: Mapping[str, str], *, maxlen: int | None = None
    ) -> str:
        values: dict[Any, Any] = dict(fields)
        entry_id: str = await self._call(
            self._r.xadd, stream, values, maxlen=maxlen, approximate=maxlen is not None
        )
        return entry_id

    async def xadd_many(self, stream: str, items: Sequence[Mapping[str, str]]) -> list[str]:
        async def run() -> list[str]:
            async with self._r.pipeline(transaction=False) as pipe:
                for fields in items:
                    values: dict[Any, Any] = dict(fields)
                    pipe.xadd(stream, values)
                result: list[str] = await pipe.execute()
                return result

        result: list[str] = await self._call(run)
        return result

    async def create_group(self, stream: str, group: str) -> bool:
        try:
            await self._call(self._r.xgroup_create, stream, group, id="0", mkstream=True)
        except rexc.ResponseError as exc:
            if "BUSYGROUP" in str(exc):
                return False
            raise
        return True

    async def read_group(
        self,
        stream: str,
        group: str,
        consumer: str,
        *,
        count: int,
        block_ms: int | None,
        own_pending: bool = False,
    ) -> list[StreamEntry]:
        start = "0" if own_pending else ">"
        try:
            raw = await self._call(
                self._r.xreadgroup,
                group,
                consumer,
                {stream: start},
                count=count,
                block=None if own_pending else block_ms,
            )
        except rexc.ResponseError as exc:
            if "NOGROUP" in str(exc):
                await self.create_group(stream, group)
                return []
            raise
        return [e for _, batch in raw or () for e in _entries(batch)]

    async def ack(self, stream: str, group: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        count: int = await self._call(self._r.xack, stream, group, *ids)
        return count

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
        raw = await self._call(
            self._r.xpending_range,
            stream,
            group,
            min=start,
            max=end,
            count=count,
            consumername=consumer,
        )
        return [
            PendingEntry(
                id=item["message_id"],
                consumer=item["consumer"],
                idle_ms=int(item["time_since_delivered"]),
                deliveries=int(item["times_delivered"]),
            )
            for item in raw
        ]

    async def pending_summary(self, stream: str, group: str) -> PendingSummary:
        raw = await self._call(self._r.xpending, stream, group)
        return PendingSummary(count=int(raw["pending"]), min_id=raw["min"] or None)

    async def autoclaim(
        self, stream: str, group: str, consumer: str, *, min_idle_ms: int, count: int
    ) -> tuple[list[StreamEntry], list[str]]:
        raw = await self._call(
            self._r.xautoclaim, stream, group, consumer, min_idle_ms, start_id="0-0", count=count
        )
        deleted = list(raw[2]) if len(raw) > 2 else []
        return _entries(raw[1]), deleted

    async def claim(
        self, stream: str, group: str, consumer: str, ids: Sequence[str], *, justid: bool = False
    ) -> list[str]:
        if not ids:
            return []
        raw = await self._call(self._r.xclaim, stream, group, consumer, 0, list(ids), justid=justid)
        if justid:
            return list(raw)
        return [entry_id for entry_id, fields in raw if fields is not None]

    async def groups(self, stream: str) -> list[GroupInfo]:
        try:
            raw = await self._call(self._r.xinfo_groups, stream)
        except rexc.ResponseError as exc:
            if "no such key" in str(exc):
                return []
            raise
        return [
            GroupInfo(
                name=g["name"],
                consumers=int(g["consumers"]),
                pending=int(g["pending"]),
                last_delivered_id=g["last-delivered-id"],
                lag=None if g.get("lag") is None else int(g["lag"]),
            )
            for g in raw
        ]

    async def entries(
        self,
        stream: str,
        *,
        start: str = "-",
        end: str = "+",
        count: int | None = None,
        reverse: bool = False,
    ) -> list[StreamEntry]:
        if reverse:
            raw = await self._call(self._r.xrevrange, stream, max=end, min=start, count=count)
        else:
            raw = await self._call(self._r.xrange, stream, min=start, max=end, count=count)
        return _entries(raw)

    async def read(
        self, stream: str, after: str, *, count: int, block_ms: int | None
    ) -> list[StreamEntry]:
        raw = await self._call(self._r.xread, {stream: after}, count=count, block=block_ms)
        return [e for _, batch in raw or () for e in _entries(batch)]

    async def length(self, stream: str) -> int:
        count: int = await self._call(self._r.xlen, stream)
        return count

    async def trim_minid(self, stream: str, minid: str) -> int:
        count: int = await self._call(self._r.xtrim, stream, minid=minid, approximate=False)
        return count

    async def dead_letter(
        self, stream: str, group: str, entry_id: str, dlq: str, fields: Fields
    ) -> str:
        async def run() -> str:
            values: dict[Any, Any] = dict(fields)
            async with self._r.pipeline(transaction=True) as pipe:
                pipe.xadd(dlq, values)
                pipe.xack(stream, group, entry_id)
                new_id, _ = await pipe.execute()
                return str(new_id)

        result: str = await self._call(run)
        return result

    async def move(self, source: str, entry_id: str, target: str, fields: Fields) -> str:
        async def run() -> str:
            values: dict[Any, Any] = dict(fields)
            async with self._r.pipeline(transaction=True) as pipe:
                pipe.xadd(target, values)
                pipe.xdel(source, entry_id)
                new_id, _ = await pipe.execute()
                return str(new_id)

        result: str = await self._call(run)
        return result

    # -- keys and state -----------------------------------------------------------------
    async def get(self, key: str) -> str | None:
        value: str | None = await self._call(self._r.get, key)
        return value

    async def hgetall(self, key: str) -> dict[str, str]:
        return dict(await self._call(self._r.hgetall, key))

    async def smembers(self, key: str) -> set[str]:
        return set(await self._call(self._r.smembers, key))

    async def zrangebyscore(self, key: str, low: float, high: float) -> list[tuple[str, float]]:
        raw = await self._call(self._r.zrangebyscore, key, low, high, withscores=True)
        return [(member, float(score)) for member, score in raw]

    async def delete(self, *keys: str) -> int:
        if not keys:
            return 0
        count: int = await self._call(self._r.delete, *keys)
        return count

    async def expire(self, key: str, seconds: int) -> None:
        await self._call(self._r.expire, key, seconds)

    async def apply_once(self, marker: str, ttl_s: int, body: TxBody) -> bool:
        applied: bool = await self._call(self._optimistic, body, marker, ttl_s)
        return applied

    async def transact(self, body: TxBody) -> None:
        await self._call(self._optimistic, body, None, 0)

    async def _optimistic(self, body: TxBody, marker: str | None, ttl_s: int) -> bool:
        """Run ``body`` and commit its writes, again from the start if a read key changed.

        With a ``marker``: nothing happens when it is set already, and it is set in the
        same transaction as the writes.
        """
        async with self._r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    tx = RedisTx(pipe)
                    if marker is not None and await tx.exists(marker):
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        return False
                    await body(tx)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    for command in tx.queued:
                        command(pipe)
                    if marker is not None:
                        pipe.set(marker, "1", ex=ttl_s)
                    await pipe.execute()
                    return True
                except rexc.WatchError:
                    continue  # a key the body read changed meanwhile: run it again

    async def ping(self) -> None:
        await self._call(self._r.ping)

    async def close(self) -> None:
        await self._r.aclose()
        for helper in self._helpers:
            await helper.aclose()
