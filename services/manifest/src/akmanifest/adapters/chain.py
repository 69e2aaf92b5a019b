"""What the manifest service asks the chain: a deployment with our leases on it, a lease,
the host of the provider's own host URI (no tenant may accept it as a hostname).

:class:`ChainQueries` is the seam; :class:`LCDQueries` answers it over a node's REST API
(``AP_API``), :class:`akmanifest.testing.MemoryChain` from dicts. :class:`CachedChain`
keeps each deployment's answer for ``AP_MANIFEST_CACHE_AGE`` (Akash's
``--cached-result-max-age``): repeated submissions of one manifest cost no queries, and the
handlers forget a deployment when an event says it changed. Node errors become
:class:`~akmanifest.errors.ChainUnavailable`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

from akchain.errors import BadResponse, NodeUnavailable, NotFound
from akchain.lcd import LCDClient
from akmanifest.domain.checks import DeploymentFacts
from akmanifest.errors import ChainUnavailable
from aktypes.ids import DeploymentID, LeaseID


class ChainQueries(Protocol):
    async def deployment(self, deployment_id: DeploymentID) -> DeploymentFacts | None:
        """The deployment with this provider's active leases on it; None when unknown."""
        ...

    async def lease_state(self, lease_id: LeaseID) -> str | None:
        """``active``, ``closed``… or None when the chain does not know the lease."""
        ...

    async def provider_host(self) -> str:
        """The lower-cased host of this provider's on-chain host URI ("" when none)."""
        ...


class LCDQueries:
    """:class:`ChainQueries` over an :class:`akchain.lcd.LCDClient`, for one provider."""

    def __init__(self, lcd: LCDClient, provider: str) -> None:
        self.lcd = lcd
        self.provider = provider

    async def deployment(self, deployment_id: DeploymentID) -> DeploymentFacts | None:
        try:
            found = await self.lcd.deployment(deployment_id)
            leases = await self.lcd.leases(
                owner=deployment_id.owner,
                dseq=deployment_id.dseq,
                provider=self.provider,
                state="active",
            )
        except NotFound:
            return None
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"deployment {deployment_id}: {exc}") from exc
        return DeploymentFacts(
            deployment_id=found.id,
            state=found.state,
            hash=found.hash,
            groups=tuple(sorted(((g.id.gseq, g.spec) for g in found.groups), key=_gseq)),
            leases=tuple(sorted(lease.id for lease in leases)),
        )

    async def lease_state(self, lease_id: LeaseID) -> str | None:
        try:
            return (await self.lcd.lease(lease_id)).state
        except NotFound:
            return None
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"lease {lease_id}: {exc}") from exc

    async def provider_host(self) -> str:
        try:
            uri = (await self.lcd.provider(self.provider)).host_uri
        except NotFound:
            return ""
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"provider {self.provider}: {exc}") from exc
        try:
            return (urlsplit(uri).hostname or "").lower()
        except ValueError:  # not a URL: nothing a hostname could equal
            return ""


def _gseq(item: tuple[int, object]) -> int:
    return item[0]


class CachedChain:
    """:class:`ChainQueries` that reuses a deployment's answer for ``max_age`` seconds."""

    def __init__(
        self,
        inner: ChainQueries,
        max_age: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.max_age = max_age
        self.clock = clock
        self._cache: dict[str, tuple[float, DeploymentFacts]] = {}
        self._host: tuple[float, str] | None = None

    async def deployment(
        self, deployment_id: DeploymentID, *, fresh: bool = False
    ) -> tuple[DeploymentFacts | None, bool]:
        """The deployment's facts and whether they came from the cache."""
        key = str(deployment_id)
        now = self.clock()
        cached = self._cache.get(key)
        if cached is not None and not fresh and now - cached[0] < self.max_age:
            return cached[1], True
        facts = await self.inner.deployment(deployment_id)
        if facts is None:
            self._cache.pop(key, None)
        elif self.max_age > 0:
            self._cache[key] = (now, facts)
            self._expire(now)
        return facts, False

    async def lease_state(self, lease_id: LeaseID) -> str | None:
        return await self.inner.lease_state(lease_id)

    async def provider_host(self) -> str:
        """The provider's host, read again once ``max_age`` has passed (at least a minute:
        a provider's host URI rarely changes)."""
        now = self.clock()
        if self._host is None or now - self._host[0] >= max(self.max_age, 60.0):
            self._host = (now, await self.inner.provider_host())
        return self._host[1]

    def invalidate(self, deployment_id: DeploymentID) -> None:
        self._cache.pop(str(deployment_id), None)

    def _expire(self, now: float) -> None:
        if len(self._cache) > 1024:
            for key, (at, _) in list(self._cache.items()):
                if now - at >= self.max_age:
                    del self._cache[key]
