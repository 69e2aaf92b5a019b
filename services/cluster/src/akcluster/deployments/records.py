"""The lease records and the work queue, as they are kept in Redis.

Each lease of ours has a record (:class:`~akcluster.domain.leases.LeaseRecord`, under
:func:`~akcluster.domain.leases.lease_key`), is a member of the set of active leases until it
is closed, and has a place in the work queue (a sorted set: lease → when its next step is
due). They are :class:`akbus.Records`: every change is a transition of one record, committed
in one guarded write with its place in the queue and the events it publishes, only if the
record is still the one that was read; a closed record expires after ``CLOSED_TTL_S``. Each
record written carries when (:func:`stamped`). Recovery reads many records at once
(:class:`RecordBatches`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence

from akbus import Bus, Change, Records
from akcluster.domain.leases import (
    CLOSED_TTL_S,
    LEASE_KEY_PREFIX,
    LEASES_KEY,
    WORK_KEY,
    LeaseRecord,
)
from aktypes.events import Payload

log = logging.getLogger("akcluster.deployments")

_RECOVERY_BATCH = 250  # records read at once at start

LeaseRecords = Records[LeaseRecord]


def lease_records(bus: Bus) -> LeaseRecords:
    """The lease records, the set of active leases and the work queue."""
    return Records(
        bus,
        LeaseRecord,
        LEASE_KEY_PREFIX,
        active=LEASES_KEY,
        schedule=WORK_KEY,
        final=lambda record: record.state == "closed",
        final_ttl_s=CLOSED_TTL_S,
        log=log,
        noun="lease",
    )


def stamped(
    after: LeaseRecord,
    clock: Callable[[], float],
    *,
    due: float | None,
    publish: Sequence[tuple[str, Payload]] = (),
) -> Change[LeaseRecord]:
    """The change that writes ``after``, stamped with when, its next step due at ``due``
    (None: not queued), publishing ``publish``."""
    return Change(after.model_copy(update={"updated_at": clock()}), publish=publish, due=due)


class RecordBatches:
    """The records of ``members``, in that order: read a batch at a time, the next batch
    asked for while one is used (``async with``, then ``async for``)."""

    def __init__(self, records: LeaseRecords, members: Sequence[str]) -> None:
        self.records = records
        self.batches = [
            members[i : i + _RECOVERY_BATCH] for i in range(0, len(members), _RECOVERY_BATCH)
        ]
        self._next: asyncio.Future[list[LeaseRecord | None]] | None = None

    def _read(self, batch: Sequence[str]) -> asyncio.Future[list[LeaseRecord | None]]:
        return asyncio.ensure_future(self.records.get_many(batch))

    async def __aenter__(self) -> RecordBatches:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._next is not None:
            self._next.cancel()
            with contextlib.suppress(BaseException):
                await self._next

    async def __aiter__(self) -> AsyncIterator[LeaseRecord]:
        for index, batch in enumerate(self.batches):
            current = self._next or self._read(batch)
            following = self.batches[index + 1 : index + 2]
            self._next = self._read(following[0]) if following else None
            for record in await current:
                if record is not None:
                    yield record
