"""Recovery at start: the lease records reconciled with what Kubernetes holds.

Every deployed lease's objects are built as its deploy would build them and compared with
the cluster's, read with one LIST per kind (:meth:`~akcluster.deployments.ports.Backend.scan`),
and only a lease whose objects differ is deployed again. A Manifest resource without a
record (a provider moved from Akash's, or Redis lost) gets one: the group and GPUs the
resource names, and the generated hostnames of the lease's ProviderHosts, kept as they are
named (the Go provider's ingress domain may not be this cluster's), and the leased-IP
endpoints its ProviderLeasedIPs declare under Go's sharing key, kept under it (their
addresses stay). A lease namespace with neither is torn down.
"""

from __future__ import annotations

import logging

from akbus import Change
from akcluster import metrics
from akcluster.deployments.context import Context
from akcluster.deployments.ports import Scan
from akcluster.deployments.records import RecordBatches, stamped
from akcluster.deployments.steps import Steps, lease_params
from akcluster.domain.leases import LeaseRecord
from akcluster.domain.ledger import Ledger
from akcluster.domain.objects import (
    allocation_of,
    group_from_manifest_object,
    scheduler_params_from_manifest_object,
)
from akcluster.domain.objects.reading import generated_hosts, go_endpoints
from akcluster.registry import Holders, names_kept
from aktypes.events import ResourceOffer
from aktypes.ids import LeaseID
from aktypes.manifest.models import Group
from aktypes.namespace import lease_namespace

log = logging.getLogger("akcluster.deployments")

RECOVERED = ("unchanged", "reapplied", "queued", "adopted", "orphans")


class Recovery:
    """Rebuilds the managers of every lease from the records and the cluster."""

    def __init__(self, context: Context, steps: Steps) -> None:
        self.records = context.records
        self.backend = context.backend
        self.reservations = context.reservations
        self.hostnames = context.hostnames
        self.endpoints = context.endpoints
        self.build = context.build
        self.blocked = context.blocked
        self.clock = context.clock
        self.wake = context.wake
        self.steps = steps

    async def recover(self) -> dict[str, int]:
        """Rebuild every lease's manager from its record and what the cluster holds.

        A deployed lease's objects are built as its deploy would build them and compared with
        the cluster's, read once for all leases (:meth:`.Backend.scan`: one LIST per kind),
        the leases taken in the order of their namespaces' names, as the API lists them. A
        lease whose objects all match and whose names stay is ready as it is: nothing is
        written and its health check stays as scheduled. One with an object missing or
        changed (drift while the service was down) is deployed again; any other lease's next
        step is queued now. A Manifest resource without a record (a provider moved from
        Akash's, or Redis lost) is adopted; a lease namespace with neither is torn down.
        What was done, by lease: ``unchanged``, ``reapplied``, ``queued``, ``adopted``,
        ``orphans``.
        """
        counts = dict.fromkeys(RECOVERED, 0)
        members = await self.records.members()
        log.info("recovering %d lease(s): their records and the cluster's objects", len(members))
        ledger = await self.reservations.refresh()
        names = Holders(await self.hostnames.holders()), Holders(await self.endpoints.holders())
        order = sorted(members, key=lambda member: lease_namespace(LeaseID.parse(member)))
        async with self.backend.scan() as scan, RecordBatches(self.records, order) as records:
            async for record in records:
                outcome = await self._outcome(record, scan, ledger, names)
                counts[outcome] += 1
                if outcome != "unchanged":
                    await self._again(record.lease_id)
            manifests, namespaces = await scan.unclaimed()
        known = set(members)
        for lease_id in manifests:
            if str(lease_id) in known:
                continue
            known.add(str(lease_id))
            if await self.take_over(lease_id) == "adopted":
                counts["adopted"] += 1
        for lease_id in namespaces:
            if str(lease_id) not in known:
                log.warning("lease namespace of %s has no manifest: tearing it down", lease_id)
                await self.queue_teardown(lease_id)
                counts["orphans"] += 1
        for outcome, count in counts.items():
            metrics.RECOVERED.labels(outcome).inc(count)
        self.wake.set()
        return counts

    async def take_over(self, lease_id: LeaseID) -> str:
        """A lease found with a Manifest resource and no active record: ``adopted`` (a
        record made from the resource, its deploy queued), ``removed`` (its record is
        closed: the resource is a leftover, torn down), ``kept`` (it has an active record
        now) or ``gone`` (no Manifest resource any more)."""
        resource = await self.backend.manifest(lease_id)
        if resource is None:  # gone meanwhile
            return "gone"
        _, group, version = group_from_manifest_object(resource)
        closed = await self.records.get(str(lease_id))
        if closed is None:
            hosts = generated_hosts(group, await self.backend.provider_hosts(lease_id))
            ips = go_endpoints(lease_id, group, await self.backend.provider_leased_ips(lease_id))
            params = scheduler_params_from_manifest_object(resource)
            allocated = allocation_of(group, params)
            adopted = await self._adopt(lease_id, group, version, (hosts, ips), allocated)
            return "adopted" if adopted else "kept"
        if closed.state == "closed":  # closed here: the resource is a leftover
            await self.queue_teardown(lease_id, group, version)
            return "removed"
        return "kept"

    async def _outcome(
        self, record: LeaseRecord, scan: Scan, ledger: Ledger, names: tuple[Holders, Holders]
    ) -> str:
        """What recovery does with a lease: nothing (``unchanged``), deploy it again
        (``reapplied``), or queue its next step (``queued``: it is not deployed)."""
        if record.state != "deployed" or record.applied != record.version:
            return "queued"
        if not names_kept(record, *names, self.blocked, self.build.ingress_domain):
            return "reapplied"
        objects = self.steps.objects(record, lease_params(record, ledger))
        return "unchanged" if await scan.unchanged(objects) else "reapplied"

    async def _again(self, lease_id: LeaseID) -> None:
        """Queue the lease's next step now; a deployed lease is deployed again."""
        now = self.clock()

        def again(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None:
                return None
            if before.state == "deployed":
                return stamped(
                    before.model_copy(update={"state": "deploying"}), self.clock, due=now
                )
            return stamped(before, self.clock, due=now)

        await self.records.update(str(lease_id), again)

    async def _adopt(
        self,
        lease_id: LeaseID,
        group: Group,
        version: str,
        names: tuple[dict[str, str], list[str]],
        allocated: list[ResourceOffer],
    ) -> bool:
        """A record for a lease found only in Kubernetes, deployed next: its group, the
        generated hostnames its ProviderHosts name and the endpoints its ProviderLeasedIPs
        key as Go's (``names``, kept as they are) and a reservation on the GPUs its Manifest
        resource says it runs on (``allocated``)."""
        now = self.clock()
        hosts, endpoints = names

        def adopt(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is not None:
                return None
            adopted = LeaseRecord(
                lease_id=lease_id,
                group=group,
                version=version,
                recovered=True,
                adopted_hosts=hosts,
                adopted_endpoints=endpoints,
            )
            return stamped(adopted, self.clock, due=now)

        log.info(
            "lease %s: adopted from its Manifest resource (%d service(s), %d generated "
            "hostname(s) and %d leased-IP endpoint(s) kept)",
            lease_id,
            len(group.services or ()),
            len(hosts),
            len(endpoints),
            extra={"lease_id": str(lease_id)},
        )
        _, after = await self.records.update(str(lease_id), adopt, absent=True)
        if after is None:  # a record came meanwhile
            return False
        await self.reservations.reseed(str(lease_id.order_id), group, allocated)
        return True

    async def queue_teardown(
        self, lease_id: LeaseID, group: Group | None = None, version: str = ""
    ) -> bool:
        """Tear down the objects of a lease without an active record (none, or a closed
        one); False when it has an active record (now), which is left alone."""
        now = self.clock()

        def close(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is not None and before.state != "closed":
                return None
            base = before or LeaseRecord(
                lease_id=lease_id, group=group or Group(name="", services=[]), version=version
            )
            return stamped(base.model_copy(update={"state": "closing"}), self.clock, due=now)

        _, after = await self.records.update(str(lease_id), close)
        self.wake.set()
        return after is not None
