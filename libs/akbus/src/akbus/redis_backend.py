"""The bus backend on a real Redis (≥ 7.0) or Valkey, through redis-py's asyncio client.

Every Redis failure that means "not reachable right now" (connection refused or dropped,
timeouts, the server loading its AOF, a replica during failover) becomes
:class:`~akbus.errors.ConnectionLost`, which callers retry with backoff.

Three operations run as Lua scripts, each one command and atomic: ``xadd_many`` (a batch of
entries in one command and one reply, far cheaper for the client than a pipeline of XADDs),
``delete_idle_consumers`` (the "no pending entries" check and the deletion together) and
``apply_if`` (writes committed only while guard keys, or fields of hashes, hold the values
the caller read: a compare-and-set in one round trip, where WATCH/GET/MULTI/EXEC takes three).
``read_group`` sends the acknowledgements it is given and its XREADGROUP in one pipeline.

A durable commit (``durable=``) returns only once the replicas hold it: ``apply_if`` sends
its script and ``WAIT`` in one pipeline (one connection, so ``WAIT`` counts that write);
the WATCH/MULTI/EXEC commits follow their EXEC with a one-key write and ``WAIT`` on one
connection (replication keeps the primary's order, so a replica that holds the later write
holds the commit). With no replica connected (``ROLE``, asked at most once a second) there is
nothing to wait for. A wait that times out is counted and logged, and the commit stands.
A connection lost anywhere in it runs the whole of it again, as for any command.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis import exceptions as rexc

from akbus import metrics
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
from akbus.embedded import shared_server
from akbus.errors import ConnectionLost
from akbus.redis_connection import connect
from akbus.redis_tx import APPLY_IF, CommandTx, RedisTx
from akbus.settings import RedisSettings, redact

log = logging.getLogger("akbus")
BARRIER_KEY = "akbus:durable"  # the write a durable WATCH/MULTI/EXEC commit's WAIT counts
ROLE_CHECK_S = 1.0  # how long the number of connected replicas is trusted
_UNREACHABLE = (
    rexc.ConnectionError,
    rexc.TimeoutError,
    rexc.BusyLoadingError,
    rexc.ReadOnlyError,
    OSError,
)


# ARGV: blocks of entries that have the same field names, each block: n (how many fields),
# the n names, m (how many entries), then m × n values. Names go once per block, not once
# per entry: half the strings to pack, send and convert.
_XADD_MANY = """
local ids, i = {}, 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local args = {}
  for j = 1, n do args[2 * j - 1] = ARGV[i + j] end
  local m = tonumber(ARGV[i + n + 1])
  i = i + n + 2
  for _ = 1, m do
    for j = 1, n do args[2 * j] = ARGV[i + j - 1] end
    ids[#ids + 1] = redis.call('XADD', KEYS[1], '*', unpack(args))
    i = i + n
  end
end
return ids
"""
_XADD_MANY_CHUNK = 1000  # entries per script call: keeps each call short for the server

# KEYS[1] stream; ARGV group, the consumer to keep, minimum idle ms.
_DELETE_IDLE_CONSUMERS = """
local removed = {}
for _, info in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local c = {}
  for i = 1, #info, 2 do c[info[i]] = info[i + 1] end
  if c['name'] ~= ARGV[2] and c['pending'] == 0 and c['idle'] >= tonumber(ARGV[3]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], c['name'])
    removed[#removed + 1] = c['name']
  end
end
return removed
"""


def _blocks(items: Sequence[Mapping[str, str]]) -> list[Any]:
    """The arguments of ``_XADD_MANY``: consecutive entries with the same names share a block."""
    args: list[Any] = []
    names: tuple[str, ...] = ()
    count_at = -1
    for fields in items:
        keys = tuple(fields)
        if keys != names or count_at < 0:
            names = keys
            args.append(len(keys))
            args.extend(keys)
            count_at = len(args)
            args.append(0)
        args[count_at] += 1
        args.extend(fields.values())
    return args


def _entries(raw: Any) -> list[StreamEntry]:
    """Entries as redis-py parsed them (each with a dict of its own); deleted ones skipped."""
    return [StreamEntry(entry_id, fields) for entry_id, fields in raw or () if fields is not None]


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
        self._xadd_many = client.register_script(_XADD_MANY)
        self._delete_idle_consumers = client.register_script(_DELETE_IDLE_CONSUMERS)
        self._apply_if = client.register_script(APPLY_IF)
        self._replicas = 0
        self._replicas_checked = -ROLE_CHECK_S
        self._unreplicated_logged = -60.0

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
        ids: list[str] = []
        for start in range(0, len(items), _XADD_MANY_CHUNK):
            args = _blocks(items[start : start + _XADD_MANY_CHUNK])
            ids.extend(await self._call(self._xadd_many, keys=[stream], args=args))
        return ids

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
        ack: Sequence[str] = (),
    ) -> list[StreamEntry]:
        start = "0" if own_pending else ">"
        block = None if own_pending else block_ms

        async def ack_and_read() -> Any:
            async with self._r.pipeline(transaction=False) as pipe:
                pipe.xack(stream, group, *ack)
                pipe.xreadgroup(group, consumer, {stream: start}, count=count, block=block)
                return (await pipe.execute())[1]

        try:
            if ack:
                raw = await self._call(ack_and_read)
            else:
                raw = await self._call(
                    self._r.xreadgroup, group, consumer, {stream: start}, count=count, block=block
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

    async def consumers(self, stream: str, group: str) -> list[ConsumerInfo]:
        try:
            raw = await self._call(self._r.xinfo_consumers, stream, group)
        except rexc.ResponseError as exc:
            if "NOGROUP" in str(exc) or "no such key" in str(exc):
                return []
            raise
        return [
            ConsumerInfo(name=c["name"], pending=int(c["pending"]), idle_ms=int(c["idle"]))
            for c in raw
        ]

    async def delete_idle_consumers(
        self, stream: str, group: str, *, idle_ms: int, keep: str
    ) -> list[str]:
        try:
            removed = await self._call(
                self._delete_idle_consumers, keys=[stream], args=[group, keep, idle_ms]
            )
        except rexc.ResponseError as exc:
            if "NOGROUP" in str(exc) or "no such key" in str(exc):
                return []
            raise
        return [str(name) for name in removed]

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

    async def read_many(
        self, positions: Mapping[str, str], *, count: int, block_ms: int | None
    ) -> list[tuple[str, StreamEntry]]:
        raw = await self._call(self._r.xread, dict(positions), count=count, block=block_ms)
        return [(str(name), e) for name, batch in raw or () for e in _entries(batch)]

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

    async def mget(self, keys: Sequence[str]) -> list[str | None]:
        if not keys:
            return []
        return list(await self._call(self._r.mget, list(keys)))

    async def hget(self, key: str, field: str) -> str | None:
        value: str | None = await self._call(self._r.hget, key, field)
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

    async def apply_once(
        self, marker: str, ttl_s: int, body: TxBody, *, durable: Durability | None = None
    ) -> bool:
        async def run() -> bool:
            applied = await self._optimistic(body, marker, ttl_s)
            if durable is not None:  # a mark found may be a first try's, not yet replicated
                await self._barrier(durable)
            return applied

        done: bool = await self._call(run)
        return done

    async def transact(self, body: TxBody, *, durable: Durability | None = None) -> None:
        async def run() -> None:
            await self._optimistic(body, None, 0)
            if durable is not None:
                await self._barrier(durable)

        await self._call(run)

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

    async def apply_if(
        self, guards: Sequence[Guard], body: TxBody, *, durable: Durability | None = None
    ) -> bool:
        tx = CommandTx()
        await body(tx)
        keys, args = [g.key for g in guards], tx.script_args(guards)
        wanted = await self._wanted(durable)
        if not wanted or durable is None:
            done = await self._call(self._apply_if, keys=keys, args=args)
            return bool(done)

        async def run() -> tuple[Any, int]:
            async with self._r.pipeline(transaction=False) as pipe:
                await self._apply_if(keys=keys, args=args, client=pipe)
                pipe.wait(wanted, durable.timeout_ms)
                done, acked = await pipe.execute()
                return done, int(acked)

        done, acked = await self._call(run)
        if done:
            self._count(wanted, acked, durable)
        return bool(done)

    async def _barrier(self, durable: Durability) -> None:
        """Return once the replicas hold every write made before (see the module's doc)."""
        wanted = await self._wanted(durable)
        if not wanted:
            return
        async with self._r.pipeline(transaction=False) as pipe:
            pipe.incr(BARRIER_KEY)
            pipe.wait(wanted, durable.timeout_ms)
            _, acked = await pipe.execute()
        self._count(wanted, int(acked), durable)

    async def _wanted(self, durable: Durability | None) -> int:
        """How many replicas a durable commit waits for: 0 when none is connected."""
        if durable is None or durable.replicas <= 0:
            return 0
        now = time.monotonic()
        if now - self._replicas_checked >= ROLE_CHECK_S:
            role = await self._call(self._r.execute_command, "ROLE")
            self._replicas = len(role[2]) if role and role[0] == "master" else 0
            self._replicas_checked = now
        if not self._replicas:
            metrics.DURABLE.labels("no_replica").inc()
        return min(durable.replicas, self._replicas)

    def _count(self, wanted: int, acked: int, durable: Durability) -> None:
        if acked >= wanted:
            metrics.DURABLE.labels("replicated").inc()
            return
        metrics.DURABLE.labels("timed_out").inc()
        self._replicas_checked = -ROLE_CHECK_S  # ask again how many replicas there are
        now = time.monotonic()
        if now - self._unreplicated_logged >= 10.0:
            self._unreplicated_logged = now
            log.warning(
                "a durable commit is on the primary but on %d of %d replicas after %d ms",
                acked,
                wanted,
                durable.timeout_ms,
                extra={"where": self.description},
            )

    async def ping(self) -> None:
        await self._call(self._r.ping)

    async def close(self) -> None:
        await self._r.aclose()
        for helper in self._helpers:
            await helper.aclose()
