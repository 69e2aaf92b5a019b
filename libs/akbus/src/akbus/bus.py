"""The bus: publish, subscribe, retained status, request/reply, dead letters, retention.

A :class:`Bus` wraps one backend (Redis, or memory in tests) for one producer (a service
process). Everything it writes is a plain-field stream entry (see
:mod:`aktypes.events.envelope`); everything it keeps next to streams lives under ``akbus:``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, overload

from akbus import metrics
from akbus.backend import Backend, Durability, Fields, Guard, StreamEntry, Tx
from akbus.errors import ConnectionLost, RequestTimeout, StreamMismatch, UnexpectedReply
from akbus.keys import reply_stream
from akbus.message import BusTx
from akbus.redis_backend import RedisBackend
from akbus.retry import until_reachable
from akbus.settings import BusSettings, RedisSettings
from akbus.subscriber import PartitionKey, Subscriber
from aktypes.events import (
    STREAM_TYPES,
    DeadLetter,
    Envelope,
    InvalidEntryError,
    Payload,
    envelope_from_fields,
)
from aktypes.events.envelope import printable_fields
from aktypes.events.streams import dlq_stream, status_stream

log = logging.getLogger("akbus")

TxFn = Callable[[BusTx], Awaitable[None]]
R = TypeVar("R", bound=Payload)
R2 = TypeVar("R2", bound=Payload)


@dataclass(frozen=True)
class DeadLetterEntry:
    """One entry of a ``.dlq`` stream."""

    id: str
    letter: DeadLetter


class Bus:
    """Typed publish/subscribe and request/reply over one backend."""

    def __init__(
        self,
        backend: Backend,
        *,
        producer: str,
        settings: BusSettings | None = None,
        publish_timeout_s: float = 30.0,
    ) -> None:
        self.backend = backend
        self.producer = producer
        self.settings = settings or BusSettings()
        self.publish_timeout_s = publish_timeout_s
        self._replies: asyncio.Task[None] | None = None
        self._reply_stream: str | None = None
        self._waiting: dict[str, asyncio.Future[Envelope[Any]]] = {}
        self._closed = False
        replicas = self.settings.wait_replicas
        self._durability = (
            Durability(replicas, self.settings.wait_timeout_ms) if replicas > 0 else None
        )

    def _durable(self, durable: bool) -> Durability | None:
        return self._durability if durable else None

    @classmethod
    def connect(
        cls, redis: RedisSettings, *, producer: str, settings: BusSettings | None = None
    ) -> Bus:
        """A bus on the Redis that ``redis`` describes (connects on first use)."""
        return cls(RedisBackend.from_settings(redis), producer=producer, settings=settings)

    async def wait_ready(self, timeout_s: float = 30.0) -> None:
        """Return once Redis answers; raise ``ConnectionLost`` after ``timeout_s``."""
        await until_reachable("ping", self.backend.ping, give_up_after_s=timeout_s)

    async def close(self, *, keep_backend: bool = False) -> None:
        """Stop listening for replies, remove this process's reply stream, disconnect.

        ``keep_backend`` leaves the backend open for other buses that share it.
        """
        self._closed = True
        if self._replies is not None:
            self._replies.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._replies
        if self._reply_stream is not None:
            with contextlib.suppress(ConnectionLost):
                await self.backend.delete(self._reply_stream)
        for waiter in self._waiting.values():
            waiter.cancel()
        if not keep_backend:
            await self.backend.close()

    # -- publishing -----------------------------------------------------------------------
    def envelope(
        self,
        payload: Payload,
        *,
        causation: Envelope[Any] | None = None,
        correlation_id: str | None = None,
        reply_to: str | None = None,
        stream: str | None = None,
    ) -> Envelope[Payload]:
        if stream is not None:
            check_stream(stream, payload)
        return Envelope.wrap(
            payload,
            producer=self.producer,
            causation=causation,
            correlation_id=correlation_id,
            reply_to=reply_to,
        )

    async def publish(
        self,
        stream: str,
        payload: Payload,
        *,
        causation: Envelope[Any] | None = None,
        correlation_id: str | None = None,
    ) -> str:
        """Append ``payload`` to ``stream``; returns the entry id once Redis has it."""
        envelope = self.envelope(
            payload, causation=causation, correlation_id=correlation_id, stream=stream
        )
        return await self.publish_envelope(stream, envelope)

    async def publish_envelope(self, stream: str, envelope: Envelope[Any]) -> str:
        fields = envelope.to_fields()
        entry_id = await until_reachable(
            "publish",
            lambda: self.backend.xadd(stream, fields),
            give_up_after_s=self.publish_timeout_s,
        )
        metrics.PUBLISHED.labels(stream, envelope.type).inc()
        return entry_id

    async def publish_many(self, stream: str, payloads: Sequence[Payload]) -> list[str]:
        """Append several payloads in one round trip, in order."""
        fields = [self.envelope(p, stream=stream).to_fields() for p in payloads]
        ids = await until_reachable(
            "publish",
            lambda: self.backend.xadd_many(stream, fields),
            give_up_after_s=self.publish_timeout_s,
        )
        for tag, count in Counter(f["type"] for f in fields).items():
            metrics.PUBLISHED.labels(stream, tag).inc(count)
        return ids

    # -- subscribing ----------------------------------------------------------------------
    def subscriber(
        self,
        stream: str,
        *,
        group: str,
        consumer: str,
        partition_key: PartitionKey | None = None,
        settings: BusSettings | None = None,
    ) -> Subscriber:
        """A consumer in ``group`` on ``stream``; register handlers, then ``await run()``."""
        return Subscriber(
            self,
            stream,
            group=group,
            consumer=consumer,
            settings=settings or self.settings,
            partition_key=partition_key,
        )

    # -- state ----------------------------------------------------------------------------
    async def apply_once(
        self,
        marker: str,
        body: TxFn | None = None,
        *,
        cause: Envelope[Any] | None = None,
        durable: bool = False,
    ) -> bool:
        """Commit ``body``'s effects with ``marker`` unless ``marker`` is already set.

        ``durable``: return only once ``AKBUS_WAIT_REPLICAS`` replicas hold the commit (or
        ``AKBUS_WAIT_TIMEOUT_MS`` passed), so a failover of the primary cannot lose it."""

        async def run(tx: Tx) -> None:
            if body is not None:
                await body(BusTx(tx, self, cause))

        return await self.backend.apply_once(
            marker, self.settings.dedupe_ttl_s, run, durable=self._durable(durable)
        )

    async def transact(
        self, body: TxFn, *, cause: Envelope[Any] | None = None, durable: bool = False
    ) -> None:
        """Commit ``body``'s effects atomically (no "applied once" mark); ``durable`` as for
        :meth:`apply_once`."""

        async def run(tx: Tx) -> None:
            await body(BusTx(tx, self, cause))

        await self.backend.transact(run, durable=self._durable(durable))

    async def apply_if(
        self,
        guard: str,
        expected: str | None,
        body: TxFn,
        *,
        cause: Envelope[Any] | None = None,
        durable: bool = False,
    ) -> bool:
        """Commit ``body``'s writes only while ``guard`` still holds ``expected`` (None:
        while it is absent), in one round trip; False when it changed (read it again).

        ``body`` may only write: it runs once, before the check, on what the caller read.
        ``durable`` as for :meth:`apply_once` (the ``WAIT`` goes in the same round trip).
        """

        return await self.apply_if_all([Guard(guard, expected)], body, cause=cause, durable=durable)

    async def apply_if_all(
        self,
        guards: Sequence[Guard],
        body: TxFn,
        *,
        cause: Envelope[Any] | None = None,
        durable: bool = False,
    ) -> bool:
        """Commit ``body``'s writes only while every guard holds (a key, or a field of a hash,
        still holds the value the caller read: :class:`~akbus.backend.Guard`), in one round
        trip; False when one changed. ``body`` may only write, as for :meth:`apply_if`."""

        async def run(tx: Tx) -> None:
            await body(BusTx(tx, self, cause))

        return await self.backend.apply_if(guards, run, durable=self._durable(durable))

    # -- retained status ------------------------------------------------------------------
    async def publish_status(self, service: str, payload: Payload) -> str:
        """Publish ``service``'s latest status; only the last few entries are kept."""
        stream = status_stream(service)
        fields = self.envelope(payload).to_fields()
        entry_id = await until_reachable(
            "status",
            lambda: self.backend.xadd(stream, fields, maxlen=self.settings.status_maxlen),
            give_up_after_s=self.publish_timeout_s,
        )
        metrics.PUBLISHED.labels(stream, str(getattr(payload, "type", "?"))).inc()
        return entry_id

    async def status(self, service: str) -> Envelope[Any] | None:
        """The latest status ``service`` published, whenever it was published."""
        latest = await self.backend.entries(status_stream(service), count=1, reverse=True)
        return envelope_from_fields(latest[0].fields) if latest else None

    async def follow(
        self,
        streams: Sequence[str],
        *,
        since: str | Mapping[str, str] = "$",
        block_ms: int = 1000,
        count: int = 100,
    ) -> AsyncIterator[tuple[str, StreamEntry]]:
        """Tail ``streams`` (no consumer group, nothing acknowledged): every entry added after
        ``since`` (``$``: from now on; ``0``: from the start; or an entry id per stream), as
        (stream, entry), until the caller stops or the bus closes. An unreachable Redis is
        waited out."""
        positions = dict(since) if isinstance(since, Mapping) else dict.fromkeys(streams, since)
        for stream in streams:
            if positions.get(stream, "$") == "$":  # pin "now" to an id: no gap between reads
                newest = await self.backend.entries(stream, count=1, reverse=True)
                positions[stream] = newest[0].id if newest else "0"
        while not self._closed:

            async def read() -> list[tuple[str, StreamEntry]]:
                return await self.backend.read_many(positions, count=count, block_ms=block_ms)

            try:
                found = await until_reachable("follow", read, keep_going=lambda: not self._closed)
            except ConnectionLost:
                return
            for stream, entry in found:
                positions[stream] = entry.id
                yield stream, entry

    async def recent(
        self, streams: Sequence[str], *, last: int = 500
    ) -> tuple[list[tuple[str, Envelope[Any]]], dict[str, str]]:
        """The last ``last`` entries of each of ``streams`` merged in the order they were
        published, (stream, envelope), and the id each stream ended at — the position to
        :meth:`follow_envelopes` from without a gap. Unreadable entries are skipped."""
        positions: dict[str, str] = {}
        recent: list[tuple[int, datetime, str, Envelope[Any]]] = []
        for stream in streams:
            newest = await self.backend.entries(stream, count=last, reverse=True)
            positions[stream] = newest[0].id if newest else "0"
            for entry in newest:
                envelope = self._readable(stream, entry)
                if envelope is not None:
                    ms = int(entry.id.partition("-")[0])
                    recent.append((ms, envelope.time, stream, envelope))
        recent.sort(key=lambda found: found[:2])  # ids are per stream: the time breaks ties
        return [(stream, envelope) for _, _, stream, envelope in recent], positions

    async def follow_envelopes(
        self, streams: Sequence[str], *, since: Mapping[str, str], block_ms: int = 1000
    ) -> AsyncIterator[tuple[str, Envelope[Any]]]:
        """:meth:`follow`, each entry decoded; unreadable entries are skipped."""
        async for stream, entry in self.follow(list(streams), since=since, block_ms=block_ms):
            envelope = self._readable(stream, entry)
            if envelope is not None:
                yield stream, envelope

    async def recent_then_follow(
        self, streams: Sequence[str], *, last: int = 500, block_ms: int = 1000
    ) -> AsyncIterator[tuple[str, Envelope[Any]]]:
        """:meth:`recent`, then every new entry (no gap between the two): (stream, envelope)."""
        recent, positions = await self.recent(streams, last=last)
        for stream, envelope in recent:
            yield stream, envelope
        async for found in self.follow_envelopes(streams, since=positions, block_ms=block_ms):
            yield found

    @staticmethod
    def _readable(stream: str, entry: StreamEntry) -> Envelope[Any] | None:
        try:
            return envelope_from_fields(entry.fields)
        except InvalidEntryError:
            log.warning("unreadable entry", extra={"stream": stream, "entry": entry.id})
            return None

    async def follow_statuses(
        self, services: Sequence[str], *, block_ms: int = 1000
    ) -> AsyncIterator[tuple[str, Envelope[Any]]]:
        """The latest status of each of ``services`` that has one, then every new one as it
        is published: (service, envelope). Unreadable entries are skipped."""
        by_stream = {status_stream(s): s for s in services}
        positions: dict[str, str] = {}
        latest: list[tuple[str, StreamEntry]] = []
        for stream in by_stream:
            newest = await self.backend.entries(stream, count=1, reverse=True)
            positions[stream] = newest[0].id if newest else "0"
            latest += [(stream, newest[0])] if newest else []

        async def entries() -> AsyncIterator[tuple[str, StreamEntry]]:
            for found in latest:
                yield found
            async for found in self.follow(list(by_stream), since=positions, block_ms=block_ms):
                yield found

        async for stream, entry in entries():
            try:
                envelope = envelope_from_fields(entry.fields)
            except InvalidEntryError:
                log.warning("unreadable status entry", extra={"stream": stream, "entry": entry.id})
                continue
            yield by_stream[stream], envelope

    # -- request / reply ------------------------------------------------------------------
    @overload
    async def request(
        self,
        stream: str,
        command: Payload,
        expect: type[R],
        *,
        timeout_s: float = ...,
        attempts: int = ...,
        command_id: str | None = ...,
        cause: Envelope[Any] | None = ...,
    ) -> R: ...

    @overload
    async def request(
        self,
        stream: str,
        command: Payload,
        expect: tuple[type[R], type[R2]],
        *,
        timeout_s: float = ...,
        attempts: int = ...,
        command_id: str | None = ...,
        cause: Envelope[Any] | None = ...,
    ) -> R | R2: ...

    @overload
    async def request(
        self,
        stream: str,
        command: Payload,
        expect: None = ...,
        *,
        timeout_s: float = ...,
        attempts: int = ...,
        command_id: str | None = ...,
        cause: Envelope[Any] | None = ...,
    ) -> Payload: ...

    async def request(
        self,
        stream: str,
        command: Payload,
        expect: type[Payload] | tuple[type[Payload], ...] | None = None,
        *,
        timeout_s: float = 10.0,
        attempts: int = 1,
        command_id: str | None = None,
        cause: Envelope[Any] | None = None,
    ) -> Payload:
        """Send ``command`` and wait for its reply, which must be one of ``expect``.

        With ``attempts`` > 1 the same command (same envelope id) is sent again after each
        timeout; the handler answers a repeated command with the reply it gave the first
        time. ``command_id`` fixes the envelope id, so a caller that runs again (a retried
        handler, see :meth:`akbus.Message.request`) gets the reply already given.
        """
        reply_to = await self._listen_for_replies()
        envelope = self.envelope(command, reply_to=reply_to, stream=stream, causation=cause)
        if command_id is not None:
            envelope = envelope.model_copy(update={"id": command_id})
        waiter: asyncio.Future[Envelope[Any]] = asyncio.get_running_loop().create_future()
        self._waiting[envelope.id] = waiter
        try:
            for _ in range(max(attempts, 1)):
                await self.publish_envelope(stream, envelope)
                try:
                    reply = await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
                except TimeoutError:
                    continue
                payload: Payload = reply.payload
                if expect is not None and not isinstance(payload, expect):
                    raise UnexpectedReply(
                        f"{envelope.type} on {stream} was answered with {reply.type}"
                    )
                return payload
            raise RequestTimeout(
                f"no reply to {envelope.type} on {stream} within {timeout_s}s × {attempts}"
            )
        finally:
            self._waiting.pop(envelope.id, None)

    async def _listen_for_replies(self) -> str:
        """This process's reply stream, with a task reading it."""
        if self._reply_stream is None or self._replies is None:
            self._reply_stream = reply_stream(self.producer)
            self._replies = asyncio.create_task(self._reply_loop(self._reply_stream))
        return self._reply_stream

    async def _reply_loop(self, stream: str) -> None:
        last = "0"
        while not self._closed:

            async def read(after: str = last) -> list[StreamEntry]:
                return await self.backend.read(stream, after, count=100, block_ms=1000)

            try:
                found = await until_reachable("replies", read, keep_going=lambda: not self._closed)
            except ConnectionLost:
                return
            for entry in found:
                last = entry.id
                try:
                    reply = envelope_from_fields(entry.fields)
                except InvalidEntryError:
                    log.exception("unreadable reply", extra={"stream": stream, "entry": entry.id})
                    continue
                waiter = self._waiting.get(reply.causation_id or "")
                if waiter is not None and not waiter.done():
                    waiter.set_result(reply)

    # -- dead letters ---------------------------------------------------------------------
    async def dead_letters(self, stream: str, *, count: int = 100) -> list[DeadLetterEntry]:
        """The oldest ``count`` dead letters of ``stream``."""
        found = []
        for entry in await self.backend.entries(dlq_stream(stream), count=count):
            try:
                payload = envelope_from_fields(entry.fields).payload
            except InvalidEntryError as exc:  # written by hand, or by something else
                payload = DeadLetter(
                    source_stream=stream,
                    entry_id=entry.id,
                    group="?",
                    error=f"unreadable dead letter: {exc}",
                    attempts=1,
                    fields=printable_fields(entry.fields),
                )
            if isinstance(payload, DeadLetter):
                found.append(DeadLetterEntry(entry.id, payload))
        return found

    async def replay_dead_letters(self, stream: str, ids: Sequence[str] | None = None) -> list[str]:
        """Put dead letters back on their source stream (all, or those in ``ids``).

        Each is appended again with its original fields, so consumers that track applied
        envelope ids still see it as the same event; the dead letter is removed.
        """
        replayed = []
        wanted = set(ids) if ids is not None else None
        for item in await self.dead_letters(stream, count=10_000):
            if wanted is not None and item.id not in wanted:
                continue
            fields: Fields = dict(item.letter.fields)
            new_id = await self.backend.move(
                dlq_stream(stream), item.id, item.letter.source_stream, fields
            )
            replayed.append(new_id)
        return replayed

    # -- retention ------------------------------------------------------------------------
    async def trim(self, stream: str, *, keep_s: float | None = None) -> int:
        """Drop entries every group has consumed and that are older than ``keep_s``.

        Never drops an entry that some group has not read or not acknowledged; a stream
        without groups is left alone.
        """
        keep_s = self.settings.retention_s if keep_s is None else keep_s
        groups = await self.backend.groups(stream)
        if not groups:
            return 0
        bounds = []
        for group in groups:
            pending = await self.backend.pending_summary(stream, group.name)
            bounds.append(pending.min_id or _next_id(group.last_delivered_id))
        safe = min(bounds, key=_id_key)
        cutoff = f"{int((time.time() - keep_s) * 1000) + 1}-0"  # ids up to that ms may go
        minid = min(safe, cutoff, key=_id_key)
        return await self.backend.trim_minid(stream, minid)


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _next_id(entry_id: str) -> str:
    ms, seq = _id_key(entry_id)
    return f"{ms}-{seq + 1}"


def check_stream(stream: str, payload: Payload) -> None:
    """Refuse a payload on a known stream it does not belong to (a routing bug)."""
    allowed = STREAM_TYPES.get(stream)
    if allowed is not None and not isinstance(payload, allowed):
        names = ", ".join(t.__name__ for t in allowed)
        raise StreamMismatch(f"{type(payload).__name__} does not belong on {stream} (only {names})")
