"""What the services' reconciliation sweeps share: the loop and its metrics.

The cluster service and the bid engine each compare their state with the chain now and then
(``akcluster.reconcile``, ``akbidengine.reconcile``); both count their repairs in
``provider_reconcile_repairs_total{kind}`` and their sweeps in
``provider_reconcile_sweeps_total{result}``, defined once here so one interpreter can hold
both services (the command line, the tests).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from prometheus_client import Counter

REPAIRS = Counter(
    "provider_reconcile_repairs",
    "Repairs of the periodic comparison with the chain, by kind: lease_closed_deployed, "
    "deployment_without_record, reservation_without_bid (the cluster service), "
    "bid_open_order_closed (the bid engine)",
    ["kind"],
)
SWEEPS = Counter(
    "provider_reconcile_sweeps",
    "Sweeps of the comparison with the chain: done, or skipped (what it compares could not "
    "all be read)",
    ["result"],
)


async def keep_sweeping(
    sweep: Callable[[], Awaitable[object]],
    interval: float,
    sleep: Callable[[float], Awaitable[bool]],
    *,
    unreadable: tuple[type[BaseException], ...],
    log: logging.Logger,
) -> None:
    """Run ``sweep`` now and every ``interval`` until ``sleep`` says the process stops. A
    sweep that raises one of ``unreadable`` (a read failed: nothing was repaired) is skipped
    with one warning; any other failure is logged with its traceback and skipped too: a
    sweep is an audit, its failure must not stop the service."""
    while True:
        try:
            await sweep()
            SWEEPS.labels("done").inc()
        except unreadable as exc:
            SWEEPS.labels("skipped").inc()
            log.warning("reconciliation sweep skipped: %s", exc)
        except Exception:
            SWEEPS.labels("skipped").inc()
            log.exception("reconciliation sweep failed")
        if not await sleep(interval):
            return
