"""Prometheus metrics of the bus (default registry; labels say which stream and group)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

PUBLISHED = Counter("akbus_published", "Entries published", ["stream", "type"])
HANDLED = Counter("akbus_handled", "Entries handled and acknowledged", ["stream", "group", "type"])
SKIPPED = Counter(
    "akbus_skipped", "Entries acknowledged without a handler for their type", ["stream", "group"]
)
FAILED = Counter(
    "akbus_failed",
    "Handler attempts that failed (retryable, permanent or unexpected)",
    ["stream", "group", "type", "error"],
)
DEAD_LETTERED = Counter(
    "akbus_dead_lettered", "Entries moved to a dead-letter stream", ["stream", "group"]
)
CLAIMED = Counter("akbus_claimed", "Entries taken over from idle consumers", ["stream", "group"])
CONSUMERS_REMOVED = Counter(
    "akbus_consumers_removed",
    "Consumers deleted from a group after a long idle time with nothing pending",
    ["stream", "group"],
)
PENDING = Gauge("akbus_pending", "Entries delivered and not acknowledged", ["stream", "group"])
LAG = Gauge("akbus_lag", "Entries not yet delivered to the group", ["stream", "group"])
HANDLE_SECONDS = Histogram(
    "akbus_handle_seconds",
    "Time spent in handlers",
    ["stream", "group"],
    buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30),
)
RECONNECTS = Counter(
    "akbus_reconnects", "Redis operations retried after losing the connection", ["where"]
)
DURABLE = Counter(
    "akbus_durable_commits",
    "Durable commits by outcome: replicated, timed_out (on the primary only), no_replica",
    ["outcome"],
)
