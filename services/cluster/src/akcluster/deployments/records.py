"""The lease records and the work queue, as they are kept in Redis.

Each lease of ours has a record (:class:`~akcluster.domain.leases.LeaseRecord`, under
:func:`~akcluster.domain.leases.lease_key`), is a member of the set of active leases until it
is closed, and has a place in the work queue (a sorted set: lease → when its next step is
due). Every change to a record is one guarded write, :meth:`LeaseRecords.update`: the record,
its place in the queue and the events the change publishes, committed only if the record is
still the one that was read. Recovery reads many records at once (:class:`RecordBatches`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from akbus import Bus, BusTx
from akcluster.domain.leases import CLOSED_TTL_S, LEASES_KEY, WORK_KEY, LeaseRecord, lease_key
from aktypes.events import Envelope
from aktypes.ids import LeaseID

log = logging.getLogger("akcluster.deployments")

_RECOVERY_BATCH = 250  # records read at once at start

Change = Callable[[LeaseRecord | None, BusTx], tuple[LeaseRecord | None, float | None]]
"""A change to one record: given the stored record (None: there is none) and the write's
transaction, the new record (None: leave it) and when its next step is due (None: not
queued). It may publish through the transaction."""


class LeaseRecords:
    """The records of the leases and the work queue of their next steps."""

    def __init__(self, bus: Bus, clock: Callable[[], float]) -> None:
        self.bus = bus
        self.clock = clock

    async def get(self, lease_id: LeaseID | str) -> LeaseRecord | None:
        raw = await self.bus.backend.get(lease_key(lease_id))
        return LeaseRecord.model_validate_json(raw) if raw else None

    async def members(self) -> set[str]:
        """The leases not closed yet, in their string form."""
        return await self.bus.backend.smembers(LEASES_KEY)

    async def count(self) -> int:
        return len(await self.members())

    def read(self, members: Sequence[str]) -> RecordBatches:
        """The records of ``members``, in that order, read a batch at a time."""
        return RecordBatches(self.bus, members)

    async def update(
        self, lease_id: LeaseID, change: Change, cause: Envelope[Any] | None = None
    ) -> tuple[LeaseRecord | None, LeaseRecord | None]:
        """Apply ``change`` to the stored record in one guarded write; (before, after).

        ``change`` returns the new record (None: leave it) and when its next step is due
        (None: not queued). It may publish through the transaction; when the record moved
        on meanwhile it runs again on the fresh one.
        """
        key = lease_key(lease_id)
        while True:
            raw = await self.bus.backend.get(key)
            before = LeaseRecord.model_validate_json(raw) if raw else None
            after: LeaseRecord | None = None

            async def write(tx: BusTx, before: LeaseRecord | None = before) -> None:
                nonlocal after
                after, due = change(before, tx)
                if after is None:
                    return
                after = after.model_copy(update={"updated_at": self.clock()})
                member = str(lease_id)
                if after.state == "closed":
                    tx.state.set(key, after.model_dump_json(), ex=CLOSED_TTL_S)
                    tx.state.srem(LEASES_KEY, member)
                else:
                    tx.state.set(key, after.model_dump_json())
                    tx.state.sadd(LEASES_KEY, member)
                if due is None:
                    tx.state.zrem(WORK_KEY, member)
                else:
                    tx.state.zadd(WORK_KEY, {member: due})

            if await self.bus.apply_if(key, raw, write, cause=cause):
                if after is not None and (before is None or before.state != after.state):
                    log.info(
                        "lease %s: %s -> %s",
                        lease_id,
                        before.state if before else "new",
                        after.state,
                        extra={"lease_id": str(lease_id)},
                    )
                return before, after

    # -- the work queue -------------------------------------------------------------------
    async def due(self) -> list[tuple[str, float]]:
        """The leases whose next step is due now, with when it was due."""
        return await self.bus.backend.zrangebyscore(WORK_KEY, 0, self.clock())

    async def reschedule(self, member: str, due: float) -> None:
        async def later(tx: BusTx) -> None:
            tx.state.zadd(WORK_KEY, {member: due})

        await self.bus.transact(later)

    async def forget(self, member: str) -> None:
        async def forget(tx: BusTx) -> None:
            tx.state.zrem(WORK_KEY, member)

        await self.bus.transact(forget)


class RecordBatches:
    """The records of ``members``, in that order: read a batch at a time, the next batch
    asked for while one is used (``async with``, then ``async for``)."""

    def __init__(self, bus: Bus, members: Sequence[str]) -> None:
        self.bus = bus
        self.batches = [
            members[i : i + _RECOVERY_BATCH] for i in range(0, len(members), _RECOVERY_BATCH)
        ]
        self._next: asyncio.Future[list[str | None]] | None = None

    def _read(self, batch: Sequence[str]) -> asyncio.Future[list[str | None]]:
        keys = [lease_key(member) for member in batch]
        return asyncio.ensure_future(self.bus.backend.mget(keys))

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
            for raw in await current:
                if raw:
                    yield LeaseRecord.model_validate_json(raw)
