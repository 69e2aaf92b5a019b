"""Manifests in, leases paired, watchdogs: the manifest service's handlers.

A submission (``SubmitManifest`` from the gateway) goes through the checks of
:mod:`akmanifest.domain.checks` in order; the answer is committed in one Redis transaction
with what it implies. Accepted: the manifest stored for the deployment, one
``ManifestReceived`` per active lease of ours (the cluster deploys it), those leases'
watchdogs removed and the ``ManifestAccepted`` reply — a guarded write on the deployment's
record (:class:`akbus.Records`), so two submissions for one deployment (or a deployment
closed meanwhile) cannot interleave: the loser is checked again. Rejected: the
``ManifestRejected`` reply and the same as an event. Leases won and closed and deployments
closed change the record the same way, each a transition of it in one guarded write.

Watchdogs: ``LeaseWon`` records the lease as waiting, with its deadline in a sorted set,
unless a manifest was accepted for it already (it may come first: the chain, not the bid
engine, says which leases exist); a deployment with an accepted manifest that wins another
lease sends that lease its group at once. :meth:`Manifests.expire_due` closes the bid of
each lease whose deadline passed, claiming it in the same transaction as the ``CloseBid``
command and ``ManifestTimedOut`` — so two replicas never both close it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from akbus import (
    Bus,
    BusTx,
    Change,
    Message,
    Records,
    RequestTimeout,
    Snapshot,
    UnexpectedReply,
)
from akmanifest import metrics
from akmanifest.adapters.chain import CachedChain
from akmanifest.domain.checks import (
    CHAIN_CODES,
    CHAIN_UNAVAILABLE,
    CLUSTER_UNAVAILABLE,
    DEPLOYMENT_NOT_FOUND,
    Rejection,
    check_against_chain,
    check_http_hosts,
    check_manifest,
    check_own_host,
    check_services_unchanged,
    hostname_rejection,
    ingress_hostnames,
    leased_groups,
)
from akmanifest.domain.records import (
    CLOSED_TTL_S,
    DEADLINES_KEY,
    DEPLOYMENTS_KEY,
    RECORD_PREFIX,
    WAITING_KEY,
    DeploymentRecord,
    close_bid_key,
    parse_record,
    record_key,
)
from akmanifest.errors import ChainUnavailable
from aktypes.events import (
    BroadcastTx,
    CheckHostnames,
    CloseBid,
    DeploymentClosed,
    DeploymentUpdated,
    HostnamesChecked,
    LeaseClosed,
    LeaseClosedReason,
    LeaseWon,
    ManifestAccepted,
    ManifestReceived,
    ManifestRejected,
    ManifestTimedOut,
    Payload,
    SubmitManifest,
)
from aktypes.events.streams import CHAIN_TX, CLUSTER_COMMANDS, MANIFEST_EVENTS
from aktypes.ids import DeploymentID, LeaseID
from aktypes.manifest import Group, Manifest

log = logging.getLogger("akmanifest")
MAX_REASON = 8000  # a reason listing hundreds of problems is cut here


@dataclass(frozen=True)
class Policy:
    provider: str
    manifest_timeout: float  # 0: no watchdogs
    hostname_check_timeout: float
    http_needs_hosts: bool = False  # no static ingress hosts: HTTP exposes accept a hostname


Leased = list[tuple[LeaseID, Group]]


class Manifests:
    """The manifest service's state machine over Redis (see :mod:`akmanifest.domain.records`)."""

    def __init__(
        self,
        bus: Bus,
        chain: CachedChain,
        policy: Policy,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.bus = bus
        self.chain = chain
        self.policy = policy
        self.clock = clock
        self.changed = asyncio.Event()  # set when the status may have changed
        self.records = Records(
            bus,
            DeploymentRecord,
            RECORD_PREFIX,
            active=DEPLOYMENTS_KEY,
            final=lambda record: record.state == "closed",
            final_ttl_s=CLOSED_TTL_S,
        )

    async def record(self, deployment_id: DeploymentID) -> DeploymentRecord | None:
        return await self.records.get(str(deployment_id))

    async def counts(self) -> tuple[int, int]:
        """Deployments with an accepted manifest, leases waiting for one."""
        deployments = await self.records.members()
        waiting = await self.bus.backend.hgetall(WAITING_KEY)
        return len(deployments), len(waiting)

    # -- submissions ----------------------------------------------------------------------
    async def on_submit(self, msg: Message[SubmitManifest]) -> None:
        deployment_id, manifest = msg.payload.deployment_id, msg.payload.manifest
        while True:
            snapshot = await self.records.read(str(deployment_id))
            try:
                outcome = await self.check(msg, manifest, snapshot.record)
            except ChainUnavailable as exc:
                outcome = Rejection(CHAIN_UNAVAILABLE, f"the chain cannot be read now: {exc}")
            if isinstance(outcome, Rejection):
                await self._reject(msg, outcome)
                return
            if await self._accept(msg, manifest, outcome, snapshot):
                return
            # the deployment's record changed while the manifest was checked: check again

    async def check(
        self, msg: Message[SubmitManifest], manifest: Manifest, record: DeploymentRecord | None
    ) -> Rejection | Leased:
        """Every check, in order; the first failing one's rejection, else our leased groups."""
        deployment_id = msg.payload.deployment_id
        found = check_manifest(manifest)
        if found is not None:
            return found
        if record is not None and record.state == "closed":
            return Rejection(
                DEPLOYMENT_NOT_FOUND,
                f"deployment {deployment_id.dseq} is closed: it takes no manifest",
            )
        facts, cached = await self.chain.deployment(deployment_id)
        found = check_against_chain(manifest, deployment_id, facts)
        if found is not None and found.code in CHAIN_CODES and cached:
            facts, _ = await self.chain.deployment(deployment_id, fresh=True)  # never refuse on
            found = check_against_chain(manifest, deployment_id, facts)  # a stale answer
        if found is not None or facts is None:  # (no facts: refused just above)
            return found or Rejection(DEPLOYMENT_NOT_FOUND, f"deployment {deployment_id} unknown")
        if record is not None and record.state == "accepted":
            found = check_services_unchanged(manifest, record.parsed())
            if found is not None:
                return found
        leased = leased_groups(manifest, facts)
        if self.policy.http_needs_hosts:
            found = check_http_hosts(leased)
            if found is not None:
                return found
        found = check_own_host(leased, await self.chain.provider_host())
        if found is not None:
            return found
        found = await self.check_hostnames(msg, leased)
        return found if found is not None else leased

    async def check_hostnames(
        self, msg: Message[SubmitManifest], leased: Leased
    ) -> Rejection | None:
        """Ask the cluster, per lease, whether its group's ingress hostnames may be used."""
        timeout = self.policy.hostname_check_timeout

        async def one(lease: LeaseID, group: Group) -> Rejection | None:
            places = ingress_hostnames(group)
            if not places:
                return None
            try:
                reply = await msg.request(
                    CLUSTER_COMMANDS,
                    CheckHostnames(lease_id=lease, hostnames=list(places)),
                    HostnamesChecked,
                    key=f"hostnames/{lease}",
                    timeout_s=timeout,
                    attempts=1,
                )
            except RequestTimeout:
                return Rejection(
                    CLUSTER_UNAVAILABLE,
                    f"the cluster service did not check the hostnames of lease {lease} "
                    f"within {timeout:g}s",
                )
            except UnexpectedReply as exc:
                return Rejection(CLUSTER_UNAVAILABLE, f"the cluster service: {exc}")
            return hostname_rejection(reply.refused, places)

        found = await asyncio.gather(*(one(lease, group) for lease, group in leased))
        problems = [r for r in found if r is not None]
        unavailable = [r for r in problems if r.code == CLUSTER_UNAVAILABLE]
        if unavailable:
            return unavailable[0]
        if len(problems) > 1:
            reasons = "; ".join(r.reason.removeprefix("hostnames not allowed: ") for r in problems)
            return Rejection(problems[0].code, f"hostnames not allowed: {reasons}")
        return problems[0] if problems else None

    async def _accept(
        self,
        msg: Message[SubmitManifest],
        manifest: Manifest,
        leased: Leased,
        snapshot: Snapshot[DeploymentRecord],
    ) -> bool:
        """Commit the acceptance, unless the deployment's record changed since ``snapshot``."""
        deployment_id = msg.payload.deployment_id
        version = manifest.version_hex()
        leases = [lease for lease, _ in leased]
        after = DeploymentRecord.accepted(deployment_id, manifest, leases, self.clock())
        reply = ManifestAccepted(deployment_id=deployment_id, version=version, leases=leases)

        def writes(tx: BusTx) -> None:
            _stop_watchdogs(tx, after.leases)
            _answer(tx, msg, reply)

        received = [
            (MANIFEST_EVENTS, ManifestReceived(lease_id=lease, version=version, group=group))
            for lease, group in leased
        ]
        change = Change(after, publish=received, writes=writes)
        if not await self.records.commit(snapshot, change, cause=msg.envelope):
            return False
        metrics.SUBMISSIONS.labels("accepted").inc()
        self.changed.set()
        log.info(
            "manifest %s accepted for %s",
            version,
            deployment_id,
            extra={"deployment_id": str(deployment_id), "leases": [str(x) for x in leases]},
        )
        return True

    async def _reject(self, msg: Message[SubmitManifest], rejection: Rejection) -> None:
        event = ManifestRejected(
            deployment_id=msg.payload.deployment_id,
            code=rejection.code,
            reason=rejection.reason[:MAX_REASON],
        )

        async def body(tx: BusTx) -> None:
            tx.publish(MANIFEST_EVENTS, event)
            _answer(tx, msg, event)

        await self.bus.transact(body, cause=msg.envelope)
        metrics.SUBMISSIONS.labels(rejection.code).inc()
        log.info(
            "manifest for %s rejected (%s): %s",
            msg.payload.deployment_id,
            rejection.code,
            rejection.reason[:500],
        )

    # -- leases and deployments -----------------------------------------------------------
    async def on_lease_won(self, msg: Message[LeaseWon]) -> None:
        lease = msg.payload.lease_id
        if lease.provider != self.policy.provider:
            return
        deployment_id = lease.deployment_id
        self.chain.invalidate(deployment_id)
        now = self.clock()
        timeout = self.policy.manifest_timeout
        waiting = timeout > 0 and await self.bus.backend.hget(WAITING_KEY, str(lease)) is not None

        def watch(tx: BusTx) -> None:
            deadline = now + timeout
            tx.state.hset(WAITING_KEY, {str(lease): repr(deadline)})
            tx.state.zadd(DEADLINES_KEY, {str(lease): deadline})

        def won(before: DeploymentRecord | None) -> Change[DeploymentRecord] | None:
            if before is not None and (before.state == "closed" or before.has_lease(lease)):
                return None
            if before is not None:  # a manifest accepted before this lease: it is this one's
                group = before.parsed().group(msg.payload.group.name)
                if group is not None:
                    received = ManifestReceived(lease_id=lease, version=before.version, group=group)
                    updated = before.with_leases({*before.leases, str(lease)}, now)
                    return Change(updated, publish=[(MANIFEST_EVENTS, received)])
            if timeout <= 0 or waiting:
                return None
            return Change(writes=watch)  # guarded by the record: not closed meanwhile

        await self.records.update(str(deployment_id), won, cause=msg.envelope)
        self.changed.set()

    async def on_lease_closed(self, msg: Message[LeaseClosed]) -> None:
        lease = msg.payload.lease_id
        if lease.provider != self.policy.provider:
            return
        deployment_id = lease.deployment_id
        self.chain.invalidate(deployment_id)
        now = self.clock()

        def unwatch(tx: BusTx) -> None:
            _stop_watchdogs(tx, [str(lease)])

        def closed(before: DeploymentRecord | None) -> Change[DeploymentRecord]:
            if before is not None and before.has_lease(lease):
                updated = before.with_leases(set(before.leases) - {str(lease)}, now)
                return Change(updated, writes=unwatch)
            return Change(writes=unwatch)

        await self.records.update(str(deployment_id), closed, cause=msg.envelope)
        self.changed.set()

    async def on_deployment_updated(self, msg: Message[DeploymentUpdated]) -> None:
        self.chain.invalidate(msg.payload.deployment_id)  # its hash changed

    async def on_deployment_closed(self, msg: Message[DeploymentClosed]) -> None:
        deployment_id = msg.payload.deployment_id
        self.chain.invalidate(deployment_id)
        prefix = f"{deployment_id}/"
        tombstone = DeploymentRecord(
            deployment_id=str(deployment_id), state="closed", updated_at=self.clock()
        )

        def close(before: DeploymentRecord | None) -> DeploymentRecord | None:
            return tombstone if before is None or before.state != "closed" else None

        # the tombstone first: a lease won from now on finds it and waits for nothing
        await self.records.update(str(deployment_id), close, cause=msg.envelope)

        async def unwatch(tx: BusTx) -> None:
            waiting = [k for k in await tx.state.hgetall(WAITING_KEY) if k.startswith(prefix)]
            _stop_watchdogs(tx, waiting)

        await self.bus.transact(unwatch, cause=msg.envelope)
        self.changed.set()

    # -- watchdogs ------------------------------------------------------------------------
    async def expire_due(self) -> int:
        """Close the bid of every lease whose manifest did not come in time; how many."""
        due = await self.bus.backend.zrangebyscore(DEADLINES_KEY, 0, self.clock())
        fired = 0
        for key, _ in due:
            lease = LeaseID.parse(key)
            state = await self.chain.lease_state(lease)
            if await self._expire(lease, active=state == "active"):
                fired += 1
        if due:
            self.changed.set()
        return fired

    async def _expire(self, lease: LeaseID, *, active: bool) -> bool:
        key = str(lease)
        fired = False

        async def body(tx: BusTx) -> None:
            nonlocal fired
            fired = False  # the body runs again when another replica got there first
            claimed = await tx.state.hget(WAITING_KEY, key) is not None
            record = parse_record(await tx.state.get(record_key(lease.deployment_id)))
            tx.state.hdel(WAITING_KEY, key)
            tx.state.zrem(DEADLINES_KEY, key)
            if not claimed or not active or (record is not None and record.has_lease(lease)):
                return
            close = CloseBid(bid_id=lease.bid_id, reason=LeaseClosedReason.MANIFEST_TIMEOUT)
            tx.publish(CHAIN_TX, BroadcastTx(key=close_bid_key(lease), msgs=[close]))
            tx.publish(MANIFEST_EVENTS, ManifestTimedOut(lease_id=lease))
            fired = True

        await self.bus.transact(body)
        if fired:
            metrics.TIMEOUTS.inc()
            log.warning(
                "no manifest for lease %s in time: closing its bid",
                lease,
                extra={"lease_id": key},
            )
        return fired


def _stop_watchdogs(tx: BusTx, leases: list[str]) -> None:
    if leases:
        tx.state.hdel(WAITING_KEY, *leases)
        tx.state.zrem(DEADLINES_KEY, *leases)


def _answer(tx: BusTx, msg: Message[SubmitManifest], reply: Payload) -> None:
    if msg.envelope.reply_to:
        tx.reply(reply)
