"""The Cosmos REST (LCD) subset with Akash's paths: market, deployments, escrow, providers,
audit, certificates, auth accounts and bank balances.

Answers and errors have the gRPC-gateway's shapes: lists with ``pagination.next_key``
(opaque, base64) and errors as ``{"code": <gRPC code>, "message": …, "details": []}`` with
404 for NotFound and 400 for invalid arguments (a number that is not a uint64, a bad
pagination key, an unknown state filter). A path the LCD does not serve gets 501
(``code`` 12, as a Cosmos node's gateway answers); another method than GET gets 405.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

from akchain.versions import LCD_PATHS
from akdevnet.app import App
from akdevnet.context import key
from akdevnet.modules import bank, escrow
from akdevnet.store import Database, Doc

GRPC_INVALID_ARGUMENT = 3
GRPC_NOT_FOUND = 5
GRPC_UNIMPLEMENTED = 12
MAX_PAGE = 1000
MAX_UINT64 = 2**64 - 1
UINT = re.compile(r"[0-9]{1,20}")
STATES = {
    "order": ("open", "active", "closed"),
    "bid": ("open", "active", "lost", "closed"),
    "lease": ("active", "insufficient_funds", "closed"),
    "deployment": ("active", "closed"),
}


class LCDFailure(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        self.status, self.code, self.message = status, code, message
        super().__init__(message)


def _not_found(message: str) -> LCDFailure:
    return LCDFailure(404, GRPC_NOT_FOUND, f"rpc error: code = NotFound desc = {message}")


def _invalid(message: str) -> LCDFailure:
    return LCDFailure(
        400, GRPC_INVALID_ARGUMENT, f"rpc error: code = InvalidArgument desc = {message}"
    )


def _uint(request: web.Request, name: str, required: bool = False) -> int | None:
    raw = request.query.get(name, "")
    if raw == "":
        if required:
            raise _invalid(f"{name} is required")
        return None
    if not UINT.fullmatch(raw) or int(raw) > MAX_UINT64:
        raise _invalid(f"{name}: {raw[:80]!r} is not an unsigned 64-bit integer")
    return int(raw)


def _page(request: web.Request, items: Iterable[Doc]) -> tuple[list[Doc], Doc]:
    """One page of ``items`` and its ``pagination`` answer."""
    everything = list(items)
    start = 0
    if token := request.query.get("pagination.key"):
        try:
            start = int(base64.b64decode(token, validate=True).decode())
        except (ValueError, binascii.Error):
            start = -1
        if start < 0:
            raise _invalid(f"invalid pagination key {token[:80]!r}: use a next_key of this list")
    elif offset := _uint(request, "pagination.offset"):
        start = offset
    limit = min(_uint(request, "pagination.limit") or 100, MAX_PAGE)
    chunk = everything[start : start + limit]
    more = start + limit < len(everything)
    next_key = base64.b64encode(str(start + limit).encode()).decode() if more else None
    return chunk, {"next_key": next_key, "total": str(len(everything))}


class LCDServer:
    """REST queries over one :class:`App`'s committed state."""

    def __init__(self, app: App) -> None:
        self.app = app

    def routes(self) -> web.Application:
        http = web.Application(middlewares=[self._errors])
        handlers: dict[str, Callable[[web.Request], Any]] = {
            "orders": self.orders,
            "order": self.order,
            "bids": self.bids,
            "bid": self.bid,
            "leases": self.leases,
            "lease": self.lease,
            "deployments": self.deployments,
            "deployment": self.deployment,
            "group": self.group,
            "escrow_accounts": self.escrow_accounts,
            "escrow_payments": self.escrow_payments,
            "providers": self.providers,
            "provider": self.provider,
            "provider_attributes": self.provider_attributes,
            "provider_auditor_attributes": self.provider_auditor_attributes,
            "certificates": self.certificates,
            "account": self.account,
            "balances": self.balances,
        }
        for name, path in LCD_PATHS.items():
            # a path parameter is any one segment (aiohttp's default refuses braces)
            http.router.add_get(re.sub(r"\{(\w+)\}", r"{\1:[^/]+}", path), handlers[name])
        return http

    @web.middleware
    async def _errors(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
        except LCDFailure as failure:
            body = {"code": failure.code, "message": failure.message, "details": []}
            return web.json_response(body, status=failure.status)
        except web.HTTPNotFound:
            message = f"Not Implemented: {request.path[:200]}"
            body = {"code": GRPC_UNIMPLEMENTED, "message": message, "details": []}
            return web.json_response(body, status=501)
        except web.HTTPMethodNotAllowed:
            message = (
                f"Method Not Allowed: {request.method} {request.path[:200]}; the LCD serves GET"
            )
            body = {"code": GRPC_UNIMPLEMENTED, "message": message, "details": []}
            return web.json_response(body, status=405)
        return response

    @property
    def _state(self) -> Database:
        return self.app.db

    def _scan(self, prefix: str) -> list[Doc]:
        return [doc for _, doc in self._state.scan(prefix)]

    # -- auth and bank --------------------------------------------------------------------
    async def account(self, request: web.Request) -> web.Response:
        address = request.match_info["address"]
        found = bank.account(self._state, address)
        if found is None:
            raise _not_found(f"account {address} not found")
        return web.json_response({"account": found})

    async def balances(self, request: web.Request) -> web.Response:
        chunk, pagination = _page(
            request, bank.balances(self._state, request.match_info["address"])
        )
        return web.json_response({"balances": chunk, "pagination": pagination})

    # -- market ---------------------------------------------------------------------------
    def _prefix(self, kind: str, request: web.Request, prefix: str = "filters") -> str:
        """The narrowest key prefix the id filters allow (owner, then dseq, gseq, oseq)."""
        owner = request.query.get(f"{prefix}.owner", "")
        if not owner:
            return f"{kind}/"
        ident: Doc = {"owner": owner, "dseq": _uint(request, f"{prefix}.dseq") or 0}
        if not ident["dseq"]:
            return f"{kind}/{owner}/"
        for part in ("gseq", "oseq"):
            value = _uint(request, f"{prefix}.{part}")
            if not value:
                break
            ident[part] = value
        return key(kind, ident) + "/"

    @staticmethod
    def _matches(doc: Doc, request: web.Request, prefix: str = "filters") -> bool:
        ident = doc["id"]
        for field in ("owner", "provider"):
            wanted = request.query.get(f"{prefix}.{field}")
            if wanted and ident.get(field) != wanted:
                return False
        for field in ("dseq", "gseq", "oseq"):
            wanted = request.query.get(f"{prefix}.{field}")
            if wanted and wanted != "0" and str(ident.get(field)) != wanted:
                return False
        state = request.query.get(f"{prefix}.state")
        return not state or doc["state"] == state

    def _listed(self, kind: str, request: web.Request) -> list[Doc]:
        state = request.query.get("filters.state", "")
        if state and state not in STATES[kind]:
            raise _invalid(
                f"filters.state: invalid state value {state[:80]!r} "
                f"(one of {', '.join(STATES[kind])})"
            )
        return [d for d in self._scan(self._prefix(kind, request)) if self._matches(d, request)]

    def _by_id(self, kind: str, request: web.Request, fields: tuple[str, ...]) -> Doc:
        ident: Doc = {"owner": request.query.get("id.owner", "")}
        if not ident["owner"]:
            raise _invalid("id.owner is required")
        for field in fields:
            ident[field] = (
                request.query.get(f"id.{field}", "")
                if field == "provider"
                else _uint(request, f"id.{field}", True)
            )
        found = self._state.get(key(kind, ident))
        if found is None:
            raise _not_found(f"{kind} not found")
        return dict(found)

    def _account(self, scope: str, xid: str) -> Doc | None:
        return self._state.get(escrow.account_key(scope, xid))

    def _payment(self, lease: Doc) -> Doc | None:
        ident = lease["id"]
        return self._state.get(
            escrow.payment_key(
                "deployment",
                f"{ident['owner']}/{ident['dseq']}",
                f"{ident['gseq']}/{ident['oseq']}/{ident['provider']}",
            )
        )

    def _bid_answer(self, bid: Doc) -> Doc:
        ident = bid["id"]
        xid = "/".join(str(ident[k]) for k in ("owner", "dseq", "gseq", "oseq", "provider"))
        return {"bid": bid, "escrow_account": self._account("bid", xid)}

    def _deployment_answer(self, deployment: Doc) -> Doc:
        ident = deployment["id"]
        return {
            "deployment": deployment,
            "groups": self._scan(key("group", ident) + "/"),
            "escrow_account": self._account("deployment", f"{ident['owner']}/{ident['dseq']}"),
        }

    async def orders(self, request: web.Request) -> web.Response:
        chunk, pagination = _page(request, self._listed("order", request))
        return web.json_response({"orders": chunk, "pagination": pagination})

    async def order(self, request: web.Request) -> web.Response:
        return web.json_response({"order": self._by_id("order", request, ("dseq", "gseq", "oseq"))})

    async def bids(self, request: web.Request) -> web.Response:
        chunk, pagination = _page(request, self._listed("bid", request))
        return web.json_response(
            {"bids": [self._bid_answer(b) for b in chunk], "pagination": pagination}
        )

    async def bid(self, request: web.Request) -> web.Response:
        return web.json_response(
            self._bid_answer(self._by_id("bid", request, ("dseq", "gseq", "oseq", "provider")))
        )

    async def leases(self, request: web.Request) -> web.Response:
        chunk, pagination = _page(request, self._listed("lease", request))
        answers = [{"lease": lease, "escrow_payment": self._payment(lease)} for lease in chunk]
        return web.json_response({"leases": answers, "pagination": pagination})

    async def lease(self, request: web.Request) -> web.Response:
        lease = self._by_id("lease", request, ("dseq", "gseq", "oseq", "provider"))
        return web.json_response({"lease": lease, "escrow_payment": self._payment(lease)})

    # -- deployments and escrow -----------------------------------------------------------
    async def deployments(self, request: web.Request) -> web.Response:
        chunk, pagination = _page(request, self._listed("deployment", request))
        return web.json_response(
            {"deployments": [self._deployment_answer(d) for d in chunk], "pagination": pagination}
        )

    async def deployment(self, request: web.Request) -> web.Response:
        return web.json_response(
            self._deployment_answer(self._by_id("deployment", request, ("dseq",)))
        )

    async def group(self, request: web.Request) -> web.Response:
        return web.json_response({"group": self._by_id("group", request, ("dseq", "gseq"))})

    async def escrow_accounts(self, request: web.Request) -> web.Response:
        xid, state = request.query.get("xid", ""), request.query.get("state", "")
        found = [
            a
            for a in self._scan("escrow/acc/")
            if (not xid or a["id"]["xid"].startswith(xid))
            and (not state or a["state"]["state"] == state)
        ]
        chunk, pagination = _page(request, found)
        return web.json_response({"accounts": chunk, "pagination": pagination})

    async def escrow_payments(self, request: web.Request) -> web.Response:
        xid, state = request.query.get("xid", ""), request.query.get("state", "")
        found = [
            p
            for p in self._scan("escrow/pay/")
            if (not xid or f"{p['id']['aid']['xid']}/{p['id']['xid']}".startswith(xid))
            and (not state or p["state"]["state"] == state)
        ]
        chunk, pagination = _page(request, found)
        return web.json_response({"payments": chunk, "pagination": pagination})

    # -- providers, audit, certificates ---------------------------------------------------
    async def providers(self, request: web.Request) -> web.Response:
        chunk, pagination = _page(request, self._scan("provider/"))
        return web.json_response({"providers": chunk, "pagination": pagination})

    async def provider(self, request: web.Request) -> web.Response:
        owner = request.match_info["owner"]
        found = self._state.get(f"provider/{owner}")
        if found is None:
            raise _not_found(f"invalid provider: address not found: {owner}")
        return web.json_response({"provider": found})

    async def provider_attributes(self, request: web.Request) -> web.Response:
        chunk, pagination = _page(request, self._scan(f"audit/{request.match_info['owner']}/"))
        return web.json_response({"providers": chunk, "pagination": pagination})

    async def provider_auditor_attributes(self, request: web.Request) -> web.Response:
        owner, auditor = request.match_info["owner"], request.match_info["auditor"]
        found = self._state.get(f"audit/{owner}/{auditor}")
        if found is None:
            raise _not_found("invalid provider: address not found")
        return web.json_response(
            {"providers": [found], "pagination": {"next_key": None, "total": "1"}}
        )

    async def certificates(self, request: web.Request) -> web.Response:
        owner = request.query.get("filter.owner", "")
        serial = request.query.get("filter.serial", "")
        state = request.query.get("filter.state", "")
        found = [
            c
            for c in self._scan(f"cert/{owner}/" if owner else "cert/")
            if (not serial or c["serial"] == serial)
            and (not state or c["certificate"]["state"] == state)
        ]
        chunk, pagination = _page(request, found)
        return web.json_response({"certificates": chunk, "pagination": pagination})
