"""Each lease's status kept current from Kubernetes watch events, for the gateway to serve
from memory.

The watches (:mod:`akcluster.adapters.kube_watch`) name the lease namespaces whose objects
changed; each such lease's status is read again (the ``GetLeaseStatus`` answer,
:meth:`~akcluster.deployments.ports.Backend.lease_status`) and, when it differs from what
was published, published: ``LeaseStatusChanged`` on ``akash.provider.cluster.lease-status``
and the same value in the hash ``akcluster:lease-status`` (lease → its latest), in one
transaction, so a gateway that starts loads the current values and then follows the
stream. A lease that is closed or no longer deployed is ``LeaseStatusGone``, out of the
hash.

Every ``confirm_every`` seconds (and after each round of reads) ``LeaseStatusesConfirmed``
says: every status published so far, but those ``pending``, is current as of ``at``. It is
sent only while every watch is connected and at most :data:`MAX_PENDING` leases wait for a
read; the gateway serves a status from memory only while its last confirmation (or its own
read) is younger than its bound, so a cluster that stops, or loses its watches or Redis,
stops being trusted within that bound. The rule behind ``at``: a lease leaves the dirty set
when its read starts, so a lease that is not dirty when ``at`` is taken has had every event
told before ``at`` read and published.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from akbus import Bus, BusTx, ConnectionLost
from akcluster.deployments.context import Context
from akcluster.errors import LeaseNotFound, Rejected, Unavailable
from aktypes.events import LeaseStatusChanged, LeaseStatusesConfirmed, LeaseStatusGone, Payload
from aktypes.events.streams import CLUSTER_LEASE_STATUS
from aktypes.events.streams import CLUSTER_LEASE_STATUS_HASH as STATUS_HASH
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace

log = logging.getLogger("akcluster.deployments")

STREAM_MAXLEN = 10_000  # entries kept on the stream (approximately): a tail, not a store
MAX_PENDING = 100  # leases waiting for a read beyond which nothing is confirmed
BATCH = 200  # leases read in one round
COALESCE_S = 0.05  # a burst of events makes one round


class LeaseStatuses:
    """The published status of every lease whose objects the watches report."""

    def __init__(
        self,
        context: Context,
        bus: Bus,
        *,
        confirm_every: float = 2.0,
        concurrency: int = 4,
    ) -> None:
        self.records = context.records
        self.backend = context.backend
        self.public_hostname = context.build.public_hostname
        self.clock = context.clock
        self.bus = bus
        self.confirm_every = confirm_every
        self._slots = asyncio.Semaphore(concurrency)
        self._namespaces: dict[str, LeaseID] = {}
        self._unknown: set[str] = set()
        self._dirty: set[LeaseID] = set()
        self._published: dict[LeaseID, str] = {}  # what was published, without its time
        self._wake = asyncio.Event()

    # -- told by the watches (on the event loop) --------------------------------------------
    def touched(self, namespace: str) -> None:
        lease = self._namespaces.get(namespace)
        if lease is None:
            self._unknown.add(namespace)
        else:
            self._dirty.add(lease)
        self._wake.set()

    def relisted(self, namespaces: Iterable[str]) -> None:
        """A whole list: every lease in it, and every one published (its objects may be
        gone), is read again."""
        for namespace in namespaces:
            self.touched(namespace)
        self._dirty.update(self._published)
        self._wake.set()

    # -- the loop ---------------------------------------------------------------------------
    async def run(self, live: Callable[[], bool]) -> None:
        """Read, publish and confirm until cancelled (a supervised task); ``live``: whether
        every watch is connected."""
        stored = await self.bus.backend.hgetall(STATUS_HASH)
        for key in stored:
            lease = LeaseID.parse(key)
            self._namespaces[lease_namespace(lease)] = lease
            self._published[lease] = ""  # read again before anything is confirmed of it
            self._dirty.add(lease)
        failed = False
        while True:
            if failed or not (self._dirty or self._unknown):  # failed reads wait a turn
                try:
                    async with asyncio.timeout(self.confirm_every):
                        await self._wake.wait()
                except TimeoutError:
                    pass
                await asyncio.sleep(COALESCE_S)
            self._wake.clear()
            try:
                failed = await self._round(live)
            except (ConnectionLost, Unavailable) as exc:
                log.warning("lease statuses not published: %s", exc)
                await asyncio.sleep(self.confirm_every)

    async def _round(self, live: Callable[[], bool]) -> bool:
        """Read what is dirty (up to :data:`BATCH`), then confirm; whether a read failed."""
        if self._unknown:
            await self._learn_namespaces()
        watching = live()
        at = self.clock()
        dirty_at = set(self._dirty)
        batch = sorted(dirty_at, key=str)[:BATCH]
        self._dirty.difference_update(batch)
        failed: list[LeaseID] = []

        async def check(lease: LeaseID) -> None:
            async with self._slots:
                try:
                    await self._check(lease)
                except (ConnectionLost, Unavailable, Rejected) as exc:
                    log.debug("status of %s not read: %s", lease, exc)
                    failed.append(lease)

        await asyncio.gather(*(check(lease) for lease in batch))
        self._dirty.update(failed)
        # dirty when ``at`` was taken and not read since (what changed after ``at`` does
        # not count: what was published reflects everything told before it)
        pending = (dirty_at - set(batch)) | set(failed)
        if watching and live() and len(pending) <= MAX_PENDING:
            await self._publish(LeaseStatusesConfirmed(at=at, pending=sorted(pending, key=str)))
        return bool(failed)

    async def _learn_namespaces(self) -> None:
        """Which lease each unknown namespace is (the active leases' records)."""
        for member in await self.records.members():
            lease = LeaseID.parse(member)
            self._namespaces[lease_namespace(lease)] = lease
        for namespace in self._unknown:
            found = self._namespaces.get(namespace)
            if found is not None:
                self._dirty.add(found)
        self._unknown.clear()

    async def _check(self, lease: LeaseID) -> None:
        """Read the lease's status; publish it when it changed, or that it is gone."""
        checked_at = self.clock()
        record = await self.records.get(str(lease))
        if record is None or record.state == "closed":
            await self._gone(lease)
            return
        try:
            status = await self.backend.lease_status(lease, record.services(), self.public_hostname)
        except LeaseNotFound:
            await self._gone(lease)
            return
        changed = LeaseStatusChanged(
            lease_id=lease,
            services=status.services,
            forwarded_ports=status.forwarded_ports,
            ips=status.ips,
            checked_at=checked_at,
        )
        seen = changed.model_copy(update={"checked_at": 0.0}).model_dump_json()
        if self._published.get(lease) == seen:
            return
        await self._publish(changed, value=(str(lease), changed.model_dump_json()))
        self._published[lease] = seen

    async def _gone(self, lease: LeaseID) -> None:
        if lease not in self._published:
            return
        await self._publish(LeaseStatusGone(lease_id=lease), removed=str(lease))
        del self._published[lease]

    async def _publish(
        self, payload: Payload, *, value: tuple[str, str] | None = None, removed: str = ""
    ) -> None:
        envelope = self.bus.envelope(payload, stream=CLUSTER_LEASE_STATUS)

        async def body(tx: BusTx) -> None:
            if value is not None:
                tx.state.hset(STATUS_HASH, {value[0]: value[1]})
            if removed:
                tx.state.hdel(STATUS_HASH, removed)
            tx.state.xadd(CLUSTER_LEASE_STATUS, envelope.to_fields(), maxlen=STREAM_MAXLEN)

        await self.bus.transact(body)
