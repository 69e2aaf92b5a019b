"""The cluster's commands: reserve, unreserve, look up and screen, each answered on the bus.

Reservations live in one Redis hash (``akcluster:reservations``, a field per order) with a
version counter beside it. Every command runs as one optimistic transaction: it reads the
counter (watched), works on the ledger at that version — the one in memory when no one
else changed it, else reloaded — and writes the reservation, the new version and the reply
together. Two cluster replicas on one Redis therefore never both grant the last of the
capacity: the second transaction sees the first's version and runs again on fresh data.
A reservation is written before the reply leaves, so a crash after the reply loses nothing,
and a crash before it leaves the command pending for redelivery, where it finds the
reservation already made (by order id) and answers with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from akbus import BusTx, Message
from akcluster import metrics
from akcluster.domain.inventory import Inventory
from akcluster.domain.ledger import Ledger, Reservation
from akcluster.domain.placement import CommitLevels, NoFit, place
from akcluster.errors import NoInventory
from aktypes.events import (
    GroupScreened,
    LeaseClosed,
    LookupReservation,
    ReservationFailed,
    ReservationFound,
    ReserveResources,
    ResourcesReserved,
    ResourcesUnreserved,
    ScreenGroup,
    UnreserveResources,
)

RESERVATIONS_KEY = "akcluster:reservations"
VERSION_KEY = "akcluster:reservations:version"


class Reservations:
    """Answers the cluster commands against the current inventory and the stored ledger."""

    def __init__(
        self,
        inventory: Callable[[], Inventory | None],
        *,
        levels: CommitLevels,
        node_ports: int,
        ips: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._inventory = inventory
        self.levels = levels
        self.node_ports = node_ports
        self.ips = ips
        self._clock = clock
        self.ledger = Ledger(version=-1)  # nothing loaded yet
        self._lock = asyncio.Lock()

    def inventory(self) -> Inventory:
        current = self._inventory()
        if current is None:
            raise NoInventory("no inventory yet: the cluster is still being listed")
        return current

    async def _at_current_version(self, tx: BusTx) -> Ledger:
        version = int(await tx.state.get(VERSION_KEY) or 0)
        if version == self.ledger.version:
            return self.ledger
        return Ledger.load(await tx.state.hgetall(RESERVATIONS_KEY), version)

    async def refresh(self, get: Callable[[str], Any], hgetall: Callable[[str], Any]) -> Ledger:
        """Reload the ledger if another replica changed it (for status; outside commands)."""
        version = int(await get(VERSION_KEY) or 0)
        if version != self.ledger.version:
            async with self._lock:
                self.ledger = Ledger.load(await hgetall(RESERVATIONS_KEY), version)
        return self.ledger

    def free(self, ledger: Ledger, inventory: Inventory) -> Any:
        return ledger.free(inventory, node_ports=self.node_ports, ips=self.ips)

    # -- commands -------------------------------------------------------------------------
    async def reserve(self, msg: Message[ReserveResources]) -> None:
        order_id, group = msg.payload.order_id, msg.payload.group
        key = str(order_id)
        inventory = self.inventory()
        seen: dict[str, Any] = {}

        async def body(tx: BusTx) -> None:
            seen.clear()
            ledger = seen["ledger"] = await self._at_current_version(tx)
            existing = ledger.get(key)
            if existing is not None:
                tx.reply(ResourcesReserved(order_id=order_id, allocated=existing.allocated))
                seen["result"] = "existing"
                return
            outcome = place(group, self.free(ledger, inventory), self.levels)
            if isinstance(outcome, NoFit):
                tx.reply(
                    ReservationFailed(
                        order_id=order_id, code=outcome.code, reason="; ".join(outcome.reasons)
                    )
                )
                seen["result"] = outcome.code
                return
            reservation = Reservation.of(key, group, outcome, self._clock())
            tx.state.hset(RESERVATIONS_KEY, {key: reservation.model_dump_json()})
            tx.state.incrby(VERSION_KEY, 1)
            tx.reply(ResourcesReserved(order_id=order_id, allocated=list(outcome.allocated)))
            seen["new"] = reservation
            seen["result"] = "success"

        async with self._lock:
            await msg.bus.transact(body, cause=msg.envelope)
            ledger: Ledger = seen["ledger"]
            if "new" in seen:
                ledger.add(seen["new"])
                ledger.version += 1
            self.ledger = ledger
        metrics.REQUESTS.labels("reserve", seen["result"]).inc()

    async def unreserve(self, msg: Message[UnreserveResources]) -> None:
        order_id = msg.payload.order_id

        def answer(tx: BusTx, found: bool) -> None:
            tx.reply(ResourcesUnreserved(order_id=order_id, found=found))

        found = await self._remove(str(order_id), msg, answer)
        metrics.REQUESTS.labels("unreserve", "success" if found else "not_found").inc()

    async def on_lease_closed(self, msg: Message[LeaseClosed]) -> None:
        """A lease of ours closed on chain: what it held is free again."""
        if await self._remove(str(msg.payload.lease_id.order_id), msg, None):
            metrics.REQUESTS.labels("release", "success").inc()

    async def _remove(
        self, key: str, msg: Message[Any], answer: Callable[[BusTx, bool], None] | None
    ) -> bool:
        seen: dict[str, Any] = {}

        async def body(tx: BusTx) -> None:
            ledger = seen["ledger"] = await self._at_current_version(tx)
            found = seen["found"] = ledger.get(key) is not None
            if found:
                tx.state.hdel(RESERVATIONS_KEY, key)
                tx.state.incrby(VERSION_KEY, 1)
            if answer is not None:
                answer(tx, found)

        async with self._lock:
            await msg.bus.transact(body, cause=msg.envelope)
            ledger: Ledger = seen["ledger"]
            if seen["found"]:
                ledger.remove(key)
                ledger.version += 1
            self.ledger = ledger
        return bool(seen["found"])

    async def lookup(self, msg: Message[LookupReservation]) -> None:
        order_id, group_name = msg.payload.order_id, msg.payload.group_name

        async def body(tx: BusTx) -> None:
            raw = await tx.state.hget(RESERVATIONS_KEY, str(order_id))
            found = raw is not None
            allocated = []
            if raw is not None:
                reservation = Reservation.model_validate_json(raw)
                found = not group_name or reservation.group.name == group_name
                allocated = reservation.allocated if found else []
            tx.reply(ReservationFound(order_id=order_id, found=found, allocated=allocated))

        await msg.bus.transact(body, cause=msg.envelope)
        metrics.REQUESTS.labels("lookup", "success").inc()

    async def screen(self, msg: Message[ScreenGroup]) -> None:
        inventory = self.inventory()

        async def body(tx: BusTx) -> None:
            ledger = await self._at_current_version(tx)
            outcome = place(msg.payload.group, self.free(ledger, inventory), self.levels)
            if isinstance(outcome, NoFit):
                reasons = [f"{outcome.code}: {reason}" for reason in outcome.reasons]
                tx.reply(GroupScreened(passed=False, reasons=reasons))
            else:
                tx.reply(GroupScreened(passed=True, allocated=list(outcome.allocated)))

        await msg.bus.transact(body, cause=msg.envelope)
        metrics.REQUESTS.labels("screen", "success").inc()
