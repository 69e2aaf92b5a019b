"""What the events the cluster follows do to the lease records: they only change records.

- ``ManifestReceived`` sets the group to run and queues a deploy (an update during a deploy
  waits for it: the record's ``version`` moves on and the running deploy sees it); a
  manifest that renames the lease's services, or comes for a closing lease, is ignored;
- ``LeaseClosed`` (a lease of ours) marks the record ``closing`` and queues the teardown; a
  lease never deployed here has only its reservation to give back.
"""

from __future__ import annotations

import logging
from typing import Any

from akbus import Change, Message
from akcluster.deployments.context import Context
from akcluster.deployments.records import stamped
from akcluster.domain.leases import LeaseRecord, service_names
from aktypes.events import Envelope, LeaseClosed, ManifestReceived
from aktypes.ids import LeaseID

log = logging.getLogger("akcluster.deployments")


class Events:
    """The handlers of ``ManifestReceived`` and ``LeaseClosed``."""

    def __init__(self, context: Context) -> None:
        self.records = context.records
        self.reservations = context.reservations
        self.clock = context.clock
        self.wake = context.wake

    async def on_manifest_received(self, msg: Message[ManifestReceived]) -> None:
        lease_id, group, version = msg.payload.lease_id, msg.payload.group, msg.payload.version
        now = self.clock()

        def received(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None:
                created = LeaseRecord(lease_id=lease_id, group=group, version=version)
                return stamped(created, self.clock, due=now)
            if before.state in ("closing", "closed"):
                log.warning("lease %s is %s: manifest %s ignored", lease_id, before.state, version)
                return None
            if service_names(group) != service_names(before.group):
                log.warning(
                    "lease %s: manifest %s renames services (%s → %s); ignored",
                    lease_id,
                    version,
                    ", ".join(service_names(before.group)),
                    ", ".join(service_names(group)),
                )
                return None
            after = before.with_manifest(group, version)
            if after is before:
                return None
            return stamped(after, self.clock, due=now)

        _, after = await self.records.update(str(lease_id), received, cause=msg.envelope)
        if after is not None:
            self.wake.set()

    async def on_lease_closed(self, msg: Message[LeaseClosed]) -> None:
        await self.close(msg.payload.lease_id, msg.envelope)

    async def close(self, lease_id: LeaseID, cause: Envelope[Any] | None = None) -> bool:
        """The lease is closed: queue its teardown (or give its reservation back, when it
        was never deployed here). False when there was nothing to do: its teardown is
        queued or done already, and it holds no reservation."""
        now = self.clock()

        def closing(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None or before.state in ("closing", "closed"):
                return None
            after = before.model_copy(update={"state": "closing", "retries": 0})
            return stamped(after, self.clock, due=now)

        before, after = await self.records.update(str(lease_id), closing, cause=cause)
        if before is None:  # never deployed here: only a reservation to give back
            return await self.reservations.release(str(lease_id.order_id), cause)
        if after is not None:
            self.wake.set()
        return after is not None
