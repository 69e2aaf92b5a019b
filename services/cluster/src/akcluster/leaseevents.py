"""Each lease's Kubernetes events kept on Redis beyond the cluster's event TTL, for the
gateway's ``/kubeevents`` (:mod:`aktypes.leaseevents` says what the stream holds).

The Events of lease namespaces come from :class:`~akcluster.adapters.kube_events.
KubeLeaseEvents`; each new occurrence of one (its ``uid`` at a new ``count``) is added to its
lease's stream, trimmed to exactly ``maxlen`` entries, in one guarded write with its
occurrence key (:mod:`akcluster.domain.leaseevents`): a restarted cluster, which lists every
Event again, or a second replica adds nothing twice. Until they are written, the latest of
each Event waits in memory (an Event updated ten times meanwhile is written once, at its
last count), at most ``MAX_WAITING`` Events. Redis out of reach: the writes wait for it.

``LeaseTornDown`` ends the lease's stream with a ``closed`` entry, gives it and the lease's
keys the retention as their time to live, and refuses any later event: nothing of a lease
outlives it by more than the retention.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from typing import Any

from akbus import Bus, BusTx, Guard, Message
from akbus.retry import until_reachable
from akcluster import metrics
from akcluster.domain.leaseevents import closed_key, is_new, seen_key
from aktypes.events import LeaseTornDown
from aktypes.ids import LeaseID
from aktypes.leaseevents import closed_fields, event_fields, lease_events_stream, occurrence

log = logging.getLogger("akcluster.lease_events")

MAX_WAITING = 50_000  # Events read from Kubernetes and not written yet (reduced: ~1 KB each)
BATCH = 100  # occurrence keys read at once
ATTEMPTS = 5  # guarded writes of one occurrence that lost a race


class LeaseEvents:
    """The history writer: Events in (:meth:`take`), entries out (:meth:`run`)."""

    def __init__(self, bus: Bus, *, maxlen: int, retention_s: float) -> None:
        self.bus = bus
        self.maxlen = maxlen
        self.retention = max(int(retention_s), 1)  # key expiry counts whole seconds
        self.waiting: OrderedDict[str, tuple[LeaseID, dict[str, Any], int]] = OrderedDict()
        self.wake = asyncio.Event()
        self.dropped = 0

    def take(self, lease_id: LeaseID, event: dict[str, Any]) -> None:
        """One Event created or updated (on the event loop, from the watch)."""
        seen = occurrence(event)
        if seen is None:
            return
        uid, count = seen
        before = self.waiting.pop(uid, None)
        if before is not None and before[2] > count:  # an older copy: keep the newer
            self.waiting[uid] = before
            return
        self.waiting[uid] = (lease_id, event, count)
        if len(self.waiting) > MAX_WAITING:
            self.waiting.popitem(last=False)
            metrics.LEASE_EVENTS.labels("dropped").inc()
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning(
                    "lease events: %d waiting to be written, the oldest dropped (%d so far)",
                    MAX_WAITING,
                    self.dropped,
                )
        self.wake.set()

    async def run(self) -> None:
        """Write what waits, a batch at a time, until cancelled."""
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.waiting:
                batch = [
                    self.waiting.popitem(last=False) for _ in range(min(BATCH, len(self.waiting)))
                ]
                try:
                    await until_reachable("lease events", functools.partial(self.write, batch))
                except Exception:  # one batch lost, not the writer: Kubernetes keeps it
                    log.exception("lease events: a batch of %d was not written", len(batch))

    async def write(self, batch: list[tuple[str, tuple[LeaseID, dict[str, Any], int]]]) -> None:
        """Add each occurrence of ``batch`` not added before."""
        seen = await self.bus.backend.mget([seen_key(uid) for uid, _ in batch])
        for (uid, (lease_id, event, count)), last in zip(batch, seen, strict=True):
            if not is_new(last, count):
                metrics.LEASE_EVENTS.labels("duplicate").inc()
                continue
            metrics.LEASE_EVENTS.labels(await self.add(lease_id, uid, event, last)).inc()

    async def add(
        self, lease_id: LeaseID, uid: str, event: dict[str, Any], last: str | None
    ) -> str:
        """Add one occurrence unless it was added, or the lease closed, meanwhile."""
        fields = event_fields(event)
        count = int(fields["count"])
        stream, key, closed = lease_events_stream(lease_id), seen_key(uid), closed_key(lease_id)

        async def body(tx: BusTx) -> None:
            tx.state.xadd(stream, fields, maxlen=self.maxlen, exact=True)
            tx.state.set(key, str(count), ex=self.retention)

        for _ in range(ATTEMPTS):
            if await self.bus.apply_if_all([Guard(key, last), Guard(closed, None)], body):
                return "added"
            if await self.bus.backend.get(closed) is not None:
                return "closed"
            last = await self.bus.backend.get(key)
            if not is_new(last, count):
                return "duplicate"
        return "dropped"

    async def on_torn_down(self, msg: Message[LeaseTornDown]) -> None:
        await self.close(msg.payload.lease_id)

    async def close(self, lease_id: LeaseID) -> None:
        """End the lease's stream, once; it and its keys go after the retention."""
        stream = lease_events_stream(lease_id)

        async def body(tx: BusTx) -> None:
            tx.state.set(closed_key(lease_id), "1", ex=self.retention)
            tx.state.xadd(stream, closed_fields(), maxlen=self.maxlen, exact=True)
            tx.state.expire(stream, self.retention)

        if await self.bus.apply_if_all([Guard(closed_key(lease_id), None)], body):
            log.info(
                "lease %s: its events are kept %ds more",
                lease_id,
                self.retention,
                extra={"lease_id": str(lease_id)},
            )
