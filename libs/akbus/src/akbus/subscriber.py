"""A consumer in a consumer group: delivery, retries, claiming, dead letters, draining.

Delivery is at-least-once. The group is created from the beginning of the stream, so a
consumer that starts late still sees every entry. Each entry is handled by the handler
registered for its payload type and acknowledged after that handler returns.

- ``RetryableError`` (or any unexpected exception): the entry stays pending; it is
  delivered again after an exponential backoff, each time counting as a delivery in Redis.
- ``PermanentError``, an unreadable entry, or ``max_deliveries`` reached: the entry moves
  to ``<stream>.dlq`` with its provenance and is acknowledged in the same transaction.
- A consumer that dies leaves its entries pending; after ``claim_idle_s`` another consumer
  takes them over (XAUTOCLAIM). Live consumers keep their slow entries from looking idle.
- Redis going away (restart, network cut) pauses the loops, which resume with backoff.
- ``stop()`` stops reading, lets in-flight handlers finish within ``drain_timeout_s`` and
  leaves whatever did not finish pending for the next consumer.
- With a ``partition_key``, entries with the same key are handled one at a time, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from akbus import metrics
from akbus.backend import StreamEntry
from akbus.errors import ConnectionLost, PermanentError, RetryableError
from akbus.keys import reply_key
from akbus.message import Message, stored_reply
from akbus.retry import until_reachable
from akbus.settings import BusSettings
from aktypes.events import DeadLetter, Envelope, InvalidEntryError, Payload, envelope_from_fields
from aktypes.events.envelope import printable_fields
from aktypes.events.streams import dlq_stream

if TYPE_CHECKING:
    from akbus.bus import Bus

log = logging.getLogger("akbus")

P = TypeVar("P", bound=Payload)
Handler = Callable[[Message[Any]], Awaitable[None]]
PartitionKey = Callable[[Envelope[Any]], str | None]


class Subscriber:
    """One consumer of one group on one stream."""

    def __init__(
        self,
        bus: Bus,
        stream: str,
        *,
        group: str,
        consumer: str,
        settings: BusSettings,
        partition_key: PartitionKey | None = None,
    ) -> None:
        self.bus = bus
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.settings = settings
        self.partition_key = partition_key
        self.ready = asyncio.Event()
        self._handlers: dict[type[Payload], Handler] = {}
        self._inflight: dict[str, asyncio.Task[None]] = {}
        self._tails: dict[str, asyncio.Task[None]] = {}
        self._acks: list[str] = []  # handled, acknowledgement not yet sent
        self._unacked: set[str] = set()
        self._ack_now = asyncio.Event()
        self._room = asyncio.Event()
        self._handled: dict[str, Any] = {}  # wire tag -> metric child (label lookups are slow)
        self._seconds = metrics.HANDLE_SECONDS.labels(stream, group)
        self._stopping = False
        self._stop_requested = asyncio.Event()
        self._done = asyncio.Event()

    # -- registration ---------------------------------------------------------------------
    def handler(self, *types: type[Payload]) -> Callable[[Handler], Handler]:
        """Decorator: handle entries whose payload is one of ``types``."""

        def register(fn: Handler) -> Handler:
            for payload_type in types:
                self.add(payload_type, fn)
            return fn

        return register

    def add(self, payload_type: type[Payload], fn: Handler) -> None:
        if payload_type in self._handlers:
            raise ValueError(f"{payload_type.__name__} already has a handler on {self.stream}")
        self._handlers[payload_type] = fn

    # -- lifecycle ------------------------------------------------------------------------
    def _running(self) -> bool:
        return not self._stopping

    async def run(self) -> None:
        """Consume until :meth:`stop` is called (or the task is cancelled)."""
        try:
            await until_reachable(
                "create group",
                lambda: self.bus.backend.create_group(self.stream, self.group),
                keep_going=self._running,
            )
        except ConnectionLost:
            self._done.set()
            return
        self.ready.set()
        workers = [
            asyncio.create_task(self._read_loop(), name=f"akbus-read-{self.stream}"),
            asyncio.create_task(self._ack_loop(), name=f"akbus-ack-{self.stream}"),
            asyncio.create_task(self._maintenance_loop(), name=f"akbus-maint-{self.stream}"),
        ]
        stop = asyncio.create_task(self._stop_requested.wait())
        try:
            done, _ = await asyncio.wait([*workers, stop], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stop and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        finally:
            self._stopping = True
            for task in (*workers, stop):
                task.cancel()
            await asyncio.gather(*workers, stop, return_exceptions=True)
            await self._drain()
            self._done.set()

    async def stop(self) -> None:
        """Stop reading, drain in-flight handlers, acknowledge what finished.

        Entries whose handlers do not finish within ``drain_timeout_s`` stay pending.
        """
        self._stopping = True
        self._stop_requested.set()
        await self._done.wait()

    async def _drain(self) -> None:
        if self._inflight:
            _, unfinished = await asyncio.wait(
                set(self._inflight.values()), timeout=self.settings.drain_timeout_s
            )
            for task in unfinished:
                task.cancel()
            if unfinished:
                await asyncio.gather(*unfinished, return_exceptions=True)
                log.warning(
                    "left entries pending at shutdown",
                    extra={"stream": self.stream, "count": len(unfinished)},
                )
        with contextlib.suppress(ConnectionLost):
            await self._flush_acks(retry_for_s=self.settings.drain_timeout_s)

    # -- reading --------------------------------------------------------------------------
    async def _wait_for_room(self) -> int:
        while len(self._inflight) >= self.settings.concurrency and not self._stopping:
            self._room.clear()
            await self._room.wait()
        return self.settings.concurrency - len(self._inflight)

    async def _read_loop(self) -> None:
        await self._recover_own(min_idle_ms=0)
        while not self._stopping:
            room = await self._wait_for_room()
            if not self._running():  # stop() may have come while waiting
                return

            async def read(count: int = min(room, self.settings.batch)) -> list[StreamEntry]:
                return await self.bus.backend.read_group(
                    self.stream,
                    self.group,
                    self.consumer,
                    count=count,
                    block_ms=self.settings.block_ms,
                )

            try:
                entries = await until_reachable("read", read, keep_going=self._running)
            except ConnectionLost:
                return
            for entry in entries:
                self._spawn(entry, deliveries=1)

    async def _recover_own(self, *, min_idle_ms: int) -> None:
        """Take back entries this consumer name left pending (a restart, a lost ack).

        While the reader runs, only entries idle for ``min_idle_ms`` count as lost, so one
        just delivered to the reader is not taken twice.
        """
        backend = self.bus.backend
        try:
            pending = await until_reachable(
                "recover",
                lambda: backend.pending(
                    self.stream, self.group, consumer=self.consumer, count=self.settings.batch * 10
                ),
                keep_going=self._running,
            )
        except ConnectionLost:
            return
        lost = [p for p in pending if not self._busy(p.id) and p.idle_ms >= min_idle_ms]
        if not lost:
            return
        deliveries = {p.id: p.deliveries for p in lost}
        try:
            claimed = set(
                await backend.claim(self.stream, self.group, self.consumer, list(deliveries))
            )
            entries = await backend.read_group(
                self.stream,
                self.group,
                self.consumer,
                count=self.settings.batch * 10,
                block_ms=None,
                own_pending=True,
            )
        except ConnectionLost:
            return
        for entry in entries:
            if entry.id in claimed and not self._busy(entry.id):
                self._spawn(entry, deliveries=deliveries[entry.id] + 1)

    # -- maintenance: claiming, heartbeats, sweeping, stats, retention --------------------
    async def _maintenance_loop(self) -> None:
        period = min(self.settings.claim_interval_s, self.settings.claim_idle_s / 3)
        next_stats = next_trim = 0.0
        while not self._stopping:
            await asyncio.sleep(period)
            try:
                await self._heartbeat()
                await self._claim_idle()
                await self._recover_own(min_idle_ms=int(period * 1000))
                now = time.monotonic()
                if now >= next_stats:
                    next_stats = now + self.settings.stats_interval_s
                    await self._sample_stats()
                if now >= next_trim:
                    next_trim = now + self.settings.retention_interval_s
                    await self.bus.trim(self.stream)
            except ConnectionLost:
                continue

    async def _heartbeat(self) -> None:
        """Reset the idle time of entries still being handled here, so nobody steals them."""
        if self._inflight:
            await self.bus.backend.claim(
                self.stream, self.group, self.consumer, list(self._inflight), justid=True
            )

    async def _claim_idle(self) -> None:
        """Take over entries left pending by consumers that went quiet (XAUTOCLAIM)."""
        if len(self._inflight) >= self.settings.concurrency:
            return
        backend = self.bus.backend
        claimed, deleted = await backend.autoclaim(
            self.stream,
            self.group,
            self.consumer,
            min_idle_ms=int(self.settings.claim_idle_s * 1000),
            count=self.settings.batch,
        )
        if deleted:
            await backend.ack(self.stream, self.group, deleted)
        fresh = [e for e in claimed if not self._busy(e.id)]
        if not fresh:
            return
        metrics.CLAIMED.labels(self.stream, self.group).inc(len(fresh))
        for entry in fresh:
            info = await backend.pending(
                self.stream, self.group, start=entry.id, end=entry.id, count=1
            )
            self._spawn(entry, deliveries=info[0].deliveries if info else 1)

    async def _sample_stats(self) -> None:
        for info in await self.bus.backend.groups(self.stream):
            if info.name == self.group:
                metrics.PENDING.labels(self.stream, self.group).set(info.pending)
                if info.lag is not None:
                    metrics.LAG.labels(self.stream, self.group).set(info.lag)

    # -- handling -------------------------------------------------------------------------
    def _busy(self, entry_id: str) -> bool:
        """Being handled here, or handled with its acknowledgement still to be sent."""
        return entry_id in self._inflight or entry_id in self._unacked

    def _spawn(self, entry: StreamEntry, *, deliveries: int) -> None:
        if entry.id in self._inflight:
            return
        task = asyncio.create_task(self._process(entry, deliveries))
        self._inflight[entry.id] = task

        def finished(_: asyncio.Task[None]) -> None:
            self._inflight.pop(entry.id, None)
            self._room.set()

        task.add_done_callback(finished)

    async def _process(self, entry: StreamEntry, deliveries: int) -> None:
        try:
            envelope = envelope_from_fields(entry.fields)
        except InvalidEntryError as exc:
            await self._dead_letter(entry, f"unreadable entry: {exc}", deliveries)
            return
        try:
            key = self.partition_key(envelope) if self.partition_key else None
        except Exception as exc:  # a key function that cannot read this entry
            await self._dead_letter(entry, f"no partition key: {_describe(exc)}", deliveries)
            return
        previous = self._tails.get(key) if key is not None else None
        if key is not None:
            self._tails[key] = asyncio.current_task()  # type: ignore[assignment]
        try:
            if previous is not None:
                await asyncio.wait([previous])
            await self._handle(entry, envelope, deliveries)
        except ConnectionLost:
            pass  # the entry stays pending; the sweep delivers it again
        except Exception:
            log.exception(
                "delivery failed; the entry stays pending", extra=self._context(entry, envelope)
            )
        finally:
            if key is not None and self._tails.get(key) is asyncio.current_task():
                del self._tails[key]

    async def _handle(self, entry: StreamEntry, envelope: Envelope[Any], deliveries: int) -> None:
        handler = self._handlers.get(type(envelope.payload))
        if handler is None:
            metrics.SKIPPED.labels(self.stream, self.group).inc()
            self._ack(entry.id)
            return
        if envelope.reply_to and await self._answered_before(envelope):
            self._ack(entry.id)
            return
        while True:
            if deliveries > self.settings.max_deliveries:
                await self._dead_letter(entry, "delivered too many times", deliveries - 1)
                return
            message = Message(
                envelope, self.stream, entry.id, self.group, self.consumer, deliveries, self.bus
            )
            started = time.perf_counter()
            try:
                await handler(message)
            except PermanentError as exc:
                self._failed(envelope, "permanent")
                await self._dead_letter(entry, _describe(exc), deliveries)
                return
            except ConnectionLost:
                # Redis is away: not the entry's fault. It stays pending and the sweep
                # delivers it again once Redis is back, without burning a retry here.
                self._failed(envelope, "unavailable")
                return
            except Exception as exc:
                self._failed(
                    envelope, "retryable" if isinstance(exc, RetryableError) else "unexpected"
                )
                if not isinstance(exc, RetryableError):
                    log.exception("handler failed", extra=self._context(entry, envelope))
                if deliveries >= self.settings.max_deliveries:
                    await self._dead_letter(entry, _describe(exc), deliveries)
                    return
                await asyncio.sleep(self._backoff(deliveries))
                try:
                    again = await self.bus.backend.claim(
                        self.stream, self.group, self.consumer, [entry.id]
                    )
                except ConnectionLost:
                    return  # still pending: the sweep or another consumer picks it up
                if not again:
                    return  # acknowledged or deleted meanwhile
                deliveries += 1
                continue
            finally:
                self._seconds.observe(time.perf_counter() - started)
            counter = self._handled.get(envelope.type)
            if counter is None:
                counter = self._handled[envelope.type] = metrics.HANDLED.labels(
                    self.stream, self.group, envelope.type
                )
            counter.inc()
            self._ack(entry.id)
            return

    async def _answered_before(self, envelope: Envelope[Any]) -> bool:
        """A repeated command gets the reply already given, without running the handler."""
        stored = stored_reply(await self.bus.backend.get(reply_key(envelope.id)))
        if stored is None or not envelope.reply_to:
            return False
        await self.bus.backend.xadd(envelope.reply_to, stored)
        await self.bus.backend.expire(envelope.reply_to, self.bus.settings.reply_ttl_s)
        return True

    def _backoff(self, deliveries: int) -> float:
        base = self.settings.retry_initial_s * 2.0 ** (deliveries - 1)
        capped = min(base, self.settings.retry_max_s)
        return capped * random.uniform(0.8, 1.2)  # noqa: S311 - jitter, not cryptography

    def _failed(self, envelope: Envelope[Any], kind: str) -> None:
        metrics.FAILED.labels(self.stream, self.group, envelope.type, kind).inc()

    def _context(self, entry: StreamEntry, envelope: Envelope[Any] | None = None) -> dict[str, Any]:
        context: dict[str, Any] = {"stream": self.stream, "group": self.group, "entry": entry.id}
        if envelope is not None:
            context.update(event=envelope.id, type=envelope.type)
        return context

    async def _dead_letter(self, entry: StreamEntry, error: str, attempts: int) -> None:
        letter = DeadLetter(
            source_stream=self.stream,
            entry_id=entry.id,
            group=self.group,
            consumer=self.consumer,
            error=error,
            attempts=max(attempts, 1),
            fields=printable_fields(entry.fields),
        )
        fields = self.bus.envelope(letter).to_fields()
        try:
            await self.bus.backend.dead_letter(
                self.stream, self.group, entry.id, dlq_stream(self.stream), fields
            )
        except ConnectionLost:
            return  # still pending: dead-lettered on its next delivery
        metrics.DEAD_LETTERED.labels(self.stream, self.group).inc()
        log.warning("dead-lettered", extra={**self._context(entry), "error": error})

    # -- acknowledging --------------------------------------------------------------------
    def _ack(self, entry_id: str) -> None:
        self._acks.append(entry_id)
        self._unacked.add(entry_id)
        if len(self._acks) >= self.settings.batch:
            self._ack_now.set()

    async def _ack_loop(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ack_now.wait(), self.settings.ack_interval_s)
            self._ack_now.clear()
            try:
                await self._flush_acks()
            except ConnectionLost:
                await asyncio.sleep(0.1)

    async def _flush_acks(self, *, retry_for_s: float = 0.0) -> None:
        if not self._acks:
            return
        batch, self._acks = self._acks, []
        try:
            await until_reachable(
                "ack",
                lambda: self.bus.backend.ack(self.stream, self.group, batch),
                give_up_after_s=retry_for_s,
            )
        except ConnectionLost:
            self._acks[:0] = batch  # keep them; acknowledged on the next flush
            raise
        self._unacked.difference_update(batch)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
