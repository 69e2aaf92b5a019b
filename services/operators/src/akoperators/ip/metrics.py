"""The IP operator's metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

RECONCILES = Counter(
    "provider_ip_operator_reconciles", "ProviderLeasedIPs handled, by outcome", ["result"]
)
POOL = Gauge("provider_ip_operator_pool", "Leased addresses, by state", ["state"])
