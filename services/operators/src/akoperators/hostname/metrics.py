"""The hostname operator's metrics."""

from __future__ import annotations

import prometheus_client

RECONCILES = prometheus_client.Counter(
    "provider_hostname_operator_reconciles",
    "ProviderHosts handled, by outcome",
    ["result"],
)
