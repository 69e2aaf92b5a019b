"""What the bid engine asks the chain: orders, its own bids, its attributes and audits.

:class:`ChainQueries` is the seam; :class:`LCDQueries` answers it over a node's REST API
(``AP_API``) and :class:`akbidengine.testing.MemoryChain` in memory, for unit tests and the
benchmark. Node errors become :class:`~akbidengine.errors.ChainUnavailable`, which leaves
the event that needed the answer pending for a later delivery.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from akbidengine.errors import ChainUnavailable
from akchain.errors import BadResponse, NodeUnavailable, NotFound
from akchain.lcd import LCDClient
from akchain.models import Bid, Order
from akchain.versions import LCD_PATHS
from aktypes.attributes import Attribute
from aktypes.ids import BidID, OrderID


@dataclass(frozen=True)
class ProviderRecord:
    """The provider's on-chain attributes and what each auditor signed for it."""

    attributes: tuple[Attribute, ...] = ()
    audited: Mapping[str, tuple[Attribute, ...]] = field(default_factory=dict)


class ChainQueries(Protocol):
    async def order(self, order_id: OrderID) -> Order | None:
        """The order, or None when the chain does not know it."""
        ...

    def open_orders(self) -> AsyncIterator[Order]:
        """Every open order, page by page."""
        ...

    async def bid(self, bid_id: BidID) -> Bid | None: ...

    async def open_bids(self, provider: str) -> list[Bid]:
        """Every open bid of ``provider``, read through every page."""
        ...

    async def provider(self, address: str) -> ProviderRecord: ...


class LCDQueries:
    """:class:`ChainQueries` over an :class:`akchain.lcd.LCDClient`."""

    def __init__(self, lcd: LCDClient) -> None:
        self.lcd = lcd

    async def order(self, order_id: OrderID) -> Order | None:
        try:
            return await self.lcd.order(order_id)
        except NotFound:
            return None
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"order {order_id}: {exc}") from exc

    async def open_orders(self) -> AsyncIterator[Order]:
        params = {"filters.state": "open"}
        try:
            async for item in self.lcd.pages(LCD_PATHS["orders"], "orders", params):
                yield Order.from_json(item)
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"open orders: {exc}") from exc

    async def bid(self, bid_id: BidID) -> Bid | None:
        try:
            return await self.lcd.bid(bid_id)
        except NotFound:
            return None
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"bid {bid_id}: {exc}") from exc

    async def open_bids(self, provider: str) -> list[Bid]:
        try:
            return await self.lcd.bids(provider=provider, state="open")
        except (NodeUnavailable, BadResponse, NotFound) as exc:  # NotFound: a list not served
            raise ChainUnavailable(f"open bids of {provider}: {exc}") from exc

    async def provider(self, address: str) -> ProviderRecord:
        try:
            provider = await self.lcd.provider(address)
            audits = await self.lcd.provider_attributes(address)
        except NotFound:
            return ProviderRecord()
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"provider {address}: {exc}") from exc
        return ProviderRecord(
            attributes=tuple(provider.attributes),
            audited={a.auditor: tuple(a.attributes) for a in audits},
        )
