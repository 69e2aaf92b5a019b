"""Prometheus metrics of the balance service."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

LEASES = Gauge("provider_balance_leases", "Leases whose escrow is monitored")
CHECKS = Counter("provider_balance_checks", "Escrow checks made")
WITHDRAWALS = Counter("provider_balance_withdrawals", "Lease withdrawals, by outcome", ["outcome"])
SKIPPED = Counter(
    "provider_balance_withdrawals_skipped", "Periodic withdrawals not worth their fee or minimum"
)
EARNED = Gauge("provider_balance_earned", "Collected by withdrawals, per denom", ["denom"])
UNPAID = Gauge(
    "provider_balance_unpaid", "Owed by the watched leases as of their last check", ["denom"]
)
SWEPT = Gauge("provider_balance_swept", "Sent to the cold address, per denom", ["denom"])
BALANCE = Gauge("provider_balance_account", "The provider account's balance, per denom", ["denom"])
BELOW_MINIMUM = Gauge(
    "provider_balance_below_minimum", "1 while the balance is below AP_MINIMUM_BALANCE", ["denom"]
)
