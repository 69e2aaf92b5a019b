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
``dump`` replace that for a record kept in another form. With ``in_hash``, they are the fields
``prefix + id`` of that one hash instead (a service's records kept that way since before):
the guard is then the field (:class:`~akbus.backend.Guard`), and a final record cannot expire
(a field has no expiry of its own). A transition may also delete its record
(``Change(delete=True)``), and one commit may change several records, guarded by them all
(:meth:`Records.commit_many`: a batch that must be written together or not at all).
Records made ``durable`` commit only once the replicas hold the write (see
:meth:`akbus.Bus.apply_once`): a failover of the primary cannot lose a change acknowledged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from akbus.backend import Guard
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
    delete: bool = False
    """Remove the record (and its id from the active set and the schedule); ``record`` is
    then None."""

    def __post_init__(self) -> None:
        if self.delete and self.record is not None:
            raise ValueError("a change deletes its record or stores one, not both")


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
        in_hash: str | None = None,
        durable: bool = False,
    ) -> None:
        if in_hash is not None and final_ttl_s is not None:
            raise ValueError("records kept in a hash cannot expire: no final_ttl_s with in_hash")
        self.bus = bus
        self.prefix = prefix
        self.in_hash = in_hash
        self.durable = durable
        self.active = active
        self.schedule = schedule
        self.final = final or (lambda _: False)
        self.final_ttl_s = final_ttl_s
        self.log = log
        self.noun = noun
        self.load: Callable[[str], T] = load or model.model_validate_json
        self.dump: Callable[[T], str] = dump or (lambda record: record.model_dump_json())

    def key(self, ident: str) -> str:
        """Where the record of ``ident`` is: its key, or its field of the hash."""
        return self.prefix + ident

    # -- reading ----------------------------------------------------------------------------
    async def _raw(self, ident: str) -> str | None:
        if self.in_hash is not None:
            return await self.bus.backend.hget(self.in_hash, self.key(ident))
        return await self.bus.backend.get(self.key(ident))

    async def get(self, ident: str) -> T | None:
        raw = await self._raw(ident)
        return self.load(raw) if raw else None

    async def get_many(self, ids: Sequence[str]) -> list[T | None]:
        """The records of ``ids`` in their order (None where missing), in one read."""
        if self.in_hash is not None:
            stored = await self.bus.backend.hgetall(self.in_hash)
            raws = [stored.get(self.key(ident)) for ident in ids]
        else:
            raws = await self.bus.backend.mget([self.key(ident) for ident in ids])
        return [self.load(raw) if raw else None for raw in raws]

    async def all(self) -> dict[str, T]:
        """Every record, by id: those of the active set (kept in a hash: every one)."""
        if self.in_hash is not None:
            return {ident: self.load(raw) for ident, raw in (await self._fields()).items()}
        ids = sorted(await self.members())
        return {i: r for i, r in zip(ids, await self.get_many(ids), strict=True) if r is not None}

    async def _fields(self) -> dict[str, str]:
        """Kept in a hash: every record as stored, by id."""
        stored = await self.bus.backend.hgetall(self.in_hash or "")
        n = len(self.prefix)
        return {f[n:]: raw for f, raw in stored.items() if f.startswith(self.prefix)}

    async def read(self, ident: str) -> Snapshot[T]:
        raw = await self._raw(ident)
        return Snapshot(ident, raw, self.load(raw) if raw else None)

    async def members(self) -> set[str]:
        """The ids in the active set (kept in a hash without one: of every record)."""
        if self.active is None:
            if self.in_hash is not None:
                return set(await self._fields())
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
        """Apply ``transition`` to the stored record; (before, the record written: None when
        nothing was written, or the record was deleted).

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
                return snapshot.record, change.record
            snapshot = await self.read(ident)

    async def commit(
        self, snapshot: Snapshot[T], change: Change[T] | T, *, cause: Envelope[Any] | None = None
    ) -> bool:
        """Write ``change`` if the record is still as ``snapshot`` read it; False if not.

        For a caller that decides between reading and writing (awaiting other services):
        read, decide, commit, and read again when it returns False.
        """
        return await self.commit_many([(snapshot, change)], cause=cause)

    async def commit_many(
        self,
        changes: Sequence[tuple[Snapshot[T], Change[T] | T]],
        *,
        writes: Callable[[BusTx], None] | None = None,
        cause: Envelope[Any] | None = None,
    ) -> bool:
        """Write every change, and ``writes``, in one commit if each record is still as its
        snapshot read it; nothing and False if one is not (read them again, decide again)."""
        staged = [(s.ident, c if isinstance(c, Change) else Change(c)) for s, c in changes]

        async def write(tx: BusTx) -> None:
            for ident, change in staged:
                self._stage(tx, ident, change)
            if writes is not None:
                writes(tx)

        guards = [self._guard(snapshot) for snapshot, _ in changes]
        if not await self.bus.apply_if_all(guards, write, cause=cause, durable=self.durable):
            return False
        for (snapshot, _), (ident, change) in zip(changes, staged, strict=True):
            self._log(ident, snapshot.record, change)
        return True

    def _guard(self, snapshot: Snapshot[T]) -> Guard:
        if self.in_hash is not None:
            return Guard(self.in_hash, snapshot.raw, field=self.key(snapshot.ident))
        return Guard(self.key(snapshot.ident), snapshot.raw)

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
        if change.delete:
            if self.in_hash is not None:
                tx.state.hdel(self.in_hash, self.key(ident))
            else:
                tx.state.delete(self.key(ident))
            if self.active is not None:
                tx.state.srem(self.active, ident)
            if self.schedule is not None:
                tx.state.zrem(self.schedule, ident)
        elif record is not None:
            final = self.final(record)
            if self.in_hash is not None:
                tx.state.hset(self.in_hash, {self.key(ident): self.dump(record)})
            else:
                tx.state.set(
                    self.key(ident), self.dump(record), ex=self.final_ttl_s if final else None
                )
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

    def _log(self, ident: str, before: T | None, change: Change[T]) -> None:
        written = change.record is not None or (change.delete and before is not None)
        if self.log is None or not written:
            return
        old = getattr(before, "state", None) if before is not None else "new"
        new = "deleted" if change.delete else getattr(change.record, "state", None)
        if new is not None and old is not None and old != new:
            self.log.info(
                "%s %s: %s -> %s", self.noun, ident, old, new, extra={f"{self.noun}_id": ident}
            )
