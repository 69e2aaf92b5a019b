"""The leased-IP capacity from the IP operator (``AP_CLUSTER_IP_OPERATOR``).

The operator serves its pool's use at ``GET /v1/pool``; the cluster reads it every
``AP_CLUSTER_IP_OPERATOR_INTERVAL`` and offers as many leased IPs as the pool has addresses.
An operator that does not answer leaves the last capacity in place and is logged: unlike
Akash's provider, where a hung IP operator stopped every bid (support#129), only leases that
ask for IPs depend on it, and before its first answer none are offered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import aiohttp

log = logging.getLogger("akcluster.ip_pool")


class IPPool:
    def __init__(self, url: str, on_capacity: Callable[[int], None]) -> None:
        self.url = url.rstrip("/") + "/v1/pool"
        self.on_capacity = on_capacity
        self.capacity: int | None = None
        self.error = ""

    async def read(self, session: aiohttp.ClientSession) -> None:
        try:
            async with session.get(self.url) as response:
                response.raise_for_status()
                capacity = int((await response.json())["capacity"])
        except (aiohttp.ClientError, TimeoutError, KeyError, TypeError, ValueError) as exc:
            error = str(exc) or type(exc).__name__
            if not self.error:
                log.warning("the IP operator at %s does not answer: %s", self.url, error)
            self.error = error
            return
        if self.error:
            log.info("the IP operator at %s answers again", self.url)
        self.error = ""
        if capacity != self.capacity:
            log.info("leased IPs: %d address(es) in the IP operator's pool", capacity)
            self.capacity = capacity
            self.on_capacity(capacity)

    async def run(self, interval: float) -> None:
        timeout = aiohttp.ClientTimeout(total=min(interval, 5.0))
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                await self.read(session)
                await asyncio.sleep(interval)
