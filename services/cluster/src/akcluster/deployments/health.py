"""The health monitor of a deployed lease, and the failure budget it shares with refused
deploys.

A check reads the lease's status: every service available with its full count is healthy;
otherwise one more failure, and after ``AP_MONITOR_MAX_RETRIES`` in a row a ``CloseBid``
(reason unstable), sent once. A check that cannot reach Kubernetes judges nothing: an API
outage never closes a lease. A lease whose namespace or Manifest resource is gone is
deployed again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from akbus import Change
from akcluster import metrics
from akcluster.deployments.context import Context
from akcluster.deployments.ports import LeaseStatus
from akcluster.deployments.records import stamped
from akcluster.domain.leases import LeaseRecord
from akcluster.errors import LeaseNotFound, Unavailable
from aktypes.events import BroadcastTx, CloseBid, DeploymentHealth, LeaseClosedReason, Payload
from aktypes.events.streams import CHAIN_TX, CLUSTER_EVENTS

log = logging.getLogger("akcluster.deployments")


class Health:
    """The health check of one deployed lease."""

    def __init__(self, context: Context) -> None:
        self.records = context.records
        self.backend = context.backend
        self.build = context.build
        self.monitor = context.monitor
        self.clock = context.clock

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
            await self.records.reschedule(
                str(record.lease_id), self.clock() + self.monitor.retry_period
            )
            return
        now = self.clock()
        if _healthy(record, status):
            metrics.MONITOR.labels("up").inc()

            def healthy(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
                if before is None or before.state != "deployed":
                    return None
                publish: list[tuple[str, Payload]] = []
                if before.health != "deployed":
                    publish.append(
                        (
                            CLUSTER_EVENTS,
                            DeploymentHealth(lease_id=record.lease_id, state="deployed"),
                        )
                    )
                after = before.model_copy(
                    update={"health": "deployed", "failures": 0, "message": ""}
                )
                due = now + self.monitor.after_success()
                return stamped(after, self.clock, due=due, publish=publish)

            await self.records.update(str(record.lease_id), healthy)
            return
        metrics.MONITOR.labels("down").inc()
        message = _unhealthy_message(record, status, failing)

        def unhealthy(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None or before.state != "deployed":
                return None
            after = before.model_copy(update={"failures": before.failures + 1})
            after, publish = judge_unhealthy(after, message, self.monitor.max_retries)
            due = now + self.monitor.after_failure()
            return stamped(after, self.clock, due=due, publish=publish)

        await self.records.update(str(record.lease_id), unhealthy)

    async def _objects_lost(self, record: LeaseRecord) -> None:
        log.warning(
            "lease %s: its objects are gone from Kubernetes; deploying again", record.lease_id
        )
        now = self.clock()

        def again(before: LeaseRecord | None) -> Change[LeaseRecord] | None:
            if before is None or before.state != "deployed":
                return None
            after = before.model_copy(update={"state": "deploying", "applied": ""})
            return stamped(after, self.clock, due=now)

        await self.records.update(str(record.lease_id), again)


def judge_unhealthy(
    record: LeaseRecord, message: str, max_retries: int
) -> tuple[LeaseRecord, list[tuple[str, Payload]]]:
    """One more failure: the record, and the events that report it; past ``max_retries`` it
    closes the lease (once)."""
    if record.failures > max_retries and not record.close_sent:
        log.error(
            "lease %s: unhealthy %d times in a row (%s); closing the lease as unstable",
            record.lease_id,
            record.failures,
            message,
        )
        metrics.MONITOR.labels("failed").inc()
        close = BroadcastTx(
            key=f"close-bid/unstable/{record.lease_id}",
            msgs=[CloseBid(bid_id=record.lease_id.bid_id, reason=LeaseClosedReason.UNSTABLE)],
        )
        failed = DeploymentHealth(lease_id=record.lease_id, state="failed", message=message)
        after = record.model_copy(
            update={"health": "failed", "close_sent": True, "message": message}
        )
        return after, [(CHAIN_TX, close), (CLUSTER_EVENTS, failed)]
    publish: list[tuple[str, Payload]] = []
    if record.health != "pending":
        pending = DeploymentHealth(lease_id=record.lease_id, state="pending", message=message)
        publish.append((CLUSTER_EVENTS, pending))
    after = record.model_copy(
        update={"health": "failed" if record.close_sent else "pending", "message": message}
    )
    return after, publish


def _healthy(record: LeaseRecord, status: LeaseStatus) -> bool:
    for name, count in record.services():
        service = status.services.get(name)
        if service is None or service.available < count:
            return False
    return True


def _unhealthy_message(record: LeaseRecord, status: LeaseStatus, failing: Mapping[str, str]) -> str:
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
