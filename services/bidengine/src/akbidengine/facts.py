"""The provider's on-chain facts the filters need, kept fresh without a restart.

Attributes and auditors' signatures are read at start, again whenever the chain relay
reports a ``ProviderUpdated`` or ``AuditorAttributesChanged`` for this provider, and every
``AP_BID_ATTRIBUTES_REFRESH`` in case an event was missed. (The Go provider listens for
those events with the wrong types and only sees changes after a restart.)
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from akbidengine.adapters.chain import ChainQueries
from akbidengine.domain.filtering import ProviderFacts
from akbidengine.errors import ChainUnavailable
from aktypes.attributes import Attribute

log = logging.getLogger("akbidengine.facts")


class Facts:
    def __init__(self, chain: ChainQueries, address: str, required: tuple[Attribute, ...]) -> None:
        self.chain = chain
        self.address = address
        self.required = required
        self._current: ProviderFacts | None = None
        self._stale = asyncio.Event()
        self.error = ""
        self.low_balance: tuple[str, ...] = ()  # set from the balance service's status

    def current(self) -> ProviderFacts:
        if self._current is None:
            raise ChainUnavailable("the provider's attributes have not been read yet")
        if self.low_balance:
            return dataclasses.replace(self._current, low_balance=self.low_balance)
        return self._current

    async def refresh(self) -> ProviderFacts:
        record = await self.chain.provider(self.address)
        self._current = ProviderFacts(
            address=self.address,
            attributes=record.attributes,
            required=self.required,
            audited=dict(record.audited),
        )
        self.error = ""
        return self._current

    def invalidate(self) -> None:
        """Read the facts again soon (an event said they changed)."""
        self._stale.set()

    async def run(self, interval: float) -> None:
        """Refresh when invalidated and every ``interval``; a failure is retried in 5 s."""
        while True:
            wait = interval
            try:
                await self.refresh()
            except ChainUnavailable as exc:
                self.error = str(exc)
                log.warning("could not read the provider's attributes", extra={"error": str(exc)})
                wait = 5.0
            self._stale.clear()
            try:
                async with asyncio.timeout(wait):
                    await self._stale.wait()
            except TimeoutError:
                pass
