"""A lease's deploy and its teardown, each ending in one guarded write of its record.

- deploy: claim the hostnames (with static ingress hosts, each HTTP service's generated one
  too) and leased-IP endpoints (:mod:`akcluster.registry`), apply every object (the Manifest
  resource first, then the namespace and the workload: idempotent, so a repeated deploy
  writes nothing), remove what the group no longer has; then ``DeploymentApplied`` and,
  once, ``LeaseFundsMonitor(add)``. A deploy Kubernetes refuses counts towards the health
  monitor's budget (:func:`~akcluster.deployments.health.judge_unhealthy`); one that cannot
  reach it is retried with a backoff;
- teardown: remove the namespace and the lease's resources, release its names and its
  reservation, then ``LeaseTornDown`` and ``LeaseFundsMonitor(remove)``. Retried until done.

What a deploy applies is :func:`desired_objects`, which recovery builds too to compare with
what the cluster holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping
from typing import Any

from akbus import Change
from akcluster import metrics
from akcluster.deployments.context import Context, backoff
from akcluster.deployments.health import judge_unhealthy
from akcluster.deployments.records import stamped
from akcluster.domain.leases import (
    LeaseRecord,
    hostname_refusals,
    lease_hostnames,
    manifest_endpoints,
    manifest_hostnames,
    service_names,
)
from akcluster.domain.ledger import Ledger
from akcluster.domain.objects import (
    BuildSettings,
    SchedulerParams,
    lease_objects,
    manifest_object,
    provider_host_objects,
    provider_leased_ip_objects,
    scheduler_params,
    uses_offers,
)
from akcluster.domain.placement import CommitLevels
from akcluster.errors import MoveRefused, Rejected, Unavailable
from akcluster.registry import endpoint_key
from aktypes.events import DeploymentApplied, LeaseFundsMonitor, LeaseTornDown, Payload
from aktypes.events.streams import CLUSTER_EVENTS
from aktypes.ids import LeaseID

log = logging.getLogger("akcluster.deployments")


class Steps:
    """The deploy and the teardown of one lease."""

    def __init__(self, context: Context) -> None:
        self.records = context.records
        self.backend = context.backend
        self.reservations = context.reservations
        self.hostnames = context.hostnames
        self.endpoints = context.endpoints
        self.build = context.build
        self.levels = context.levels
        self.monitor = context.monitor
        self.blocked = context.blocked
        self.activate_reservations = context.activate_reservations
        self.clock = context.clock

    # -- deploy ---------------------------------------------------------------------------
    async def deploy(self, record: LeaseRecord) -> None:
        version, started = record.version, time.monotonic()
        refused: tuple[type[BaseException], ...] = (Rejected, ValueError)
        try:
            claimed, withheld, endpoints, kept = await self._claim_names(record)
            params = lease_params(record, await self.reservations.refresh())
            objects = self.objects(record, params, withheld, kept)
            writes = await self.backend.apply(objects)
            pruned = 0
            names = (claimed, withheld, endpoints, kept)
            if _may_have_stale_objects(record, *names):
                keep = {(o["kind"], o["metadata"]["name"]) for o in objects}
                pruned = await self.backend.prune(record.lease_id, keep)
        except Unavailable as exc:
            metrics.DEPLOYMENT.labels("deploy", "unavailable").inc()
            await self._deploy_failed(record, f"Kubernetes unavailable: {exc}", judge=False)
            return
        except refused as exc:
            metrics.DEPLOYMENT.labels("deploy", "rejected").inc()
            await self._deploy_failed(record, f"deploy refused: {exc}", judge=True)
            return
        metrics.DEPLOYMENT.labels("deploy", "success").inc()
        metrics.DEPLOY_SECONDS.observe(time.monotonic() - started)
        log.info(
            "lease %s: applied %s (%d writes, %d removed)",
            record.lease_id,
            version[:12],
            writes,
            pruned,
            extra={"lease_id": str(record.lease_id)},
        )
        if self.activate_reservations:
            await self.reservations.activate(str(record.lease_id.order_id))
        now = self.clock()

        def applied(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None or before.state in ("closing", "closed"):
                return None  # closed meanwhile: the teardown is queued already
            after = before.model_copy(
                update={
                    "applied": version,
                    "state": "deployed" if before.version == version else "deploying",
                    "retries": 0,
                    "hosts": claimed,
                    "withheld": withheld,
                    "endpoints": endpoints,
                    "withheld_endpoints": kept,
                    "message": "",
                }
            )
            publish: list[tuple[str, Payload]] = [
                (
                    CLUSTER_EVENTS,
                    DeploymentApplied(
                        lease_id=record.lease_id,
                        manifest_version=version,
                        services=service_names(record.group),
                    ),
                )
            ]
            if not before.monitored:
                publish.append(
                    (
                        CLUSTER_EVENTS,
                        LeaseFundsMonitor(
                            lease_id=record.lease_id,
                            action="add",
                            is_new_lease=not before.recovered,
                        ),
                    )
                )
                after = after.model_copy(update={"monitored": True})
            due = now if after.state == "deploying" else now + self.monitor.retry_period
            return stamped(after, self.clock, due=due, publish=publish)

        await self.records.update(str(record.lease_id), applied)

    async def _deploy_failed(self, record: LeaseRecord, message: str, *, judge: bool) -> None:
        """A deploy that did not go through: retry later; a refused one also counts
        towards the monitor's budget (the lease's own manifest cannot run)."""
        log.warning("lease %s: %s", record.lease_id, message)
        now = self.clock()

        def failed(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None or before.state in ("closing", "closed"):
                return None
            retries = before.retries + 1
            failures = before.failures + (1 if judge else 0)
            after = before.model_copy(
                update={"retries": retries, "failures": failures, "message": message}
            )
            publish: list[tuple[str, Payload]] = []
            if judge:
                after, publish = judge_unhealthy(after, message, self.monitor.max_retries)
            due = now + (self.monitor.after_failure() if judge else backoff(retries))
            return stamped(after, self.clock, due=due, publish=publish)

        await self.records.update(str(record.lease_id), failed)

    async def _claim_names(
        self, record: LeaseRecord
    ) -> tuple[list[str], list[str], list[str], list[str]]:
        """Claim the group's hostnames (generated ones too) and endpoints: (hosts, withheld
        hosts, endpoints, withheld endpoints). Raises :class:`Rejected` when an accepted
        hostname is blocked or another tenant's (a generated one another tenant took first
        is withheld instead: the lease runs without it)."""
        lease_id = record.lease_id
        declared = manifest_hostnames(record.group)
        wanted = lease_hostnames(
            lease_id, record.group, self.build.ingress_domain, record.adopted_hosts
        )
        try:
            hosts, withheld = await self.hostnames.claim(
                lease_id,
                wanted,
                lambda holders: hostname_refusals(lease_id, declared, holders, self.blocked),
            )
        except MoveRefused as exc:
            raise Rejected(str(exc)) from None
        prefix = endpoint_key(lease_id.owner, "")
        keys = [endpoint_key(lease_id.owner, n) for n in manifest_endpoints(record.group)]
        held, kept = await self.endpoints.claim(lease_id, keys)
        return (
            hosts,
            withheld,
            [k.removeprefix(prefix) for k in held],
            [k.removeprefix(prefix) for k in kept],
        )

    def objects(
        self,
        record: LeaseRecord,
        params: Mapping[str, SchedulerParams],
        withheld: Collection[str] | None = None,
        withheld_endpoints: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        """:func:`desired_objects` with this cluster's settings; names withheld as the
        record says unless given."""
        return desired_objects(
            record,
            params,
            self.build,
            self.levels,
            withheld=record.withheld if withheld is None else withheld,
            withheld_endpoints=(
                record.withheld_endpoints if withheld_endpoints is None else withheld_endpoints
            ),
        )

    # -- teardown -------------------------------------------------------------------------
    async def teardown(self, record: LeaseRecord) -> None:
        lease_id = record.lease_id
        try:
            await self.backend.teardown(lease_id)
        except Unavailable as exc:
            metrics.DEPLOYMENT.labels("teardown", "unavailable").inc()
            retries = record.retries + 1
            log.warning("lease %s: teardown waits for Kubernetes (%s)", lease_id, exc)
            now = self.clock()

            def later(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
                if before is None or before.state != "closing":
                    return None
                after = before.model_copy(update={"retries": retries})
                return stamped(after, self.clock, due=now + backoff(retries))

            await self.records.update(str(lease_id), later)
            return
        await self._release_names(lease_id)
        await self.reservations.release(str(lease_id.order_id))
        metrics.DEPLOYMENT.labels("teardown", "success").inc()

        def done(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None or before.state != "closing":
                return None
            publish: list[tuple[str, Payload]] = [
                (CLUSTER_EVENTS, LeaseTornDown(lease_id=lease_id))
            ]
            if before.monitored:
                publish.append(
                    (CLUSTER_EVENTS, LeaseFundsMonitor(lease_id=lease_id, action="remove"))
                )
            gone = {"state": "closed", "hosts": [], "endpoints": [], "message": ""}
            return stamped(before.model_copy(update=gone), self.clock, due=None, publish=publish)

        await self.records.update(str(lease_id), done)

    async def _release_names(self, lease_id: LeaseID) -> None:
        await self.hostnames.release(lease_id)
        await self.endpoints.release(lease_id)


def lease_params(record: LeaseRecord, ledger: Ledger) -> Mapping[str, SchedulerParams]:
    """The lease's scheduler params: of its reservation's offers, when they matter."""
    reservation = ledger.get(str(record.lease_id.order_id)) if uses_offers(record.group) else None
    return scheduler_params(record.group, reservation.allocated if reservation else [])


def desired_objects(
    record: LeaseRecord,
    params: Mapping[str, SchedulerParams],
    build: BuildSettings,
    levels: CommitLevels,
    *,
    withheld: Collection[str] = (),
    withheld_endpoints: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Everything a lease's deploy applies, the Manifest resource first: its group as
    ``build`` and ``levels`` make it, without the hostnames and endpoints withheld."""
    lease_id, group, version = record.lease_id, record.group, record.version
    return [
        manifest_object(lease_id, group, version, settings=build, params=params),
        *lease_objects(
            lease_id,
            group,
            version,
            settings=build,
            levels=levels,
            params=params,
        ),
        *provider_host_objects(
            lease_id, group, settings=build, withheld=withheld, adopted=record.adopted_hosts
        ),
        *provider_leased_ip_objects(
            lease_id,
            group,
            settings=build,
            withheld=withheld_endpoints,
            adopted=record.adopted_endpoints,
        ),
    ]


def _may_have_stale_objects(
    record: LeaseRecord,
    claimed: list[str],
    withheld: list[str],
    endpoints: list[str],
    withheld_endpoints: list[str],
) -> bool:
    """Could the lease's namespace hold objects this deploy does not (a service, hostname or
    endpoint gone)? Not for a first deploy nor for a re-apply of what was applied: removing then
    costs a LIST per kind for nothing, which adds up when a restart re-applies every lease."""
    if record.recovered and not record.applied:
        return True  # adopted from Kubernetes: whatever was there before us
    if not record.applied:
        return False
    changed_names = (
        sorted(claimed) != sorted(record.hosts)
        or withheld != record.withheld
        or sorted(endpoints) != sorted(record.endpoints)
        or withheld_endpoints != record.withheld_endpoints
    )
    return record.applied != record.version or changed_names
