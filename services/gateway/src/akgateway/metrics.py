"""Prometheus metrics of the gateway, served on the runtime's health port (``/metrics`` of
``AP_GATEWAY_HEALTH_LISTEN``), not on the tenant-facing TLS port.

HTTP requests are counted and timed by prometheus-fastapi-instrumentator
(``provider_gateway_http_requests_total{handler,method,status}``,
``provider_gateway_http_request_duration_seconds``…, by route template), except ``GET
/status``, answered from memory ahead of the framework and counted by
``provider_gateway_status_served_total``; the rest are ours.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

TRUSTED_CERTIFICATES = Gauge(
    "provider_gateway_trusted_certificates",
    "On-chain certificates the TLS layer accepts client certificates from",
)
CERT_SYNC = Counter("provider_gateway_cert_sync", "Reads of the on-chain certificates", ["result"])
AUTH = Counter(
    "provider_gateway_auth",
    "Authentication of tenant requests (ok, none, refused, forbidden, unavailable)",
    ["result"],
)
BUS_REQUESTS = Counter(
    "provider_gateway_bus_requests",
    "Requests to other services over the bus, by command and outcome",
    ["command", "result"],
)
STATUS_SERVED = Counter("provider_gateway_status_served", "GET /status answered from memory")
LEASE_STATUS_SERVED = Counter(
    "provider_gateway_lease_status_served",
    "Lease statuses served (REST and gRPC), by source: memory (the cluster's confirmed "
    "watch) or cluster (asked over the bus)",
    ["source"],
)
WEBSOCKETS = Counter(
    "provider_gateway_websockets",
    "Lease websockets (logs, events, shell) by how they ended: an HTTP refusal's status "
    "or the close code",
    ["stream", "end"],
)
TLS_REFUSED = Counter(
    "provider_gateway_tls_refused",
    "TLS handshakes refused, by listener and OpenSSL's reason (e.g. client_certificate)",
    ["listener", "reason"],
)
RPC = Counter("provider_gateway_rpc", "gRPC ProviderRPC calls by method", ["method"])
BODY_REFUSED = Counter(
    "provider_gateway_body_refused",
    "Requests refused with 413 for a body over the limit, by listener",
    ["listener"],
)
CONNECTIONS_TIMED_OUT = Counter(
    "provider_gateway_connections_timed_out",
    "Connections closed for taking too long: handshake, headers, body (idle ones are not counted)",
    ["listener", "step"],
)
TENANT_LIMITED = Counter(
    "provider_gateway_tenant_limited",
    "Websockets refused with 429: the tenant held its limit of websockets or shells",
    ["stream"],
)
PUBLIC_CERTIFICATE_NOT_AFTER = Gauge(
    "provider_gateway_public_certificate_not_after",
    "When the public certificate served for the public hostnames expires (Unix time; 0: none)",
)
PUBLIC_CERTIFICATE_LOADS = Counter(
    "provider_gateway_public_certificate_loads",
    "Public certificates read from their files: loaded, or refused (the one served stays)",
    ["result"],
)
ACME_ORDERS = Counter(
    "provider_gateway_acme_orders", "ACME orders by outcome (issued, failed)", ["result"]
)
CERT_DAYS_LEFT = Gauge(
    "provider_gateway_certificate_days_left",
    "Days until the provider's certificate this gateway serves (the on-chain one) expires",
)
CERT_RENEWALS = Counter(
    "provider_gateway_certificate_renewals",
    "Steps of the provider's certificate renewal taken by this gateway: started, published, "
    "refused, revoked, revoke_refused",
    ["step"],
)
