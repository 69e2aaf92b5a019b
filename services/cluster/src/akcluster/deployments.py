"""Deployment managers: every lease of ours from manifest to running workload to teardown.

Each lease has a record in Redis (:mod:`akcluster.domain.leases`) and a place in a work
queue (a sorted set: lease → when its next step is due). Events only change records:

- ``ManifestReceived`` sets the group to run and queues a deploy (an update during a deploy
  waits for it: the record's ``version`` moves on and the running deploy sees it);
- ``LeaseClosed`` (a lease of ours) marks the record ``closing`` and queues the teardown.

The steps run in this process's worker, a few leases at a time, and each ends with one
guarded write (the record, the next due time and the events it publishes, committed only
if the record is still the one the step read — else merged with what changed meanwhile):

- deploy: claim the hostnames (with static ingress hosts, each HTTP service's generated
  one too) and leased-IP endpoints (:mod:`akcluster.registry`), apply
  every object (the Manifest resource first, then the namespace and the workload:
  idempotent, so a repeated deploy writes nothing), remove what the group no longer has;
  then ``DeploymentApplied`` and, once, ``LeaseFundsMonitor(add)``;
- health check (the monitor): every service available → healthy; otherwise one more
  failure, and after ``AP_MONITOR_MAX_RETRIES`` in a row a ``CloseBid`` (reason unstable).
  A check that cannot reach Kubernetes judges nothing: an API outage never closes a lease;
- teardown: remove the namespace and the lease's resources, release its names and its
  reservation, then ``LeaseTornDown`` and ``LeaseFundsMonitor(remove)``. Retried until done.

A migration (Akash's ``/hostname/migrate``, ``/endpoint/migrate``) gives names an owner's
lease holds to another lease of that owner, then re-applies both.

At start the records are reconciled with Kubernetes (:meth:`Deployments.recover`): every
deployed lease's objects are compared with what the cluster holds, read with one LIST per
kind, and only a lease whose objects differ is deployed again; a Manifest resource without a
record (a provider moved from Akash's, or Redis lost) gets one, and a lease namespace with
neither is torn down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from akbus import Bus, BusTx, Message
from akbus.errors import ConnectionLost
from akbus.retry import until_reachable
from akcluster import metrics
from akcluster.domain.leases import (
    CLOSED_TTL_S,
    ENDPOINTS_KEY,
    ENDPOINTS_VERSION_KEY,
    HOSTNAMES_KEY,
    HOSTNAMES_VERSION_KEY,
    LEASES_KEY,
    WORK_KEY,
    LeaseRecord,
    hostname_refusals,
    lease_hostnames,
    lease_key,
    manifest_endpoints,
    manifest_hostnames,
    service_names,
)
from akcluster.domain.ledger import Ledger
from akcluster.domain.objects import (
    BuildSettings,
    SchedulerParams,
    group_from_manifest_object,
    lease_objects,
    manifest_object,
    provider_host_objects,
    provider_leased_ip_objects,
    scheduler_params,
    uses_offers,
)
from akcluster.domain.placement import CommitLevels
from akcluster.errors import LeaseNotFound, Rejected, Unavailable
from akcluster.registry import Holders, Refused, Registry, endpoint_key, names_kept
from akcluster.reservations import Reservations
from aktypes.events import (
    BroadcastTx,
    CheckHostnames,
    CloseBid,
    DeploymentApplied,
    DeploymentHealth,
    Envelope,
    GetLeaseManifest,
    GetLeaseStatus,
    HostnamesChecked,
    LeaseClosed,
    LeaseClosedReason,
    LeaseFundsMonitor,
    LeaseManifestReport,
    LeaseQueryFailed,
    LeaseStatusReport,
    LeaseTornDown,
    ManifestReceived,
    Migrated,
    MigrateEndpoints,
    MigrateHostnames,
    MigrationRefused,
)
from aktypes.events.streams import CHAIN_TX, CLUSTER_EVENTS
from aktypes.ids import LeaseID
from aktypes.manifest.models import Group
from aktypes.namespace import lease_namespace

log = logging.getLogger("akcluster.deployments")

RECOVERED = ("unchanged", "reapplied", "queued", "adopted", "orphans")
_RECOVERY_BATCH = 250  # records read at once at start


class Backend(Protocol):
    """What the deployment managers need from a cluster (``kube`` or ``null``)."""

    async def install(self, crds: Sequence[dict[str, Any]]) -> None: ...
    async def apply(self, objects: Sequence[dict[str, Any]]) -> int: ...
    async def prune(self, lease_id: LeaseID, keep: Collection[tuple[str, str]]) -> int: ...
    async def teardown(self, lease_id: LeaseID) -> None: ...
    async def lease_status(
        self, lease_id: LeaseID, services: Sequence[tuple[str, int]], public_hostname: str
    ) -> Any: ...
    async def pods_failing(self, lease_id: LeaseID) -> dict[str, str]: ...
    async def manifest(self, lease_id: LeaseID) -> dict[str, Any] | None: ...
    def scan(self) -> Scan: ...
    async def server_version(self) -> dict[str, str]: ...


class Scan(Protocol):
    """One reading of every lease's objects, for recovery (``async with`` it): each lease's
    objects compared with the cluster's, leases in the order of their namespaces' names;
    then the leases of the Manifest resources and lease namespaces nobody asked for."""

    async def __aenter__(self) -> Scan: ...
    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
    async def unchanged(self, objects: Sequence[dict[str, Any]]) -> bool: ...
    async def unclaimed(self) -> tuple[list[LeaseID], list[LeaseID]]: ...


@dataclass(frozen=True)
class MonitorPolicy:
    max_retries: int = 40
    retry_period: float = 4.0
    retry_jitter: float = 15.0
    healthcheck_period: float = 10.0
    healthcheck_jitter: float = 5.0

    def after_failure(self) -> float:
        return self.retry_period + random.uniform(0, self.retry_jitter)  # noqa: S311 - jitter

    def after_success(self) -> float:
        return self.healthcheck_period + random.uniform(0, self.healthcheck_jitter)  # noqa: S311


def _backoff(retries: int) -> float:
    return float(min(2 ** min(retries, 6), 60))


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
        self.bus = bus
        self.backend = backend
        self.reservations = reservations
        self.build = build
        self.levels = levels
        self.monitor = monitor
        self.blocked = list(blocked_hostnames)
        self.hostnames = Registry(bus, HOSTNAMES_KEY, HOSTNAMES_VERSION_KEY)
        self.endpoints = Registry(bus, ENDPOINTS_KEY, ENDPOINTS_VERSION_KEY)
        self.concurrency = concurrency
        self.activate_reservations = activate_reservations
        self.clock = clock
        self.wake = asyncio.Event()
        self._busy: set[str] = set()
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    # -- records --------------------------------------------------------------------------
    async def record(self, lease_id: LeaseID | str) -> LeaseRecord | None:
        raw = await self.bus.backend.get(lease_key(lease_id))
        return LeaseRecord.model_validate_json(raw) if raw else None

    async def active_count(self) -> int:
        return len(await self.bus.backend.smembers(LEASES_KEY))

    async def _update(
        self,
        lease_id: LeaseID,
        change: Callable[[LeaseRecord | None, BusTx], tuple[LeaseRecord | None, float | None]],
        cause: Envelope[Any] | None = None,
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

    # -- events ---------------------------------------------------------------------------
    async def on_manifest_received(self, msg: Message[ManifestReceived]) -> None:
        lease_id, group, version = msg.payload.lease_id, msg.payload.group, msg.payload.version
        now = self.clock()

        def change(
            before: LeaseRecord | None, _tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None:
                return LeaseRecord(lease_id=lease_id, group=group, version=version), now
            if before.state in ("closing", "closed"):
                log.warning("lease %s is %s: manifest %s ignored", lease_id, before.state, version)
                return None, None
            if service_names(group) != service_names(before.group):
                log.warning(
                    "lease %s: manifest %s renames services (%s → %s); ignored",
                    lease_id,
                    version,
                    ", ".join(service_names(before.group)),
                    ", ".join(service_names(group)),
                )
                return None, None
            after = before.with_manifest(group, version)
            if after is before:
                return None, None
            return after, now

        _, after = await self._update(lease_id, change, msg.envelope)
        if after is not None:
            self.wake.set()

    async def on_lease_closed(self, msg: Message[LeaseClosed]) -> None:
        lease_id = msg.payload.lease_id
        now = self.clock()

        def change(
            before: LeaseRecord | None, _tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None or before.state in ("closing", "closed"):
                return None, None
            return before.model_copy(update={"state": "closing", "retries": 0}), now

        before, after = await self._update(lease_id, change, msg.envelope)
        if before is None:  # never deployed here: only a reservation to give back
            await self.reservations.release(str(lease_id.order_id), msg.envelope)
        if after is not None:
            self.wake.set()

    # -- queries (the gateway's) ----------------------------------------------------------
    async def lease_status(self, msg: Message[GetLeaseStatus]) -> None:
        lease_id, service = msg.payload.lease_id, msg.payload.service
        record = await self.record(lease_id)
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
        record = await self.record(lease_id)
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

    # -- migrations (the gateway's) -------------------------------------------------------
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
        except Refused as exc:
            return MigrationRefused(code=exc.code, message=str(exc))
        now = self.clock()

        def redeploy(
            before: LeaseRecord | None, _tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None or before.state in ("closing", "closed"):
                return None, None
            return before.model_copy(update={"state": "deploying"}), now

        for lease_id in (*sources, target.lease_id):
            await self._update(lease_id, redeploy)
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
        for member in sorted(await self.bus.backend.smembers(LEASES_KEY)):
            lease_id = LeaseID.parse(member)
            if (lease_id.owner, lease_id.dseq, lease_id.gseq) != (owner, dseq, gseq):
                continue
            record = await self.record(lease_id)
            if record is not None and record.state in ("deploying", "deployed"):
                return record
        return None

    # -- the worker -----------------------------------------------------------------------
    async def run(self, stopping: asyncio.Event, poll_s: float = 1.0) -> None:
        """Take every due step, a few leases at a time, until ``stopping``."""
        try:
            while not stopping.is_set():
                self.wake.clear()
                try:  # a Redis outage pauses the work, nothing more
                    due = await until_reachable(
                        "work queue",
                        lambda: self.bus.backend.zrangebyscore(WORK_KEY, 0, self.clock()),
                        keep_going=lambda: not stopping.is_set(),
                    )
                except ConnectionLost:  # given up only because the service is stopping
                    break
                for member, _ in due:
                    if member in self._busy:
                        continue
                    await self._slots.acquire()
                    if stopping.is_set():
                        self._slots.release()
                        break
                    self._busy.add(member)
                    task = asyncio.create_task(self._step(member), name=f"lease {member}")
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(poll_s):
                        await self.wake.wait()
        finally:
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _step(self, member: str) -> None:
        try:
            record = await self.record(member)
            if record is None:
                await self._forget(member)
            elif record.state == "closing":
                await self.teardown(record)
            elif record.state == "closed":
                await self._forget(member)
            elif record.state == "deploying" or record.applied != record.version:
                await self.deploy(record)
            else:
                await self.check(record)
        except Exception:
            log.exception("lease %s: step failed; retrying later", member)
            with contextlib.suppress(Exception):
                await self._reschedule(member, self.clock() + 5.0)
        finally:
            self._busy.discard(member)
            self._slots.release()

    async def _forget(self, member: str) -> None:
        async def forget(tx: BusTx) -> None:
            tx.state.zrem(WORK_KEY, member)

        await self.bus.transact(forget)

    async def _reschedule(self, member: str, due: float) -> None:
        async def later(tx: BusTx) -> None:
            tx.state.zadd(WORK_KEY, {member: due})

        await self.bus.transact(later)

    # -- deploy ---------------------------------------------------------------------------
    @staticmethod
    def _params(record: LeaseRecord, ledger: Ledger) -> Mapping[str, SchedulerParams]:
        """The lease's scheduler params: of its reservation's offers, when they matter."""
        reservation = (
            ledger.get(str(record.lease_id.order_id)) if uses_offers(record.group) else None
        )
        return scheduler_params(record.group, reservation.allocated if reservation else [])

    async def _claim_names(
        self, record: LeaseRecord
    ) -> tuple[list[str], list[str], list[str], list[str]]:
        """Claim the group's hostnames (generated ones too) and endpoints: (hosts, withheld
        hosts, endpoints, withheld endpoints). Raises :class:`Rejected` when an accepted
        hostname is blocked or another tenant's (a generated one another tenant took first
        is withheld instead: the lease runs without it)."""
        lease_id = record.lease_id
        declared = manifest_hostnames(record.group)
        wanted = lease_hostnames(lease_id, record.group, self.build.ingress_domain)
        try:
            hosts, withheld = await self.hostnames.claim(
                lease_id,
                wanted,
                lambda holders: hostname_refusals(lease_id, declared, holders, self.blocked),
            )
        except Refused as exc:
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

    async def _release_names(self, lease_id: LeaseID) -> None:
        await self.hostnames.release(lease_id)
        await self.endpoints.release(lease_id)

    def _objects(
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

    async def deploy(self, record: LeaseRecord) -> None:
        version, started = record.version, time.monotonic()
        refused: tuple[type[BaseException], ...] = (Rejected, ValueError)
        try:
            claimed, withheld, endpoints, kept = await self._claim_names(record)
            params = self._params(record, await self.reservations.refresh())
            objects = self._objects(record, params, withheld, kept)
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

        def change(
            before: LeaseRecord | None, tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None or before.state in ("closing", "closed"):
                return None, None  # closed meanwhile: the teardown is queued already
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
            tx.publish(
                CLUSTER_EVENTS,
                DeploymentApplied(
                    lease_id=record.lease_id,
                    manifest_version=version,
                    services=service_names(record.group),
                ),
            )
            if not before.monitored:
                tx.publish(
                    CLUSTER_EVENTS,
                    LeaseFundsMonitor(
                        lease_id=record.lease_id, action="add", is_new_lease=not before.recovered
                    ),
                )
                after = after.model_copy(update={"monitored": True})
            due = now if after.state == "deploying" else now + self.monitor.retry_period
            return after, due

        await self._update(record.lease_id, change)

    async def _deploy_failed(self, record: LeaseRecord, message: str, *, judge: bool) -> None:
        """A deploy that did not go through: retry later; a refused one also counts
        towards the monitor's budget (the lease's own manifest cannot run)."""
        log.warning("lease %s: %s", record.lease_id, message)
        now = self.clock()

        def change(
            before: LeaseRecord | None, tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None or before.state in ("closing", "closed"):
                return None, None
            retries = before.retries + 1
            failures = before.failures + (1 if judge else 0)
            after = before.model_copy(
                update={"retries": retries, "failures": failures, "message": message}
            )
            if judge:
                after = self._judge_unhealthy(after, message, tx)
            return after, now + (self.monitor.after_failure() if judge else _backoff(retries))

        await self._update(record.lease_id, change)

    # -- health ---------------------------------------------------------------------------
    async def check(self, record: LeaseRecord) -> None:
        try:
            status = await self.backend.lease_status(
                record.lease_id, record.services(), self.build.public_hostname
            )
            failing = (
                {} if _healthy(record, status) else await self.backend.pods_failing(record.lease_id)
            )
        except LeaseNotFound:
            await self._objects_lost(record)
            return
        except Unavailable as exc:
            metrics.MONITOR.labels("err").inc()
            log.warning(
                "lease %s: health unknown, Kubernetes unavailable (%s); not judged",
                record.lease_id,
                exc,
            )
            await self._reschedule(str(record.lease_id), self.clock() + self.monitor.retry_period)
            return
        now = self.clock()
        if _healthy(record, status):
            metrics.MONITOR.labels("up").inc()

            def healthy(
                before: LeaseRecord | None, tx: BusTx
            ) -> tuple[LeaseRecord | None, float | None]:
                if before is None or before.state != "deployed":
                    return None, None
                if before.health != "deployed":
                    tx.publish(
                        CLUSTER_EVENTS,
                        DeploymentHealth(lease_id=record.lease_id, state="deployed"),
                    )
                after = before.model_copy(
                    update={"health": "deployed", "failures": 0, "message": ""}
                )
                return after, now + self.monitor.after_success()

            await self._update(record.lease_id, healthy)
            return
        metrics.MONITOR.labels("down").inc()
        message = _unhealthy_message(record, status, failing)

        def unhealthy(
            before: LeaseRecord | None, tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None or before.state != "deployed":
                return None, None
            after = before.model_copy(update={"failures": before.failures + 1})
            after = self._judge_unhealthy(after, message, tx)
            return after, now + self.monitor.after_failure()

        await self._update(record.lease_id, unhealthy)

    def _judge_unhealthy(self, record: LeaseRecord, message: str, tx: BusTx) -> LeaseRecord:
        """One more failure: report it, and past the budget close the lease (once)."""
        if record.failures > self.monitor.max_retries and not record.close_sent:
            log.error(
                "lease %s: unhealthy %d times in a row (%s); closing the lease as unstable",
                record.lease_id,
                record.failures,
                message,
            )
            metrics.MONITOR.labels("failed").inc()
            tx.publish(
                CHAIN_TX,
                BroadcastTx(
                    key=f"close-bid/unstable/{record.lease_id}",
                    msgs=[
                        CloseBid(bid_id=record.lease_id.bid_id, reason=LeaseClosedReason.UNSTABLE)
                    ],
                ),
            )
            tx.publish(
                CLUSTER_EVENTS,
                DeploymentHealth(lease_id=record.lease_id, state="failed", message=message),
            )
            return record.model_copy(
                update={"health": "failed", "close_sent": True, "message": message}
            )
        if record.health != "pending":
            tx.publish(
                CLUSTER_EVENTS,
                DeploymentHealth(lease_id=record.lease_id, state="pending", message=message),
            )
        return record.model_copy(
            update={"health": "failed" if record.close_sent else "pending", "message": message}
        )

    async def _objects_lost(self, record: LeaseRecord) -> None:
        log.warning(
            "lease %s: its objects are gone from Kubernetes; deploying again", record.lease_id
        )
        now = self.clock()

        def again(
            before: LeaseRecord | None, _tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None or before.state != "deployed":
                return None, None
            return before.model_copy(update={"state": "deploying", "applied": ""}), now

        await self._update(record.lease_id, again)

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

            def later(
                before: LeaseRecord | None, _tx: BusTx
            ) -> tuple[LeaseRecord | None, float | None]:
                if before is None or before.state != "closing":
                    return None, None
                return before.model_copy(update={"retries": retries}), now + _backoff(retries)

            await self._update(lease_id, later)
            return
        await self._release_names(lease_id)
        await self.reservations.release(str(lease_id.order_id))
        metrics.DEPLOYMENT.labels("teardown", "success").inc()

        def done(before: LeaseRecord | None, tx: BusTx) -> tuple[LeaseRecord | None, float | None]:
            if before is None or before.state != "closing":
                return None, None
            tx.publish(CLUSTER_EVENTS, LeaseTornDown(lease_id=lease_id))
            if before.monitored:
                tx.publish(CLUSTER_EVENTS, LeaseFundsMonitor(lease_id=lease_id, action="remove"))
            gone = {"state": "closed", "hosts": [], "endpoints": [], "message": ""}
            return before.model_copy(update=gone), None

        await self._update(lease_id, done)

    # -- recovery -------------------------------------------------------------------------
    async def recover(self) -> dict[str, int]:
        """Rebuild every lease's manager from its record and what the cluster holds.

        A deployed lease's objects are built as its deploy would build them and compared with
        the cluster's, read once for all leases (:meth:`Backend.scan`: one LIST per kind),
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
        members = await self.bus.backend.smembers(LEASES_KEY)
        log.info("recovering %d lease(s): their records and the cluster's objects", len(members))
        ledger = await self.reservations.refresh()
        names = Holders(await self.hostnames.holders()), Holders(await self.endpoints.holders())
        order = sorted(members, key=lambda member: lease_namespace(LeaseID.parse(member)))
        async with self.backend.scan() as scan, _Records(self.bus, order) as records:
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
            resource = await self.backend.manifest(lease_id)
            if resource is None:  # gone meanwhile
                continue
            _, group, version = group_from_manifest_object(resource)
            closed = await self.record(lease_id)
            if closed is None:
                await self._adopt(lease_id, group, version)
                counts["adopted"] += 1
            elif closed.state == "closed":  # closed here: the resource is a leftover
                await self._queue_teardown(lease_id, group, version)
        for lease_id in namespaces:
            if str(lease_id) not in known:
                log.warning("lease namespace of %s has no manifest: tearing it down", lease_id)
                await self._queue_teardown(lease_id, None, "")
                counts["orphans"] += 1
        for outcome, count in counts.items():
            metrics.RECOVERED.labels(outcome).inc(count)
        self.wake.set()
        return counts

    async def _outcome(
        self, record: LeaseRecord, scan: Scan, ledger: Ledger, names: tuple[Holders, Holders]
    ) -> str:
        """What recovery does with a lease: nothing (``unchanged``), deploy it again
        (``reapplied``), or queue its next step (``queued``: it is not deployed)."""
        if record.state != "deployed" or record.applied != record.version:
            return "queued"
        if not names_kept(record, *names, self.blocked, self.build.ingress_domain):
            return "reapplied"
        objects = self._objects(record, self._params(record, ledger))
        return "unchanged" if await scan.unchanged(objects) else "reapplied"

    async def _again(self, lease_id: LeaseID) -> None:
        """Queue the lease's next step now; a deployed lease is deployed again."""
        now = self.clock()

        def again(
            before: LeaseRecord | None, _tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None:
                return None, None
            if before.state == "deployed":
                return before.model_copy(update={"state": "deploying"}), now
            return before, now

        await self._update(lease_id, again)

    async def _adopt(self, lease_id: LeaseID, group: Group, version: str) -> None:
        now = self.clock()

        def adopt(
            before: LeaseRecord | None, _tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is not None:
                return None, None
            return LeaseRecord(lease_id=lease_id, group=group, version=version, recovered=True), now

        await self._update(lease_id, adopt)
        await self.reservations.reseed(str(lease_id.order_id), group)

    async def _queue_teardown(self, lease_id: LeaseID, group: Group | None, version: str) -> None:
        now = self.clock()

        def close(
            before: LeaseRecord | None, _tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            base = before or LeaseRecord(
                lease_id=lease_id, group=group or Group(name="", services=[]), version=version
            )
            return base.model_copy(update={"state": "closing"}), now

        await self._update(lease_id, close)


class _Records:
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

    async def __aenter__(self) -> _Records:
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
        *provider_host_objects(lease_id, group, settings=build, withheld=withheld),
        *provider_leased_ip_objects(lease_id, group, settings=build, withheld=withheld_endpoints),
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


def _not_found(lease_id: LeaseID, message: str) -> LeaseQueryFailed:
    return LeaseQueryFailed(lease_id=lease_id, code="not_found", message=message)


def _healthy(record: LeaseRecord, status: Any) -> bool:
    for name, count in record.services():
        service = status.services.get(name)
        if service is None or service.available < count:
            return False
    return True


def _unhealthy_message(record: LeaseRecord, status: Any, failing: Mapping[str, str]) -> str:
    parts = []
    for name, count in record.services():
        service = status.services.get(name)
        available = service.available if service is not None else 0
        if available < count:
            reason = failing.get(name)
            parts.append(
                f"{name}: {available}/{count} available" + (f" ({reason})" if reason else "")
            )
    return "; ".join(parts)
