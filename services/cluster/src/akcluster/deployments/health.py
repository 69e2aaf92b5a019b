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

from akbus import BusTx
from akcluster import metrics
from akcluster.deployments.context import Context
from akcluster.deployments.ports import LeaseStatus
from akcluster.domain.leases import LeaseRecord
from akcluster.errors import LeaseNotFound, Unavailable
from aktypes.events import BroadcastTx, CloseBid, DeploymentHealth, LeaseClosedReason
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

            await self.records.update(record.lease_id, healthy)
            return
        metrics.MONITOR.labels("down").inc()
        message = _unhealthy_message(record, status, failing)

        def unhealthy(
            before: LeaseRecord | None, tx: BusTx
        ) -> tuple[LeaseRecord | None, float | None]:
            if before is None or before.state != "deployed":
                return None, None
            after = before.model_copy(update={"failures": before.failures + 1})
            after = judge_unhealthy(after, message, tx, self.monitor.max_retries)
            return after, now + self.monitor.after_failure()

        await self.records.update(record.lease_id, unhealthy)

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

        await self.records.update(record.lease_id, again)


def judge_unhealthy(record: LeaseRecord, message: str, tx: BusTx, max_retries: int) -> LeaseRecord:
    """One more failure: report it, and past ``max_retries`` close the lease (once)."""
    if record.failures > max_retries and not record.close_sent:
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
                msgs=[CloseBid(bid_id=record.lease_id.bid_id, reason=LeaseClosedReason.UNSTABLE)],
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
