"""Prometheus metrics of the inventory operator (``provider_inventory_operator_*``; the
cluster service's ``provider_inventory_*`` are its reservations, not the nodes)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

NODES = Gauge(
    "provider_inventory_operator_nodes", "Nodes seen, by state (offered or excluded)", ["state"]
)
GPUS = Gauge(
    "provider_inventory_operator_gpus",
    "GPU units offered, by vendor and model, and whether the registry knows the model",
    ["vendor", "model", "known"],
)
UNKNOWN_GPUS = Gauge(
    "provider_inventory_operator_unknown_gpus",
    "GPU units whose product the registry lacks (offered under a derived name)",
    ["product"],
)
ALLOCATABLE = Gauge(
    "provider_inventory_operator_allocatable",
    "What the offered nodes offer (cpu in millicpu, bytes, GPU units)",
    ["quantity"],
)
ALLOCATED = Gauge(
    "provider_inventory_operator_allocated",
    "What pods on the offered nodes take (cpu in millicpu, bytes, GPU units)",
    ["quantity"],
)
STORAGE = Gauge(
    "provider_inventory_operator_storage_bytes",
    "Persistent storage pools: capacity and what claims use",
    ["storage_class", "quantity"],
)
GENERATION = Gauge("provider_inventory_operator_generation", "Generation last published")
PUBLISHED = Counter("provider_inventory_operator_published", "Inventory changes published")
LABEL_WRITES = Counter(
    "provider_inventory_operator_label_writes", "Node label patches, by result", ["result"]
)
PROBLEMS = Counter(
    "provider_inventory_operator_problems", "GPUs or labels that could not be offered (new ones)"
)
