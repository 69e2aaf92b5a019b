"""Prometheus metrics of the chain relay."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

RELAY_HEIGHT = Gauge("akchainsvc_height", "Last height whose events are published")
NODE_HEIGHT = Gauge("akchainsvc_node_height", "Latest height the node reported")
EVENTS_PUBLISHED = Counter("akchainsvc_events_published_total", "Chain events published", ["type"])
TXS = Counter("akchainsvc_txs_total", "Transaction commands by outcome", ["outcome"])
SEQUENCE_RESYNCS = Counter("akchainsvc_sequence_resyncs_total", "Account sequence re-reads")
PENDING_TXS = Gauge("akchainsvc_pending_txs", "Transaction commands being worked on")
