"""The cluster's commands: reserve, unreserve, look up and screen, each answered on the bus.

Reservations live in one Redis hash (``akcluster:reservations``, a field per order) with a
version beside it. A command works on the ledger in memory and commits the reservation, the
next version and the reply in one guarded write (:meth:`akbus.Bus.apply_if`): only if the
stored version is still the one the ledger was read at. When another replica moved it on,
the ledger is read again and the command decided again, so two cluster replicas on one
Redis never both grant the last of the capacity; a single replica pays one round trip.
A reservation is written before the reply leaves, so a crash after the reply loses nothing,
and a crash before it leaves the command pending for redelivery, where it finds the
reservation already made (by order id) and answers with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from akbus import Bus, BusTx, Message, RetryableError
from akcluster import metrics
from akcluster.domain.inventory import Inventory
from akcluster.domain.ledger import Ledger, Reservation
from akcluster.domain.placement import CommitLevels, Free, NoFit, place
from akcluster.errors import NoInventory
from aktypes.events import (
    Envelope,
    GroupScreened,
    LookupReservation,
    ReservationFailed,
    ReservationFound,
    ReserveResources,
    ResourceOffer,
    ResourcesReserved,
    ResourcesUnreserved,
    ScreenGroup,
    UnreserveResources,
)
from aktypes.manifest.models import Group

RESERVATIONS_KEY = "akcluster:reservations"
VERSION_KEY = "akcluster:reservations:version"
RELEASED_KEY = "akcluster:reservations:released"  # order → when its reservation was released
RELEASED_KEEP_S = 7 * 24 * 3600.0  # longer than any command waits in the stream


class Reservations:
    """Answers the cluster commands against the current inventory and the stored ledger."""

    def __init__(
        self,
        bus: Bus,
        inventory: Callable[[], Inventory | None],
        *,
        levels: CommitLevels,
        node_ports: int,
        ips: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.bus = bus
        self._inventory = inventory
        self.levels = levels
        self.node_ports = node_ports
        self.ips = ips
        self._clock = clock
        self.ledger = Ledger()
        self._version: str | None = None  # the stored version the ledger was read at
        self._stale = True
        self._lock = asyncio.Lock()
        self._queue: list[_Pending] = []

    def inventory(self) -> Inventory:
        current = self._inventory()
        if current is None:
            raise NoInventory("no inventory yet: none from the inventory operator")
        return current

    async def _load(self) -> None:
        """Read the ledger and its version together (a consistent snapshot)."""
        seen: dict[str, Any] = {}

        async def read(tx: BusTx) -> None:
            seen["version"] = await tx.state.get(VERSION_KEY)
            seen["stored"] = await tx.state.hgetall(RESERVATIONS_KEY)
            seen["released"] = await tx.state.hgetall(RELEASED_KEY)

        await self.bus.transact(read)
        self._version = seen["version"]
        self.ledger = Ledger.load(seen["stored"], int(self._version or 0), seen["released"])
        self._stale = False

    async def refresh(self) -> Ledger:
        """The ledger, read again if another replica changed it (for status and screening)."""
        if self._stale or await self.bus.backend.get(VERSION_KEY) != self._version:
            async with self._lock:
                if self._stale or await self.bus.backend.get(VERSION_KEY) != self._version:
                    await self._load()
        return self.ledger

    def free(self, ledger: Ledger, inventory: Inventory) -> Free:
        return ledger.free(inventory, node_ports=self.node_ports, ips=self.ips)

    async def _decide(
        self, cause: Envelope[Any] | None, decide: Callable[[Ledger, BusTx], Change | None]
    ) -> Change | None:
        """Run ``decide`` on the ledger and commit what it wrote, guarded by the version.

        Commands that arrive while a commit is under way queue up, and the next holder of
        the lock decides them all, in order, and commits them in one guarded write: under
        load the cluster pays one round trip per batch, not per command.
        """
        pending = _Pending(cause, decide, asyncio.get_running_loop().create_future())
        self._queue.append(pending)
        async with self._lock:
            if not pending.done.done():
                batch, self._queue = self._queue, []
                await self._commit(batch)
        return pending.done.result()

    async def _commit(self, batch: list[_Pending]) -> None:
        try:
            while True:
                if self._stale:
                    await self._load()
                ledger = self.ledger
                changes: list[Change | None] = []

                async def body(
                    tx: BusTx, ledger: Ledger = ledger, changes: list[Change | None] = changes
                ) -> None:
                    changes.clear()
                    for item in batch:
                        change = item.decide(ledger, BusTx(tx.state, self.bus, item.cause))
                        if change is not None:
                            change.apply(ledger)  # the next decision sees this one
                        changes.append(change)
                    if any(c is not None for c in changes):
                        tx.state.set(VERSION_KEY, str(ledger.version + 1))

                if await self.bus.apply_if(VERSION_KEY, self._version, body, durable=True):
                    if any(c is not None for c in changes):
                        ledger.version += 1
                        self._version = str(ledger.version)
                    for item, change in zip(batch, changes, strict=True):
                        item.done.set_result(change)
                    return
                self._stale = True  # another replica wrote: read again, decide again
        finally:
            if not all(item.done.done() for item in batch):
                # interrupted (shutdown, Redis gone): the ledger may hold decisions that were
                # not committed; read it again, and let each command run again
                self._stale = True
                for item in batch:
                    if not item.done.done():
                        item.done.set_exception(RetryableError("not committed; try again"))

    # -- commands -------------------------------------------------------------------------
    async def reserve(self, msg: Message[ReserveResources]) -> None:
        order_id, group = msg.payload.order_id, msg.payload.group
        key = str(order_id)
        inventory = self.inventory()
        result = ""

        def decide(ledger: Ledger, tx: BusTx) -> Change | None:
            nonlocal result
            existing = ledger.get(key)
            if existing is not None:
                tx.reply(ResourcesReserved(order_id=order_id, allocated=existing.allocated))
                result = "existing"
                return None
            if key in ledger.released:
                reason = "its reservation was released: the bid on this order is over"
                tx.reply(ReservationFailed(order_id=order_id, code="order_finished", reason=reason))
                result = "order_finished"
                return None
            outcome = place(group, self.free(ledger, inventory), self.levels)
            if isinstance(outcome, NoFit):
                reason = "; ".join(outcome.reasons)
                tx.reply(ReservationFailed(order_id=order_id, code=outcome.code, reason=reason))
                result = outcome.code
                return None
            reservation = Reservation.of(key, group, outcome, self._clock())
            tx.state.hset(RESERVATIONS_KEY, {key: reservation.model_dump_json()})
            tx.reply(ResourcesReserved(order_id=order_id, allocated=list(outcome.allocated)))
            result = "success"
            return Change(add=reservation)

        await self._decide(msg.envelope, decide)
        metrics.REQUESTS.labels("reserve", result).inc()

    async def unreserve(self, msg: Message[UnreserveResources]) -> None:
        order_id = msg.payload.order_id

        def answer(tx: BusTx, found: bool) -> None:
            tx.reply(ResourcesUnreserved(order_id=order_id, found=found))

        found = await self._remove(str(order_id), msg.envelope, answer)
        metrics.REQUESTS.labels("unreserve", "success" if found else "not_found").inc()

    async def release(self, order_id: str, cause: Envelope[Any] | None = None) -> bool:
        """A lease ended (torn down, or closed before it was deployed): free what it held."""
        found = await self._remove(order_id, cause, None)
        if found:
            metrics.REQUESTS.labels("release", "success").inc()
        return found

    async def activate(self, order_id: str) -> bool:
        """The lease is deployed: its pods now show in the inventory, so the reservation
        stops holding node capacity (it keeps its node ports and IPs)."""

        def decide(ledger: Ledger, tx: BusTx) -> Change | None:
            existing = ledger.get(order_id)
            if existing is None or existing.state == "active":
                return None
            active = existing.model_copy(update={"state": "active"})
            tx.state.hset(RESERVATIONS_KEY, {order_id: active.model_dump_json()})
            return Change(add=active)

        return await self._decide(None, decide) is not None

    async def reseed(
        self, order_id: str, group: Group, allocated: Sequence[ResourceOffer] = ()
    ) -> bool:
        """A deployed lease found in Kubernetes without a reservation (Redis lost, or a
        cluster moved from Akash's provider): record an active one for it, on the GPUs
        ``allocated`` (as its Manifest resource says)."""

        def decide(ledger: Ledger, tx: BusTx) -> Change | None:
            if ledger.get(order_id) is not None:
                return None
            reservation = Reservation.deployed(order_id, group, self._clock(), allocated)
            tx.state.hset(RESERVATIONS_KEY, {order_id: reservation.model_dump_json()})
            return Change(add=reservation)

        return await self._decide(None, decide) is not None

    async def _remove(
        self,
        key: str,
        cause: Envelope[Any] | None,
        answer: Callable[[BusTx, bool], None] | None,
    ) -> bool:
        now = self._clock()
        found = False

        def decide(ledger: Ledger, tx: BusTx) -> Change | None:
            nonlocal found
            found = ledger.get(key) is not None
            if found:
                tx.state.hdel(RESERVATIONS_KEY, key)
            if answer is not None:
                answer(tx, found)
            if key in ledger.released and not found:
                return None
            tx.state.hset(RELEASED_KEY, {key: repr(now)})
            stale = [o for o, at in ledger.released.items() if at < now - RELEASED_KEEP_S]
            if stale:
                tx.state.hdel(RELEASED_KEY, *stale)
            return Change(remove=key if found else None, released=key, at=now, forget=stale)

        await self._decide(cause, decide)
        return found

    async def lookup(self, msg: Message[LookupReservation]) -> None:
        order_id, group_name = msg.payload.order_id, msg.payload.group_name
        reservation = (await self.refresh()).get(str(order_id))
        found = reservation is not None and (not group_name or reservation.group.name == group_name)
        allocated = reservation.allocated if found and reservation is not None else []
        await msg.reply(ReservationFound(order_id=order_id, found=found, allocated=allocated))
        metrics.REQUESTS.labels("lookup", "success").inc()

    async def screen(self, msg: Message[ScreenGroup]) -> None:
        inventory = self.inventory()
        ledger = await self.refresh()
        outcome = place(msg.payload.group, self.free(ledger, inventory), self.levels)
        if isinstance(outcome, NoFit):
            reasons = [f"{outcome.code}: {reason}" for reason in outcome.reasons]
            await msg.reply(GroupScreened(passed=False, reasons=reasons))
        else:
            await msg.reply(GroupScreened(passed=True, allocated=list(outcome.allocated)))
        metrics.REQUESTS.labels("screen", "success").inc()


@dataclass(frozen=True)
class _Pending:
    """A command waiting for the next commit."""

    cause: Envelope[Any] | None
    decide: Callable[[Ledger, BusTx], Change | None]
    done: asyncio.Future[Change | None]


@dataclass(frozen=True)
class Change:
    """What a command did to the ledger, applied in memory once it is committed."""

    add: Reservation | None = None
    remove: str | None = None
    released: str | None = None  # an order that is never to be reserved again
    at: float = 0.0
    forget: list[str] = field(default_factory=list)  # releases too old to matter

    def apply(self, ledger: Ledger) -> None:
        if self.add is not None:
            ledger.add(self.add)
        if self.remove is not None:
            ledger.remove(self.remove)
        if self.released is not None:
            ledger.released[self.released] = self.at
        for order in self.forget:
            ledger.released.pop(order, None)
