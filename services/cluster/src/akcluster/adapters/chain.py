"""The provider's on-chain attributes, read through the node's REST API (``AP_API``).

The capabilities check is the cluster's only use of the chain; a node that cannot answer
is :class:`~akcluster.errors.ChainUnavailable`, and the check keeps what it read last.
"""

from __future__ import annotations

from akchain.errors import BadResponse, NodeUnavailable, NotFound
from akchain.lcd import LCDClient
from akcluster.errors import ChainUnavailable
from aktypes.attributes import Attribute


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
