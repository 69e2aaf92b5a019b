"""Queries over the Cosmos REST (LCD) endpoints with Akash's paths.

Every list query pages through ``pagination.key`` until the node says there is no next
page, so a caller never sees a silently truncated list. Errors map onto
:mod:`akchain.errors`: connection problems and 5xx answers are ``NodeUnavailable`` (retry),
gRPC ``NotFound`` is ``NotFound``, anything unreadable is ``BadResponse``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp

from akchain.errors import BadResponse, NodeUnavailable, NotFound, describe
from akchain.models import (
    Account,
    AuditedAttributes,
    Bid,
    Certificate,
    Deployment,
    EscrowAccount,
    Group,
    Lease,
    Order,
    Provider,
)
from akchain.transport import HTTPClient
from akchain.versions import LCD_PATHS
from aktypes.coin import Coin
from aktypes.ids import BidID, DeploymentID, GroupID, LeaseID, OrderID

Params = Mapping[str, str | int | None]
_GRPC_NOT_FOUND = 5


def _id_params(
    prefix: str, ident: OrderID | BidID | LeaseID | DeploymentID | GroupID
) -> dict[str, str]:
    fields = ("owner", "dseq", "gseq", "oseq", "provider")
    return {
        f"{prefix}.{name}": str(getattr(ident, name)) for name in fields if hasattr(ident, name)
    }


def _segment(value: str) -> str:
    """``value`` as one path segment: escaped, so no input can reach another endpoint
    (``.`` and ``..`` name nothing: a URL library would resolve them)."""
    if value in ("", ".", ".."):
        raise NotFound(f"{value!r} names no account")
    return quote(value, safe="")


def _filters(prefix: str, **values: str | int | None) -> dict[str, str]:
    return {f"{prefix}.{k}": str(v) for k, v in values.items() if v is not None}


class LCDClient(HTTPClient):
    """An Akash node's REST API. Use as an async context manager or call :meth:`close`."""

    def __init__(
        self,
        base_url: str,
        *,
        session: aiohttp.ClientSession | None = None,
        timeout: float = 10.0,
        page_size: int = 100,
    ) -> None:
        super().__init__(base_url, session=session, timeout=timeout)
        self.page_size = page_size

    # -- transport ------------------------------------------------------------------------
    async def get(self, path: str, params: Params | None = None) -> dict[str, Any]:
        """GET one LCD path; the decoded JSON object."""
        query = {k: str(v) for k, v in (params or {}).items() if v is not None}
        url = self.base_url + path
        try:
            async with self._client().get(url, params=query) as response:
                text = await response.text()
                status = response.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise NodeUnavailable(f"LCD {url}: {describe(exc)}") from exc
        try:
            body = json.loads(text)
        except ValueError as exc:
            if status >= 500:
                raise NodeUnavailable(f"LCD {path} answered HTTP {status}") from exc
            raise BadResponse(
                f"LCD {path} answered HTTP {status} with non-JSON: {text[:200]!r}"
            ) from exc
        if status == 200 and isinstance(body, dict):
            return body
        message = body.get("message", text[:200]) if isinstance(body, dict) else text[:200]
        code = body.get("code") if isinstance(body, dict) else None
        if status == 404 or code == _GRPC_NOT_FOUND:
            raise NotFound(f"{path}: {message}")
        if status >= 500:
            raise NodeUnavailable(f"LCD {path} answered HTTP {status}: {message}")
        raise BadResponse(f"LCD {path} answered HTTP {status}: {message}")

    async def pages(
        self, path: str, field: str, params: Params | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Every item of a paginated list, page by page."""
        query: dict[str, str | int | None] = {**(params or {}), "pagination.limit": self.page_size}
        while True:
            body = await self.get(path, query)
            items = body.get(field)
            if not isinstance(items, list):
                raise BadResponse(f"LCD {path}: expected a list in {field!r}")
            for item in items:
                yield item
            next_key = (body.get("pagination") or {}).get("next_key")
            if not next_key:
                return
            query["pagination.key"] = next_key

    async def _all(
        self, path: str, field: str, params: Params | None = None
    ) -> list[dict[str, Any]]:
        return [item async for item in self.pages(path, field, params)]

    # -- auth and bank --------------------------------------------------------------------
    async def account(self, address: str) -> Account:
        return Account.from_json(
            await self.get(LCD_PATHS["account"].format(address=_segment(address)))
        )

    async def balances(self, address: str) -> list[Coin]:
        items = await self._all(LCD_PATHS["balances"].format(address=_segment(address)), "balances")
        return [Coin(denom=c["denom"], amount=int(c["amount"])) for c in items]

    async def balance(self, address: str, denom: str) -> int:
        return sum(c.amount for c in await self.balances(address) if c.denom == denom)

    # -- market ---------------------------------------------------------------------------
    async def orders(
        self, *, owner: str | None = None, dseq: int | None = None, state: str | None = None
    ) -> list[Order]:
        params = _filters("filters", owner=owner, dseq=dseq, state=state)
        return [Order.from_json(o) for o in await self._all(LCD_PATHS["orders"], "orders", params)]

    async def order(self, order_id: OrderID) -> Order:
        body = await self.get(LCD_PATHS["order"], _id_params("id", order_id))
        return Order.from_json(body["order"])

    async def bids(
        self,
        *,
        owner: str | None = None,
        dseq: int | None = None,
        gseq: int | None = None,
        oseq: int | None = None,
        provider: str | None = None,
        state: str | None = None,
    ) -> list[Bid]:
        params = _filters(
            "filters", owner=owner, dseq=dseq, gseq=gseq, oseq=oseq, provider=provider, state=state
        )
        return [Bid.from_json(b) for b in await self._all(LCD_PATHS["bids"], "bids", params)]

    async def bid(self, bid_id: BidID) -> Bid:
        return Bid.from_json(await self.get(LCD_PATHS["bid"], _id_params("id", bid_id)))

    async def leases(
        self,
        *,
        owner: str | None = None,
        dseq: int | None = None,
        provider: str | None = None,
        state: str | None = None,
    ) -> list[Lease]:
        params = _filters("filters", owner=owner, dseq=dseq, provider=provider, state=state)
        return [
            Lease.from_json(item) for item in await self._all(LCD_PATHS["leases"], "leases", params)
        ]

    async def lease(self, lease_id: LeaseID) -> Lease:
        return Lease.from_json(await self.get(LCD_PATHS["lease"], _id_params("id", lease_id)))

    # -- deployments and escrow -----------------------------------------------------------
    async def deployments(
        self, *, owner: str | None = None, state: str | None = None
    ) -> list[Deployment]:
        params = _filters("filters", owner=owner, state=state)
        items = await self._all(LCD_PATHS["deployments"], "deployments", params)
        return [Deployment.from_json(d) for d in items]

    async def deployment(self, deployment_id: DeploymentID) -> Deployment:
        return Deployment.from_json(
            await self.get(LCD_PATHS["deployment"], _id_params("id", deployment_id))
        )

    async def group(self, group_id: GroupID) -> Group:
        body = await self.get(LCD_PATHS["group"], _id_params("id", group_id))
        return Group.from_json(body["group"])

    async def escrow_accounts(
        self, *, xid: str | None = None, state: str | None = None
    ) -> list[EscrowAccount]:
        items = await self._all(
            LCD_PATHS["escrow_accounts"], "accounts", {"xid": xid, "state": state}
        )
        return [EscrowAccount.from_json(a) for a in items]

    # -- providers, audit, certificates ---------------------------------------------------
    async def providers(self) -> list[Provider]:
        return [Provider.from_json(p) for p in await self._all(LCD_PATHS["providers"], "providers")]

    async def provider(self, owner: str) -> Provider:
        return Provider.from_json(
            await self.get(LCD_PATHS["provider"].format(owner=_segment(owner)))
        )

    async def provider_attributes(self, owner: str) -> list[AuditedAttributes]:
        items = await self._all(
            LCD_PATHS["provider_attributes"].format(owner=_segment(owner)), "providers"
        )
        return [AuditedAttributes.from_json(p) for p in items]

    async def certificates(
        self, *, owner: str | None = None, serial: str | None = None, state: str | None = None
    ) -> list[Certificate]:
        params = _filters("filter", owner=owner, serial=serial, state=state)
        items = await self._all(LCD_PATHS["certificates"], "certificates", params)
        return [Certificate.from_json(c, owner=owner or "") for c in items]
