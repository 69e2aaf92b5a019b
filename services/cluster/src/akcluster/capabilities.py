"""The capabilities check, continuous: the inventory against the provider's on-chain
``capabilities/*`` attributes, on the cluster's status and its metric.

The inventory side is the one reservations place on (the inventory operator's, or the
nodes file) and the IP operator's pool; the status is computed again within moments of
either changing. The chain side, the provider's attributes, is read at start, every
``AP_CLUSTER_CAPABILITIES_INTERVAL``, and soon after the chain relay reports a
``ProviderUpdated`` for this provider; whatever is read wakes the status too. The
provider's address is ``AP_PROVIDER_ADDRESS`` or the one in the chain relay's status; until
one is known, and while the node cannot answer, the check says why in ``error`` and keeps
what it read last. None of it holds the service back: a cluster without a relay or a node
is as ready as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from akbus import ConnectionLost, Message
from akcluster import metrics
from akcluster.adapters.chain import ProviderAttributes
from akcluster.domain.capabilities import offer_of
from akcluster.domain.inventory import Inventory
from akcluster.errors import ChainUnavailable
from akcluster.settings import ClusterSettings
from akservice import Runtime
from aktypes.attributes import Attribute
from aktypes.capabilities import capability_attributes, compare
from aktypes.events import CapabilitiesCheck, ChainStatus, ProviderUpdated

log = logging.getLogger("akcluster.capabilities")

DIRECTIONS = ("offered_not_advertised", "advertised_not_offered")
KINDS = ("storage", "gpu", "ip_lease")
RETRY_S = 5.0  # after a failed read


class Capabilities:
    """The provider's attributes as last read, and the check against an inventory."""

    def __init__(
        self, rt: Runtime[ClusterSettings], chain: ProviderAttributes, wake: asyncio.Event
    ) -> None:
        self.rt, self.chain, self.wake = rt, chain, wake
        self.provider = rt.settings.provider_address
        self.attributes: tuple[Attribute, ...] | None = None  # None: never read
        self.error = "the provider's attributes have not been read yet"
        self._stale = asyncio.Event()
        self._reported: frozenset[str] = frozenset()

    async def _address(self) -> str:
        if self.provider:
            return self.provider
        envelope = await self.rt.bus.status("chain")
        payload = envelope.payload if envelope is not None else None
        if isinstance(payload, ChainStatus) and payload.provider:
            self.provider = payload.provider
        return self.provider

    async def refresh(self) -> None:
        """Read the provider's attributes once; ``error`` says why not."""
        address = await self._address()
        if not address:
            self.error = (
                "the provider's address is not known yet (AP_PROVIDER_ADDRESS, or the "
                "chain relay's status)"
            )
            return
        found = await self.chain.read(address)
        self.error = "" if found is not None else f"provider {address} is not on chain"
        attributes = found or ()
        if attributes != self.attributes:
            self.attributes = attributes
            self.wake.set()

    async def on_provider_updated(self, msg: Message[ProviderUpdated]) -> None:
        if msg.payload.owner == self.provider:
            self._stale.set()

    async def run(self, interval: float) -> None:
        """Refresh every ``interval`` and soon after an update; a failure again in 5 s."""
        while True:
            wait = interval
            before = self.error
            try:
                await self.refresh()
            except (ChainUnavailable, ConnectionLost) as exc:
                self.error = str(exc)
                wait = min(RETRY_S, interval)
            if self.error != before:
                self.wake.set()
                if self.error:
                    log.warning("capabilities check: %s", self.error)
            if self.error and self.attributes is None:
                wait = min(RETRY_S, interval)
            self._stale.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._stale.wait()

    def check(self, inventory: Inventory, ips: int) -> CapabilitiesCheck:
        """The check of ``inventory`` with ``ips`` leased IPs, its metric set, each new
        difference logged once."""
        offer = offer_of(inventory, ips)
        mismatches = compare(offer, self.attributes) if self.attributes is not None else []
        counts = {(d, k): 0 for d in DIRECTIONS for k in KINDS}
        for m in mismatches:
            counts[(m.direction, m.kind)] += 1
        for (direction, kind), count in counts.items():
            metrics.CAPABILITY_MISMATCHES.labels(direction, kind).set(count)
        reported = frozenset(m.message for m in mismatches)
        for message in sorted(reported - self._reported):
            log.warning("capabilities check: %s", message)
        self._reported = reported
        return CapabilitiesCheck(
            checked=self.attributes is not None,
            provider=self.provider,
            error=self.error,
            mismatches=mismatches,
            advertise=capability_attributes(offer),
        )


def disabled() -> CapabilitiesCheck:
    return CapabilitiesCheck(error="the capabilities check is off (AP_CLUSTER_CAPABILITIES_CHECK)")
