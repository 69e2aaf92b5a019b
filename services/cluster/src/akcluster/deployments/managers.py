"""The deployment managers as the cluster service wires them: one :class:`Deployments` made
of the parts of this package, which share one :class:`~akcluster.deployments.context.Context`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from akbus import Bus, Message
from akcluster.deployments.context import Context, MonitorPolicy
from akcluster.deployments.events import Events
from akcluster.deployments.health import Health
from akcluster.deployments.ports import Backend
from akcluster.deployments.queries import Queries
from akcluster.deployments.records import lease_records
from akcluster.deployments.recovery import Recovery
from akcluster.deployments.steps import Steps
from akcluster.deployments.worker import Worker
from akcluster.domain.leases import (
    ENDPOINTS_KEY,
    ENDPOINTS_VERSION_KEY,
    HOSTNAMES_KEY,
    HOSTNAMES_VERSION_KEY,
    LeaseRecord,
)
from akcluster.domain.objects import BuildSettings
from akcluster.domain.placement import CommitLevels
from akcluster.registry import Registry
from akcluster.reservations import Reservations
from aktypes.events import (
    CheckHostnames,
    GetLeaseManifest,
    GetLeaseStatus,
    LeaseClosed,
    ManifestReceived,
    MigrateEndpoints,
    MigrateHostnames,
)
from aktypes.ids import LeaseID


class Deployments:
    """The deployment managers of every lease, their worker and their queries."""

    def __init__(
        self,
        bus: Bus,
        backend: Backend,
        reservations: Reservations,
        *,
        build: BuildSettings,
        levels: CommitLevels,
        monitor: MonitorPolicy,
        blocked_hostnames: Sequence[str] = (),
        concurrency: int = 8,
        activate_reservations: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.records = lease_records(bus)
        self.context = Context(
            records=self.records,
            backend=backend,
            reservations=reservations,
            hostnames=Registry(bus, HOSTNAMES_KEY, HOSTNAMES_VERSION_KEY),
            endpoints=Registry(bus, ENDPOINTS_KEY, ENDPOINTS_VERSION_KEY),
            build=build,
            levels=levels,
            monitor=monitor,
            blocked=list(blocked_hostnames),
            activate_reservations=activate_reservations,
            clock=clock,
        )
        steps = Steps(self.context)
        self.events = Events(self.context)
        self.queries = Queries(self.context)
        self.recovery = Recovery(self.context, steps)
        self.worker = Worker(self.context, steps, Health(self.context), concurrency)

    # -- records --------------------------------------------------------------------------
    async def record(self, lease_id: LeaseID | str) -> LeaseRecord | None:
        return await self.records.get(str(lease_id))

    async def active_count(self) -> int:
        return len(await self.records.members())

    # -- events ---------------------------------------------------------------------------
    async def on_manifest_received(self, msg: Message[ManifestReceived]) -> None:
        await self.events.on_manifest_received(msg)

    async def on_lease_closed(self, msg: Message[LeaseClosed]) -> None:
        await self.events.on_lease_closed(msg)

    # -- queries and migrations (the gateway's) -------------------------------------------
    async def lease_status(self, msg: Message[GetLeaseStatus]) -> None:
        await self.queries.lease_status(msg)

    async def lease_manifest(self, msg: Message[GetLeaseManifest]) -> None:
        await self.queries.lease_manifest(msg)

    async def check_hostnames(self, msg: Message[CheckHostnames]) -> None:
        await self.queries.check_hostnames(msg)

    async def migrate_hostnames(self, msg: Message[MigrateHostnames]) -> None:
        await self.queries.migrate_hostnames(msg)

    async def migrate_endpoints(self, msg: Message[MigrateEndpoints]) -> None:
        await self.queries.migrate_endpoints(msg)

    # -- the worker, recovery, the reconciliation's repairs ----------------------------
    async def run(self, stopping: asyncio.Event, poll_s: float = 1.0) -> None:
        """Take every due step, a few leases at a time, until ``stopping``."""
        await self.worker.run(stopping, poll_s)

    async def found(self) -> tuple[list[LeaseID], list[LeaseID], list[LeaseID]]:
        """What the reconciliation compares with the chain: the leases of the Manifest
        resources and of the lease namespaces (read first: a lease's record is made before
        its objects), then the leases with an active record."""
        async with self.context.backend.scan() as scan:
            manifests, namespaces = await scan.unclaimed()
        members = [LeaseID.parse(member) for member in await self.records.members()]
        return list(manifests), list(namespaces), members

    async def close(self, lease_id: LeaseID) -> bool:
        """The lease is closed on chain: as ``LeaseClosed`` does (:meth:`.Events.close`)."""
        return await self.events.close(lease_id)

    async def take_over(self, lease_id: LeaseID) -> str:
        """Adopt a lease found in Kubernetes without a record (:meth:`.Recovery.take_over`)."""
        return await self.recovery.take_over(lease_id)

    async def remove(self, lease_id: LeaseID) -> bool:
        """Tear down a lease's objects unless it has an active record
        (:meth:`.Recovery.queue_teardown`)."""
        return await self.recovery.queue_teardown(lease_id)

    async def recover(self) -> dict[str, int]:
        """Reconcile the records with the cluster (:meth:`.Recovery.recover`); what was done,
        by outcome."""
        return await self.recovery.recover()
