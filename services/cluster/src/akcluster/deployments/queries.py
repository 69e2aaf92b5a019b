"""The gateway's questions to the deployment managers, and its migrations.

- ``GetLeaseStatus``: each service's replicas, hostnames, forwarded ports and leased IPs,
  as the cluster has them now; ``GetLeaseManifest``: the group the lease runs;
- ``CheckHostnames``: which of a manifest's hostnames it could not have (blocked, or held by
  another tenant);
- ``MigrateHostnames`` / ``MigrateEndpoints`` (Akash's ``/hostname/migrate``,
  ``/endpoint/migrate``): names an owner's lease holds given to another lease of that owner,
  then both deployed again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from akbus import Change, Message
from akcluster.deployments.context import Context
from akcluster.deployments.records import stamped
from akcluster.domain.leases import (
    LeaseRecord,
    hostname_refusals,
    manifest_endpoints,
    manifest_hostnames,
    service_names,
)
from akcluster.errors import LeaseNotFound, MoveRefused, Unavailable
from akcluster.registry import Registry, endpoint_key
from aktypes.events import (
    CheckHostnames,
    GetLeaseManifest,
    GetLeaseStatus,
    HostnamesChecked,
    LeaseManifestReport,
    LeaseQueryFailed,
    LeaseStatusReport,
    Migrated,
    MigrateEndpoints,
    MigrateHostnames,
    MigrationRefused,
)
from aktypes.ids import LeaseID
from aktypes.manifest.models import Group

log = logging.getLogger("akcluster.deployments")


class Queries:
    """The answers to the gateway's commands about leases."""

    def __init__(self, context: Context) -> None:
        self.records = context.records
        self.backend = context.backend
        self.hostnames = context.hostnames
        self.endpoints = context.endpoints
        self.build = context.build
        self.blocked = context.blocked
        self.clock = context.clock
        self.wake = context.wake

    async def lease_status(self, msg: Message[GetLeaseStatus]) -> None:
        lease_id, service = msg.payload.lease_id, msg.payload.service
        record = await self.records.get(str(lease_id))
        if record is None or record.state == "closed":
            await msg.reply(_not_found(lease_id, f"no deployment for lease {lease_id}"))
            return
        names = service_names(record.group)
        if service and service not in names:
            await msg.reply(
                _not_found(lease_id, f"service {service!r} is not in the lease ({names})")
            )
            return
        try:
            status = await self.backend.lease_status(
                lease_id, record.services(), self.build.public_hostname
            )
        except LeaseNotFound:
            await msg.reply(_not_found(lease_id, f"lease {lease_id} is not deployed yet"))
            return
        except Unavailable as exc:
            await msg.reply(
                LeaseQueryFailed(lease_id=lease_id, code="unavailable", message=str(exc))
            )
            return
        services = dict(status.services)
        if service:
            services = {service: services[service]} if service in services else {}
        forwarded = {k: v for k, v in status.forwarded_ports.items() if not service or k == service}
        ips = {k: v for k, v in status.ips.items() if not service or k == service}
        await msg.reply(
            LeaseStatusReport(
                lease_id=lease_id, services=services, forwarded_ports=forwarded, ips=ips
            )
        )

    async def lease_manifest(self, msg: Message[GetLeaseManifest]) -> None:
        lease_id = msg.payload.lease_id
        record = await self.records.get(str(lease_id))
        if record is None or record.state == "closed":
            await msg.reply(_not_found(lease_id, f"no manifest for lease {lease_id}"))
            return
        await msg.reply(
            LeaseManifestReport(lease_id=lease_id, version=record.version, group=record.group)
        )

    async def check_hostnames(self, msg: Message[CheckHostnames]) -> None:
        refused = hostname_refusals(
            msg.payload.lease_id,
            msg.payload.hostnames,
            await self.hostnames.holders(),
            self.blocked,
        )
        await msg.reply(HostnamesChecked(refused=refused))

    # -- migrations -----------------------------------------------------------------------
    async def migrate_hostnames(self, msg: Message[MigrateHostnames]) -> None:
        p = msg.payload
        names = list(dict.fromkeys(h.lower() for h in p.hostnames))
        await msg.reply(
            await self._migrate(
                self.hostnames, (p.owner, p.dseq, p.gseq), names, names, manifest_hostnames
            )
        )

    async def migrate_endpoints(self, msg: Message[MigrateEndpoints]) -> None:
        p = msg.payload
        names = list(dict.fromkeys(p.endpoints))
        keys = [endpoint_key(p.owner, n) for n in names]
        await msg.reply(
            await self._migrate(
                self.endpoints, (p.owner, p.dseq, p.gseq), names, keys, manifest_endpoints
            )
        )

    async def _migrate(
        self,
        registry: Registry,
        destination: tuple[str, int, int],
        names: list[str],
        keys: list[str],
        declared: Callable[[Group], list[str]],
    ) -> Migrated | MigrationRefused:
        owner, dseq, gseq = destination
        target = await self._group_lease(owner, dseq, gseq)
        if target is None:
            message = f"no active lease of deployment {dseq}, group {gseq} here"
            return MigrationRefused(code="not_found", message=message)
        missing = [n for n in names if n not in declared(target.group)]
        if missing:
            message = f"lease {target.lease_id} does not declare {', '.join(missing)}"
            return MigrationRefused(code="invalid", message=message)
        try:
            sources = await registry.move(keys, owner, target.lease_id)
        except MoveRefused as exc:
            return MigrationRefused(code=exc.code, message=str(exc))
        now = self.clock()

        def redeploy(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None or before.state in ("closing", "closed"):
                return None
            return stamped(before.model_copy(update={"state": "deploying"}), self.clock, due=now)

        for lease_id in (*sources, target.lease_id):
            await self.records.update(str(lease_id), redeploy)
        self.wake.set()
        log.info(
            "moved %s from %s to %s",
            ", ".join(names),
            ", ".join(str(s) for s in sources) or "it",
            target.lease_id,
        )
        return Migrated(destination=target.lease_id, transferred=names)

    async def _group_lease(self, owner: str, dseq: int, gseq: int) -> LeaseRecord | None:
        """The owner's lease of that group here, if it is deployed or being deployed."""
        for member in sorted(await self.records.members()):
            lease_id = LeaseID.parse(member)
            if (lease_id.owner, lease_id.dseq, lease_id.gseq) != (owner, dseq, gseq):
                continue
            record = await self.records.get(str(lease_id))
            if record is not None and record.state in ("deploying", "deployed"):
                return record
        return None


def _not_found(lease_id: LeaseID, message: str) -> LeaseQueryFailed:
    return LeaseQueryFailed(lease_id=lease_id, code="not_found", message=message)
