"""What the cluster reads from the chain, through the node's REST API (``AP_API``).

The provider's on-chain attributes, for the capabilities check; and its leases and bids,
for the reconciliation with the chain (:mod:`akcluster.reconcile`). A node that cannot
answer, or answers something unreadable, is :class:`~akcluster.errors.ChainUnavailable`
(lists are read through every page or not at all: never half a list).
"""

from __future__ import annotations

from collections.abc import Iterable

from akchain.errors import BadResponse, NodeUnavailable, NotFound
from akchain.lcd import LCDClient
from akcluster.domain.reconcile import ChainView
from akcluster.errors import ChainUnavailable
from aktypes.attributes import Attribute
from aktypes.ids import LeaseID, OrderID


class ProviderAttributes:
    """Reads one provider's attributes; None when the chain has no such provider."""

    def __init__(self, lcd: LCDClient) -> None:
        self.lcd = lcd

    async def read(self, address: str) -> tuple[Attribute, ...] | None:
        try:
            provider = await self.lcd.provider(address)
        except NotFound:
            return None
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"provider {address}: {exc}") from exc
        return tuple(provider.attributes)


class ProviderMarket:
    """One provider's leases and bids, as the reconciliation reads them."""

    def __init__(self, lcd: LCDClient) -> None:
        self.lcd = lcd

    async def listed(self, provider: str) -> tuple[list[LeaseID], list[str]]:
        """The provider's active leases, and the orders it has an open bid on."""
        try:
            leases = await self.lcd.leases(provider=provider, state="active")
            bids = await self.lcd.bids(provider=provider, state="open")
        except (NodeUnavailable, BadResponse, NotFound) as exc:  # NotFound: a list not served
            raise ChainUnavailable(f"leases and bids of {provider}: {exc}") from exc
        return [lease.id for lease in leases], [str(bid.id.order_id) for bid in bids]

    async def looked_up(
        self, provider: str, orders: Iterable[str], listed: tuple[list[LeaseID], list[str]]
    ) -> ChainView:
        """The view of ``listed`` with each order of ``orders`` looked up: its state and
        our bid's (``""``: none on chain)."""
        states: dict[str, str] = {}
        bids: dict[str, str] = {}
        for order in orders:
            order_id = OrderID.parse(order)
            try:
                try:
                    states[order] = (await self.lcd.order(order_id)).state
                except NotFound:
                    states[order] = ""
                try:
                    bids[order] = (await self.lcd.bid(order_id.bid(provider))).state
                except NotFound:
                    bids[order] = ""
            except (NodeUnavailable, BadResponse) as exc:
                raise ChainUnavailable(f"order {order}: {exc}") from exc
        leases, open_bids = listed
        return ChainView(active_leases=leases, open_bids=open_bids, orders=states, bids=bids)
