"""Records: one pydantic model per id in Redis, changed by pure transitions in guarded writes.

A service's durable state is a record per thing it manages (an order, a lease, a
deployment), and each step of its life is a transition: ``transition(before) -> after``,
a pure function of the stored record (None when there is none). :meth:`Records.update`
reads the record, runs the transition and commits what it returns in one guarded write
(:meth:`~akbus.Bus.apply_if` on the record's stored value, one round trip): when another
writer changed the record meanwhile, nothing is written, the record is read again and the
transition runs again on it. A transition returns the new record, or a :class:`Change` that
also carries what is written with it, or None to leave everything as it is.

The same write keeps what belongs to the record:

- ``active``: a set of the ids of the records not final (a status count, a recovery list);
- ``schedule``: a sorted set, id → when the record's next step is due (a worker's queue);
- a final record expires after ``final_ttl_s``, so late or repeated events still find it;
- the events the change publishes (an outbox: sent if and only if the record is written),
  and any other writes it names;
- one log line per change of state (``<noun> <id>: <before> -> <after>``).

Records are stored as their JSON (``model_dump_json``) under ``prefix + id``; ``load`` and
``dump`` replace that for a record kept in another form.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from akbus.message import BusTx
from aktypes.events import Envelope, Payload

if TYPE_CHECKING:
    from akbus.bus import Bus

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Change(Generic[T]):
    """What a transition decided: the record to store, and what is written with it."""

    record: T | None = None
    """The record to store; None leaves it as it is (the rest is still written, guarded by
    the record being the one the transition saw)."""
    publish: Sequence[tuple[str, Payload]] = ()
    """(stream, payload) of each event to publish with it."""
    due: float | None = None
    """When the stored record's next step is due, on the schedule; None: not on it."""
    writes: Callable[[BusTx], None] | None = None
    """Other writes of the same commit (keys besides the record's; a reply)."""


@dataclass(frozen=True)
class Snapshot(Generic[T]):
    """A record as read, with its stored form: what a commit is guarded by."""

    ident: str
    raw: str | None
    record: T | None


Transition = Callable[[T | None], "Change[T] | T | None"]


class Records(Generic[T]):
    """The records of one kind, their active set and schedule (see the module's docstring)."""

    def __init__(
        self,
        bus: Bus,
        model: type[T],
        prefix: str,
        *,
        active: str | None = None,
        schedule: str | None = None,
        final: Callable[[T], bool] | None = None,
        final_ttl_s: int | None = None,
        log: logging.Logger | None = None,
        noun: str = "record",
        load: Callable[[str], T] | None = None,
        dump: Callable[[T], str] | None = None,
    ) -> None:
        self.bus = bus
        self.prefix = prefix
        self.active = active
        self.schedule = schedule
        self.final = final or (lambda _: False)
        self.final_ttl_s = final_ttl_s
        self.log = log
        self.noun = noun
        self.load: Callable[[str], T] = load or model.model_validate_json
        self.dump: Callable[[T], str] = dump or (lambda record: record.model_dump_json())

    def key(self, ident: str) -> str:
        return self.prefix + ident

    # -- reading ----------------------------------------------------------------------------
    async def get(self, ident: str) -> T | None:
        raw = await self.bus.backend.get(self.key(ident))
        return self.load(raw) if raw else None

    async def get_many(self, ids: Sequence[str]) -> list[T | None]:
        """The records of ``ids`` in their order (None where missing), in one read."""
        raws = await self.bus.backend.mget([self.key(ident) for ident in ids])
        return [self.load(raw) if raw else None for raw in raws]

    async def read(self, ident: str) -> Snapshot[T]:
        raw = await self.bus.backend.get(self.key(ident))
        return Snapshot(ident, raw, self.load(raw) if raw else None)

    async def members(self) -> set[str]:
        """The ids in the active set."""
        if self.active is None:
            raise ValueError("these records keep no active set")
        return await self.bus.backend.smembers(self.active)

    async def due(self, until: float) -> list[tuple[str, float]]:
        """(id, due time) of the scheduled records due by ``until``, soonest first."""
        if self.schedule is None:
            raise ValueError("these records keep no schedule")
        return await self.bus.backend.zrangebyscore(self.schedule, 0, until)

    # -- writing ----------------------------------------------------------------------------
    async def update(
        self,
        ident: str,
        transition: Transition[T],
        *,
        cause: Envelope[Any] | None = None,
        absent: bool = False,
    ) -> tuple[T | None, T | None]:
        """Apply ``transition`` to the stored record; (before, the record written or None).

        One guarded write; when the record changed before it, ``transition`` runs again on
        the fresh record. ``absent``: the caller has just seen there is no record, so the
        first try assumes none instead of reading it. ``cause``: the envelope the published
        events (and a reply) answer.
        """
        snapshot: Snapshot[T] = Snapshot(ident, None, None) if absent else await self.read(ident)
        while True:
            found = transition(snapshot.record)
            if found is None:
                return snapshot.record, None
            change = found if isinstance(found, Change) else Change(found)
            if await self.commit(snapshot, change, cause=cause):
                self._log(ident, snapshot.record, change.record)
                return snapshot.record, change.record
            snapshot = await self.read(ident)

    async def commit(
        self, snapshot: Snapshot[T], change: Change[T] | T, *, cause: Envelope[Any] | None = None
    ) -> bool:
        """Write ``change`` if the record is still as ``snapshot`` read it; False if not.

        For a caller that decides between reading and writing (awaiting other services):
        read, decide, commit, and read again when it returns False.
        """
        if not isinstance(change, Change):
            change = Change(change)

        async def write(tx: BusTx) -> None:
            self._stage(tx, snapshot.ident, change)

        return await self.bus.apply_if(self.key(snapshot.ident), snapshot.raw, write, cause=cause)

    async def reschedule(self, ident: str, at: float | None) -> None:
        """Put the record's next step at ``at`` on the schedule (None: take it off), whatever
        the record holds (a worker's retry, or forgetting a record gone)."""
        if self.schedule is None:
            raise ValueError("these records keep no schedule")
        schedule = self.schedule

        async def write(tx: BusTx) -> None:
            if at is None:
                tx.state.zrem(schedule, ident)
            else:
                tx.state.zadd(schedule, {ident: at})

        await self.bus.transact(write)

    def _stage(self, tx: BusTx, ident: str, change: Change[T]) -> None:
        record = change.record
        if record is not None:
            final = self.final(record)
            ttl = self.final_ttl_s if final else None
            tx.state.set(self.key(ident), self.dump(record), ex=ttl)
            if self.active is not None:
                if final:
                    tx.state.srem(self.active, ident)
                else:
                    tx.state.sadd(self.active, ident)
            if self.schedule is not None:
                if final or change.due is None:
                    tx.state.zrem(self.schedule, ident)
                else:
                    tx.state.zadd(self.schedule, {ident: change.due})
        for stream, payload in change.publish:
            tx.publish(stream, payload)
        if change.writes is not None:
            change.writes(tx)

    def _log(self, ident: str, before: T | None, after: T | None) -> None:
        if self.log is None or after is None:
            return
        old = getattr(before, "state", None) if before is not None else "new"
        new = getattr(after, "state", None)
        if new is not None and old != new:
            self.log.info(
                "%s %s: %s -> %s", self.noun, ident, old, new, extra={f"{self.noun}_id": ident}
            )
