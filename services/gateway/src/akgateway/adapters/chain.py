"""What the gateway asks the chain: certificates (every one, or one owner's by serial), an
account's public key (to check its tokens) and the provider's host URI, over the node's REST
API (``AP_API``).

:class:`CertificateLookup` caches each answer for ``AP_GATEWAY_CERT_CACHE_TTL`` so a busy
tenant does not cost a query per request, while a revocation still counts within seconds.
:class:`AccountKeys` keeps a key once found (an account's key never changes). Node errors
become :class:`~akgateway.errors.ChainUnavailable`.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import AsyncIterator
from typing import Any

from cryptography import x509

from akchain.errors import BadResponse, NodeUnavailable, NotFound
from akchain.lcd import LCDClient
from akchain.versions import LCD_PATHS
from akgateway.domain.certificates import OnChainCertificate, common_name, der_of_pem
from akgateway.errors import ChainUnavailable

PATH = LCD_PATHS["certificates"]


def _record(item: dict[str, Any], owner: str = "") -> OnChainCertificate:
    body = item.get("certificate") or {}
    try:
        pem = base64.b64decode(body.get("cert") or "")
    except (binascii.Error, ValueError):
        pem = b""
    der = der_of_pem(pem) if pem else b""
    if not owner and der:  # a list without an owner filter: the chain names it in the CN
        owner = common_name(x509.load_der_x509_certificate(der))
    return OnChainCertificate(
        owner=owner, serial=str(item.get("serial", "")), state=str(body.get("state", "")), der=der
    )


class ChainCertificates:
    """Every certificate on chain, and the count the node reports."""

    def __init__(self, lcd: LCDClient) -> None:
        self.lcd = lcd

    async def count(self) -> int | None:
        """How many certificates the chain holds (None: the node does not say)."""
        try:
            body = await self.lcd.get(
                PATH, {"pagination.limit": 1, "pagination.count_total": "true"}
            )
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"certificates: {exc}") from exc
        total = (body.get("pagination") or {}).get("total")
        try:
            return int(total) if total not in (None, "") else None
        except (TypeError, ValueError):
            return None

    async def every(self) -> AsyncIterator[OnChainCertificate]:
        """Each certificate, page by page (valid and revoked ones)."""
        try:
            async for item in self.lcd.pages(PATH, "certificates"):
                yield _record(item)
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"certificates: {exc}") from exc


class CertificateLookup:
    """An owner's certificate by serial, cached for ``ttl`` seconds (absent ones too)."""

    def __init__(self, lcd: LCDClient, ttl: float, *, max_entries: int = 10_000) -> None:
        self.lcd = lcd
        self.ttl = ttl
        self.max_entries = max_entries
        self._cache: dict[tuple[str, str], tuple[float, list[OnChainCertificate]]] = {}

    async def find(self, owner: str, serial: str) -> list[OnChainCertificate]:
        key = (owner, serial)
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        params = {"filter.owner": owner, "filter.serial": serial}
        try:
            found = [
                _record(item, owner) async for item in self.lcd.pages(PATH, "certificates", params)
            ]
        except NotFound:
            found = []
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"certificate {serial} of {owner}: {exc}") from exc
        if self.ttl > 0:
            if len(self._cache) >= self.max_entries:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                if len(self._cache) >= self.max_entries:
                    self._cache.clear()
            self._cache[key] = (now + self.ttl, found)
        return found


class AccountKeys:
    """Accounts' public keys: kept once known, an unknown one asked again after ``ttl``."""

    def __init__(self, lcd: LCDClient, ttl: float, *, max_entries: int = 100_000) -> None:
        self.lcd = lcd
        self.ttl = ttl
        self.max_entries = max_entries
        self._known: dict[str, bytes] = {}
        self._absent: dict[str, float] = {}

    async def public_key(self, address: str) -> bytes:
        """The account's compressed key (empty: no such account, or it never signed)."""
        if found := self._known.get(address):
            return found
        now = time.monotonic()
        if self._absent.get(address, 0.0) > now:
            return b""
        try:
            key = (await self.lcd.account(address)).public_key
        except NotFound:
            key = b""
        except (NodeUnavailable, BadResponse) as exc:
            raise ChainUnavailable(f"account {address}: {exc}") from exc
        if len(self._known) + len(self._absent) >= self.max_entries:
            self._known.clear()
            self._absent.clear()
        if key:
            self._known[address] = key
        elif self.ttl > 0:
            self._absent[address] = now + self.ttl
        return key


async def provider_host(lcd: LCDClient, address: str) -> str | None:
    """The provider's on-chain host URI (None: not registered)."""
    try:
        return (await lcd.provider(address)).host_uri
    except NotFound:
        return None
    except (NodeUnavailable, BadResponse) as exc:
        raise ChainUnavailable(f"provider {address}: {exc}") from exc
