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

Entries start in the order they were read, each as soon as it can: one task (the runner)
handles queued entries one after another until a handler waits (on Redis, a sleep,
anything); then a new runner takes over the queue while the old one finishes that handler.
Quick handlers cost no task each, and a slow one never holds up the entries behind it. At
most ``concurrency`` handlers are in progress at once; a read asks for a full ``batch``
when the last entries all finished without waiting, else for as many as can start.
Acknowledgements go in batches: with the next read (one round trip), or after
``ack_interval_s`` when no read comes. Claiming, heartbeats, stats, retention and dead
consumers: :mod:`akbus.maintenance`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any, TypeVar

from akbus import metrics
from akbus.backend import StreamEntry
from akbus.errors import ConnectionLost, PermanentError, RetryableError
from akbus.keys import reply_key
from akbus.maintenance import Maintenance
from akbus.message import BusLike, Message, stored_reply
from akbus.retry import until_reachable
from akbus.settings import BusSettings
from aktypes.events import DeadLetter, Envelope, InvalidEntryError, Payload, envelope_from_fields
from aktypes.events.envelope import printable_fields
from aktypes.events.streams import dlq_stream

log = logging.getLogger("akbus")

P = TypeVar("P", bound=Payload)
Handler = Callable[[Message[Any]], Awaitable[None]]
PartitionKey = Callable[[Envelope[Any]], str | None]
Item = tuple[StreamEntry, int]  # an entry and how many times it has been delivered


class Subscriber:
    """One consumer of one group on one stream."""

    def __init__(
        self,
        bus: BusLike,
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
        self._held: set[str] = set()  # ids of entries queued or being handled here
        self._queue: deque[Item] = deque()  # entries not started yet, in order
        self._runner: asyncio.Task[None] | None = None  # the task taking from the queue
        self._runners: set[asyncio.Task[None]] = set()  # every task still handling an entry
        self._quick = False  # the last runner finished its entries without any waiting
        self._tails: dict[str, asyncio.Task[None]] = {}  # partition key -> its latest task
        self._acks: list[str] = []  # handled, acknowledgement not yet sent
        self._unacked: set[str] = set()
        self._have_acks = asyncio.Event()
        self._room = asyncio.Event()
        self._abandon = False  # shutting down: entries not started yet stay pending
        self._maintenance = Maintenance(self)
        self._handled: dict[str, int] = {}  # wire tag -> handled since the metric was updated
        self._handled_metric: dict[str, Any] = {}  # wire tag -> its child of HANDLED
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
            asyncio.create_task(self._maintenance.run(), name=f"akbus-maint-{self.stream}"),
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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.drain_timeout_s
        while self._runners and (left_s := deadline - loop.time()) > 0:
            await asyncio.wait(set(self._runners), timeout=left_s)
        self._abandon = True
        if self._held:
            count = len(self._held)
            self._queue.clear()  # not started: left pending
            unfinished = set(self._runners)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)
            self._held.clear()
            log.warning(
                "left entries pending at shutdown", extra={"stream": self.stream, "count": count}
            )
        self._count_handled()
        with contextlib.suppress(ConnectionLost):
            await self._flush_acks(retry_for_s=self.settings.drain_timeout_s)

    # -- reading --------------------------------------------------------------------------
    def _in_progress(self) -> int:
        """Entries whose handling started and has not finished."""
        return len(self._held) - len(self._queue)

    def _full(self) -> bool:
        return len(self._held) >= self.settings.concurrency

    async def _wait_for_room(self) -> int:
        """Wait until every queued entry has started and a slot is free; how many to read.

        A full batch when the last entries all finished without waiting (they never ran
        side by side); otherwise only as many as can start at once.
        """
        limit = self.settings.concurrency
        while (self._queue or self._in_progress() >= limit) and not self._stopping:
            self._room.clear()
            await self._room.wait()
        in_progress = self._in_progress()
        if self._quick and in_progress == 0:
            return self.settings.batch
        return min(self.settings.batch, limit - in_progress)

    async def _read_loop(self) -> None:
        await self._maintenance.recover_own(min_idle_ms=0)
        while not self._stopping:
            count = await self._wait_for_room()
            if not self._running():  # stop() may have come while waiting
                return
            acks, self._acks = self._acks, []  # sent with the read, in the same round trip
            read = partial(
                self.bus.backend.read_group,
                self.stream,
                self.group,
                self.consumer,
                count=count,
                block_ms=self.settings.block_ms,
                ack=acks,
            )
            try:
                entries = await until_reachable("read", read, keep_going=self._running)
            except BaseException as exc:
                self._acks[:0] = acks  # perhaps not acknowledged: sent again later
                self._have_acks.set()
                if isinstance(exc, ConnectionLost):
                    return
                raise
            self._unacked.difference_update(acks)
            self._enqueue((entry, 1) for entry in entries)

    # -- handling -------------------------------------------------------------------------
    def _busy(self, entry_id: str) -> bool:
        """Held here (handled or queued), or handled with its ack still to be sent."""
        return entry_id in self._held or entry_id in self._unacked

    def _take(self, items: Iterable[Item]) -> None:
        """Queue claimed or recovered entries, unless they are busy here."""
        self._enqueue([item for item in items if not self._busy(item[0].id)])

    def _enqueue(self, items: Iterable[Item]) -> None:
        for item in items:
            self._held.add(item[0].id)
            self._queue.append(item)
        self._kick()

    def _kick(self) -> None:
        """Start a runner if entries are queued, none takes them and a slot is free."""
        if (
            self._queue
            and self._runner is None
            and not self._abandon
            and self._in_progress() < self.settings.concurrency
        ):
            runner = self._runner = asyncio.create_task(self._run_queue())
            self._runners.add(runner)
            runner.add_done_callback(self._runner_done)

    def _runner_done(self, runner: asyncio.Task[None]) -> None:
        self._runners.discard(runner)
        if self._runner is runner:  # cancelled before it could let go
            self._runner = None

    async def _run_queue(self) -> None:
        """Handle queued entries one after another while this task is the runner.

        :meth:`_gave_way` runs once this task first gives way to others; if that is a
        handler waiting, a new runner takes over the queue and this task ends after that
        handler. So entries start in queue order, and a task that waited handles nothing
        else (which is what lets a partition wait for the task of the entry before it).
        The runner also stops while ``concurrency`` handlers are in progress.
        """
        me = asyncio.current_task()
        asyncio.get_running_loop().call_soon(self._gave_way, me)
        limit = self.settings.concurrency
        while self._runner is me and self._queue and self._in_progress() < limit:
            entry, deliveries = self._queue.popleft()
            try:
                await self._process(entry, deliveries)
            finally:
                self._held.discard(entry.id)
                self._room.set()
                if self._runner is not me:
                    self._kick()  # a slot is free
        if self._runner is me:
            self._runner = None

    def _gave_way(self, runner: asyncio.Task[None] | None) -> None:
        self._quick = self._runner is not runner  # false: a handler of it is waiting
        if not self._quick:
            self._runner = None
            self._kick()

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
            tag = envelope.type
            self._handled[tag] = self._handled.get(tag, 0) + 1  # see _count_handled
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
        if not self._acks:
            self._have_acks.set()
        self._acks.append(entry_id)
        self._unacked.add(entry_id)

    async def _ack_loop(self) -> None:
        """Send what the reader has not taken along ``ack_interval_s`` after the first ack."""
        while not self._stopping:
            await self._have_acks.wait()
            await asyncio.sleep(self.settings.ack_interval_s)
            self._have_acks.clear()
            self._count_handled()
            try:
                await self._flush_acks()
            except ConnectionLost:
                await asyncio.sleep(0.1)
                self._have_acks.set()  # the batch was kept: try again

    def _count_handled(self) -> None:
        """Add the entries handled since last time to ``akbus_handled_total``.

        Counted here, a batch at a time, rather than per entry: a metric update takes a lock.
        """
        for tag, count in self._handled.items():
            child = self._handled_metric.get(tag)
            if child is None:
                child = self._handled_metric[tag] = metrics.HANDLED.labels(
                    self.stream, self.group, tag
                )
            child.inc(count)
        self._handled.clear()

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
