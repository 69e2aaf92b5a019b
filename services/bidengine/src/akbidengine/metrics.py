"""Prometheus metrics of the bid engine (Akash's ``provider_bid*`` names and labels)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

BID = Counter("provider_bid", "Bids opened and closed", ["action", "result"])
SHOULD_BID = Counter("provider_should_bid", "Orders screened", ["result"])
ORDER_COMPLETE = Counter("provider_order_complete", "How orders with a bid ended", ["result"])
RESERVATION = Counter("provider_reservation", "Reservation requests", ["action", "result"])
ORDERS = Gauge("provider_order_manager", "Orders with a bid in play")
PRICING_DURATION = Histogram(
    "provider_bid_pricing_duration",
    "Time to price a bid, seconds",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 10),
)
RESERVATION_DURATION = Histogram(
    "provider_reservation_duration",
    "Time to reserve resources, seconds",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 10),
)
