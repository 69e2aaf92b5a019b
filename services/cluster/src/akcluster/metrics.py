"""Prometheus metrics of the cluster service (Akash's ``provider_inventory_*`` names)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter(
    "provider_inventory_requests",
    "Inventory requests handled",
    ["action", "result"],
)
RESERVATIONS = Gauge(
    "provider_inventory_reservations_total",
    "Reservations and what pending ones hold",
    ["classification", "quantity"],
)
ALLOCATABLE = Gauge(
    "provider_inventory_allocatable_total", "What the cluster can run", ["quantity"]
)
AVAILABLE = Gauge(
    "provider_inventory_available_total",
    "What is left for new reservations",
    ["quantity"],
)
DEPLOYMENT = Counter(
    "provider_deployment",
    "Deployment manager actions (deploy, teardown) by result",
    ["action", "result"],
)
DEPLOY_SECONDS = Histogram(
    "provider_deployment_apply_seconds",
    "Time to apply a lease's objects",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
MONITOR = Counter(
    "provider_deployment_monitor_health",
    "Health checks of deployed leases: up, down, err (Kubernetes unavailable), failed",
    ["state"],
)
MANAGERS = Gauge("provider_deployment_manager", "Leases with a deployment manager")
RECOVERED = Counter(
    "provider_deployment_recovered",
    "Leases found at start, by what recovery did: unchanged (ready, nothing written), "
    "reapplied (an object missing or changed), queued (not deployed yet), adopted (a "
    "Manifest resource without a record), orphans (a lease namespace without either)",
    ["result"],
)
CAPABILITY_MISMATCHES = Gauge(
    "provider_capability_mismatches",
    "Differences between the inventory and the provider's on-chain capability attributes: "
    "offered_not_advertised (orders for it get no bid), advertised_not_offered (bids for it "
    "cannot be placed); kind storage, gpu or ip_lease",
    ["direction", "kind"],
)
