"""Test helpers: the bid engine as a subprocess, and an in-memory chain for unit tests.

``BidEngineProcess`` runs ``python -m akbidengine`` on a free port with fast timings;
``MemoryChain`` answers :class:`~akbidengine.adapters.chain.ChainQueries` from dicts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from akbidengine.adapters.chain import ProviderRecord
from akchain.models import Bid, Order
from akservice.testing import ServiceProcess, free_port, http_ready, http_status
from aktypes.ids import BidID, OrderID


class BidEngineProcess(ServiceProcess):
    def __init__(
        self,
        *,
        redis_url: str,
        api: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.health_port = free_port()
        env = {
            "REDIS_URL": redis_url,
            "AP_API": api,
            "AP_BIDENGINE_HEALTH_LISTEN": f"127.0.0.1:{self.health_port}",
            "AP_BIDENGINE_STATUS_INTERVAL": "500ms",
            "AP_BID_PRICE_CPU_SCALE": "0.001",
            "AP_LOG_FORMAT": "json",
            "AKBUS_CLAIM_IDLE_S": "1",
            "AKBUS_CLAIM_INTERVAL_S": "0.2",
            "AKBUS_RETRY_INITIAL_S": "0.05",
            "AKBUS_RETRY_MAX_S": "0.5",
            **(extra_env or {}),
        }
        inherited = {
            k: v for k, v in os.environ.items() if not k.startswith(("AP_", "AKBUS_", "REDIS_"))
        }
        super().__init__(
            [sys.executable, "-m", "akbidengine"],
            log_path=log_path,
            ready=http_ready(f"{self.health_url}/readyz"),
            env={**inherited, **env},
            name="bidengine",
        )

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.health_port}"

    def readiness(self) -> tuple[int, Any]:
        return http_status(f"{self.health_url}/readyz")


@dataclass
class MemoryChain:
    """Orders, bids and the provider's record in memory."""

    orders: dict[str, Order] = field(default_factory=dict)
    bids: dict[str, Bid] = field(default_factory=dict)
    record: ProviderRecord = field(default_factory=ProviderRecord)

    async def order(self, order_id: OrderID) -> Order | None:
        return self.orders.get(str(order_id))

    async def open_orders(self) -> AsyncIterator[Order]:
        for order in list(self.orders.values()):
            if order.state == "open":
                yield order

    async def bid(self, bid_id: BidID) -> Bid | None:
        return self.bids.get(str(bid_id))

    async def provider(self, address: str) -> ProviderRecord:  # noqa: ARG002 - one provider here
        return self.record
