"""Prometheus metrics of the cluster service (Akash's ``provider_inventory_*`` names)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

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
