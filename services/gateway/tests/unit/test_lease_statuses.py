"""The gateway's map of lease statuses: loaded, followed, and served only while fresh."""

from __future__ import annotations

import asyncio

from akbus import Bus
from akbus.backend import Tx
from akbus.testing import eventually, memory_bus
from akgateway.handlers import LeaseStatuses
from aktypes.events import (
    LeaseStatusChanged,
    LeaseStatusesConfirmed,
    LeaseStatusGone,
    ServiceStatus,
)
from aktypes.events.streams import CLUSTER_LEASE_STATUS, CLUSTER_LEASE_STATUS_HASH
from aktypes.ids import LeaseID
from aktypes.testing import address

LEASE = LeaseID(owner=address(1), dseq=7, gseq=1, oseq=1, provider=address(2))
OTHER = LeaseID(owner=address(1), dseq=8, gseq=1, oseq=1, provider=address(2))


def changed(lease: LeaseID, checked_at: float, restarts: int = 0) -> LeaseStatusChanged:
    web = ServiceStatus(name="web", available=1, total=1, restarts=restarts)
    return LeaseStatusChanged(lease_id=lease, services={"web": web}, checked_at=checked_at)


async def store(bus: Bus, mapping: dict[str, str]) -> None:
    async def body(tx: Tx) -> None:
        tx.hset(CLUSTER_LEASE_STATUS_HASH, mapping)

    await bus.backend.transact(body)


async def test_a_status_is_served_while_confirmed_within_the_bound_and_never_after() -> None:
    now = [1000.0]
    bus = memory_bus()
    stored = changed(LEASE, checked_at=980.0).model_dump_json()  # read 20 s ago
    await store(bus, {str(LEASE): stored})
    statuses = LeaseStatuses(bus, max_age=10.0, clock=lambda: now[0])
    task = asyncio.create_task(statuses.run())
    try:
        await eventually(lambda: len(statuses) == 1, what="the stored status loaded")
        assert statuses.fresh(LEASE) is None  # loaded, but nobody vouched for it lately

        await bus.publish(CLUSTER_LEASE_STATUS, LeaseStatusesConfirmed(at=999.0))
        held = await eventually(lambda: statuses.fresh(LEASE), what="confirmed")
        assert held.report.services["web"].available == 1
        now[0] = 1009.0
        assert statuses.fresh(LEASE) is not None
        now[0] = 1009.5  # 10.5 s after the confirmation: past the bound
        assert statuses.fresh(LEASE) is None

        # a pending lease counts only its own read; a newer read replaces an older one
        await bus.publish(CLUSTER_LEASE_STATUS, changed(LEASE, checked_at=1009.0, restarts=4))
        await bus.publish(CLUSTER_LEASE_STATUS, changed(LEASE, checked_at=1001.0, restarts=1))
        await bus.publish(CLUSTER_LEASE_STATUS, changed(OTHER, checked_at=990.0))
        await bus.publish(CLUSTER_LEASE_STATUS, LeaseStatusesConfirmed(at=1009.5, pending=[OTHER]))
        newer = await eventually(lambda: statuses.fresh(LEASE), what="the new read")
        assert newer.report.services["web"].restarts == 4
        now[0] = 1019.4  # 10.4 s after its read, 9.9 s after the confirmation
        await eventually(lambda: statuses.fresh(LEASE), what="the confirmation")
        assert len(statuses) == 2
        assert statuses.fresh(OTHER) is None  # pending: only its read counts, 29.4 s ago

        await bus.publish(CLUSTER_LEASE_STATUS, LeaseStatusGone(lease_id=LEASE))
        await eventually(lambda: statuses.fresh(LEASE) is None, what="gone")
        assert len(statuses) == 1
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await bus.close()
