"""What the cluster reads from the chain, through the node's REST API (``AP_API``).

The provider's on-chain attributes, for the capabilities check; and its leases and bids,
for the reconciliation with the chain (:mod:`akcluster.reconcile`). A node that cannot
answer, or answers something unreadable, is :class:`~akcluster.errors.ChainUnavailable`
(lists are read through every page or not at all: never half a list).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable

from akchain.errors import BadResponse, NodeUnavailable, NotFound
from akchain.lcd import LCDClient
from akchain.models import Bid, Lease, Order
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
        self,
        provider: str,
        leases: Iterable[LeaseID],
        orders: Iterable[str],
        listed: tuple[list[LeaseID], list[str]],
    ) -> ChainView:
        """The view of ``listed`` with each lease of ``leases`` looked up (its state), and
        each order of ``orders`` (its state and our bid's); ``""``: none on chain."""
        states: dict[LeaseID, str] = {}
        orders_: dict[str, str] = {}
        bids: dict[str, str] = {}
        try:
            for lease in leases:
                states[lease] = await self._state(self.lcd.lease(lease))
            for order in orders:
                order_id = OrderID.parse(order)
                orders_[order] = await self._state(self.lcd.order(order_id))
                bids[order] = await self._state(self.lcd.bid(order_id.bid(provider)))
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"a lease, order or bid of {provider}: {exc}") from exc
        active, open_bids = listed
        return ChainView(
            active_leases=active, open_bids=open_bids, leases=states, orders=orders_, bids=bids
        )

    @staticmethod
    async def _state(query: Awaitable[Lease | Order | Bid]) -> str:
        try:
            return (await query).state
        except NotFound:
            return ""
