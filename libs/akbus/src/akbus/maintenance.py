"""A subscriber's housekeeping, run every few seconds next to its reader.

- Heartbeat: entries held here (being handled or queued) get their idle time reset
  (XCLAIM JUSTID), so other consumers never take them over while this one is alive.
- Claiming: entries another consumer left pending for ``claim_idle_s`` are taken over
  (XAUTOCLAIM); a delivery counts for each claim.
- Recovery: entries this consumer name holds but nobody here handles (a restart under the
  same name, a lost acknowledgement) are taken back.
- Stats (``akbus_pending``, ``akbus_lag``) and retention (:meth:`akbus.Bus.trim`).
- Dead consumers: consumers of the group idle for ``consumer_idle_delete_s`` that hold no
  pending entries are deleted (never this one), checked every quarter of that time. One
  that still holds entries is kept until they have been claimed, since deleting it would
  drop them from the pending list.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Protocol

from akbus import metrics
from akbus.backend import StreamEntry
from akbus.errors import ConnectionLost
from akbus.message import BusLike
from akbus.retry import until_reachable
from akbus.settings import BusSettings

log = logging.getLogger("akbus")


class Subscribed(Protocol):
    """What maintenance works on, of its :class:`~akbus.subscriber.Subscriber`: where it
    reads, its settings, and the entry bookkeeping the two share."""

    @property
    def bus(self) -> BusLike: ...
    @property
    def stream(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def consumer(self) -> str: ...
    @property
    def settings(self) -> BusSettings: ...
    @property
    def _stopping(self) -> bool: ...
    @property
    def _held(self) -> set[str]: ...  # ids of entries queued or being handled
    def _full(self) -> bool: ...
    def _busy(self, entry_id: str) -> bool: ...
    def _take(self, items: Iterable[tuple[StreamEntry, int]]) -> None: ...


class Maintenance:
    """The periodic work of one :class:`~akbus.subscriber.Subscriber`."""

    def __init__(self, subscriber: Subscribed) -> None:
        self.sub = subscriber  # its entry bookkeeping (``_held``, ``_take``…) is shared

    async def run(self) -> None:
        sub, settings = self.sub, self.sub.settings
        period = min(settings.claim_interval_s, settings.claim_idle_s / 3)
        next_stats = next_trim = next_sweep = 0.0
        while not sub._stopping:
            await asyncio.sleep(period)
            try:
                await self.heartbeat()
                await self.claim_idle()
                await self.recover_own(min_idle_ms=int(period * 1000))
                now = time.monotonic()
                if now >= next_stats:
                    next_stats = now + settings.stats_interval_s
                    await self.sample_stats()
                if now >= next_trim:
                    next_trim = now + settings.retention_interval_s
                    await sub.bus.trim(sub.stream, keep_s=settings.retention_s)
                if now >= next_sweep:
                    next_sweep = now + settings.consumer_idle_delete_s / 4
                    await self.remove_dead_consumers()
            except ConnectionLost:
                continue

    async def heartbeat(self) -> None:
        """Reset the idle time of entries still held here, so nobody steals them."""
        sub = self.sub
        held = list(sub._held)
        if held:
            await sub.bus.backend.claim(sub.stream, sub.group, sub.consumer, held, justid=True)

    async def claim_idle(self) -> None:
        """Take over entries left pending by consumers that went quiet (XAUTOCLAIM)."""
        sub = self.sub
        if sub._full():
            return
        backend = sub.bus.backend
        claimed, deleted = await backend.autoclaim(
            sub.stream,
            sub.group,
            sub.consumer,
            min_idle_ms=int(sub.settings.claim_idle_s * 1000),
            count=sub.settings.batch,
        )
        if deleted:
            await backend.ack(sub.stream, sub.group, deleted)
        fresh = [e for e in claimed if not sub._busy(e.id)]
        if not fresh:
            return
        metrics.CLAIMED.labels(sub.stream, sub.group).inc(len(fresh))
        items = []
        for entry in fresh:
            info = await backend.pending(
                sub.stream, sub.group, start=entry.id, end=entry.id, count=1
            )
            items.append((entry, info[0].deliveries if info else 1))
        sub._take(items)

    async def recover_own(self, *, min_idle_ms: int) -> None:
        """Take back entries this consumer name left pending (a restart, a lost ack).

        While the reader runs, only entries idle for ``min_idle_ms`` count as lost, so one
        just delivered to the reader is not taken twice.
        """
        sub = self.sub
        backend = sub.bus.backend
        limit = sub.settings.batch * 10
        try:
            pending = await until_reachable(
                "recover",
                lambda: backend.pending(sub.stream, sub.group, consumer=sub.consumer, count=limit),
                keep_going=lambda: not sub._stopping,
            )
        except ConnectionLost:
            return
        lost = [p for p in pending if not sub._busy(p.id) and p.idle_ms >= min_idle_ms]
        if not lost:
            return
        deliveries = {p.id: p.deliveries for p in lost}
        try:
            ids = list(deliveries)
            claimed = set(await backend.claim(sub.stream, sub.group, sub.consumer, ids))
            entries = await backend.read_group(
                sub.stream, sub.group, sub.consumer, count=limit, block_ms=None, own_pending=True
            )
        except ConnectionLost:
            return
        sub._take((e, deliveries[e.id] + 1) for e in entries if e.id in claimed)

    async def sample_stats(self) -> None:
        sub = self.sub
        for info in await sub.bus.backend.groups(sub.stream):
            if info.name == sub.group:
                metrics.PENDING.labels(sub.stream, sub.group).set(info.pending)
                if info.lag is not None:
                    metrics.LAG.labels(sub.stream, sub.group).set(info.lag)

    async def remove_dead_consumers(self) -> None:
        """Delete the group's consumers that are long idle and hold no pending entries."""
        sub = self.sub
        removed = await sub.bus.backend.delete_idle_consumers(
            sub.stream,
            sub.group,
            idle_ms=int(sub.settings.consumer_idle_delete_s * 1000),
            keep=sub.consumer,
        )
        if removed:
            metrics.CONSUMERS_REMOVED.labels(sub.stream, sub.group).inc(len(removed))
            log.info(
                "removed idle consumers",
                extra={"stream": sub.stream, "group": sub.group, "consumers": removed},
            )
