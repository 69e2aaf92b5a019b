"""Prometheus metrics of the manifest service (Akash's gauge names, with true values).

Akash sets both gauges to its number of deployment managers; here ``provider_manifest_manager``
counts deployments with an accepted manifest and ``provider_order_watchdog`` leases waiting
for one. ``provider_manifest_submissions_total{result}`` is ours: ``accepted`` or the
rejection's code.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

MANAGERS = Gauge("provider_manifest_manager", "Deployments with an accepted manifest")
WATCHDOGS = Gauge("provider_order_watchdog", "Leases won and waiting for their manifest")
SUBMISSIONS = Counter("provider_manifest_submissions", "Manifests submitted, by result", ["result"])
TIMEOUTS = Counter(
    "provider_manifest_timeouts", "Leases whose bid was closed for want of a manifest"
)
