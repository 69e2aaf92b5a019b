"""What the parts of the deployment managers share: one :class:`Context` (the records, the
cluster, the reservations, the names' registries, how objects are built, the worker's
wake-up) and the health monitor's timing (:class:`MonitorPolicy`, Akash's
``AP_MONITOR_*``)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from akcluster.deployments.ports import Backend
from akcluster.deployments.records import LeaseRecords
from akcluster.domain.objects import BuildSettings
from akcluster.domain.placement import CommitLevels
from akcluster.registry import Registry
from akcluster.reservations import Reservations


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


def backoff(retries: int) -> float:
    """Seconds before a step that could not reach Kubernetes runs again."""
    return float(min(2 ** min(retries, 6), 60))


@dataclass(frozen=True)
class Context:
    """What every part of the deployment managers works with."""

    records: LeaseRecords
    backend: Backend
    reservations: Reservations
    hostnames: Registry
    endpoints: Registry
    build: BuildSettings
    levels: CommitLevels
    monitor: MonitorPolicy
    blocked: list[str]  # hostnames no lease may claim
    activate_reservations: bool  # a deployed lease's reservation turns active
    clock: Callable[[], float]
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # a step is due now
