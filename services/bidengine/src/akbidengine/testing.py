"""Test helpers: the bid engine as a subprocess, and an in-memory chain for unit tests.

``BidEngineProcess`` runs ``python -m akbidengine`` on a free port with fast timings;
``MemoryChain`` answers :class:`~akbidengine.adapters.chain.ChainQueries` from dicts;
``HELM_PRICE_SCRIPT`` is Akash's Helm price script, run with the AKT price ``akt_price`` seeds.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from akbidengine.adapters.chain import ProviderRecord
from akchain.models import Bid, Order
from akservice.testing import RuntimeProcess
from aktypes.ids import BidID, OrderID


class BidEngineProcess(RuntimeProcess):
    def __init__(
        self,
        *,
        redis_url: str,
        api: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        env = {
            "AP_API": api,
            "AP_BIDENGINE_STATUS_INTERVAL": "500ms",
            "AP_BID_PRICE_CPU_SCALE": "0.001",
            **(extra_env or {}),
        }
        super().__init__(
            "akbidengine", "bidengine", redis_url=redis_url, log_path=log_path, env=env
        )


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

    async def open_bids(self, provider: str) -> list[Bid]:
        return [b for b in self.bids.values() if b.state == "open" and b.id.provider == provider]

    async def provider(self, address: str) -> ProviderRecord:  # noqa: ARG002 - one provider here
        return self.record


# -- Akash's Helm price script ----------------------------------------------------------------

HELM_PRICE_SCRIPT = (
    Path(__file__).parents[2] / "tests" / "data" / "helm-charts" / "price_script_generic.sh"
)
"""Akash's ``price_script_generic.sh``, unchanged (its README says from where)."""
AKT_PRICE_CACHE = Path("/tmp/aktprice.cache")  # noqa: S108 - the script's own, fixed path


@contextlib.contextmanager
def akt_price(usd: str) -> Iterator[None]:
    """While the block runs, the Helm script reads ``usd`` as the AKT price: its cache file,
    written fresh (the script then calls no API). The cache is one file for the machine, so
    the block holds a lock that other tests seeding it wait for."""
    with (AKT_PRICE_CACHE.parent / "aktprice.cache.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            AKT_PRICE_CACHE.write_text(usd + "\n")
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
