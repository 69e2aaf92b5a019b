"""The HTTP session both node clients share: created on first use, closed with the client."""

from __future__ import annotations

from typing import Self

import aiohttp


class HTTPClient:
    """Base of the node's clients. Use as an async context manager or call :meth:`close`."""

    def __init__(
        self, base_url: str, *, session: aiohttp.ClientSession | None = None, timeout: float = 10.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._session = session
        self._own_session = session is None
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session
