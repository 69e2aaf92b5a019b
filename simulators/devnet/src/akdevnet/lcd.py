"""The Cosmos REST (LCD) subset with Akash's paths: market, deployments, escrow, providers,
audit, certificates, auth accounts and bank balances; and Cosmos's transaction service:
``POST /cosmos/tx/v1beta1/txs`` (broadcast), ``GET /cosmos/tx/v1beta1/txs/{hash}``,
``GET /cosmos/tx/v1beta1/txs?query=…`` (search) and ``POST /cosmos/tx/v1beta1/simulate``.

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
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from aiohttp import web
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError

from akchain._pb.cosmos.tx.v1beta1 import tx_pb2
from akchain.versions import COSMOS_TX, LCD_PATHS
from akdevnet.app import App
from akdevnet.context import key
from akdevnet.errors import TxFailure
from akdevnet.modules import bank, escrow
from akdevnet.store import Database, Doc, TxRow
from akdevnet.txindex import QueryError, parse_query, search

GRPC_INVALID_ARGUMENT = 3
GRPC_NOT_FOUND = 5
GRPC_UNIMPLEMENTED = 12
MAX_PAGE = 1000
MAX_UINT64 = 2**64 - 1
TXS = f"/cosmos/tx/{COSMOS_TX}/txs"
SIMULATE = f"/cosmos/tx/{COSMOS_TX}/simulate"
BROADCAST_MODES = ("BROADCAST_MODE_SYNC", "BROADCAST_MODE_ASYNC")
UINT = re.compile(r"[0-9]{1,20}")
STATES = {
    "order": ("open", "active", "closed"),
    "bid": ("open", "active", "lost", "closed"),
    "lease": ("active", "insufficient_funds", "closed"),
    "deployment": ("active", "closed"),
}


class Params(Protocol):
    """What a query handler reads: the query string and the path's parameters (a
    ``web.Request``, or the fields of a gRPC request through ``abci_query``)."""

    @property
    def query(self) -> Mapping[str, str]: ...

    @property
    def match_info(self) -> Mapping[str, str]: ...


def _json_handler(handler: Callable[[Params], Doc]) -> Callable[[web.Request], Any]:
    async def serve(request: web.Request) -> web.Response:
        return web.json_response(handler(request))

    return serve


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


def _uint(request: Params, name: str, required: bool = False) -> int | None:
    raw = request.query.get(name, "")
    if raw == "":
        if required:
            raise _invalid(f"{name} is required")
        return None
    if not UINT.fullmatch(raw) or int(raw) > MAX_UINT64:
        raise _invalid(f"{name}: {raw[:80]!r} is not an unsigned 64-bit integer")
    return int(raw)


def _page(request: Params, items: Iterable[Doc]) -> tuple[list[Doc], Doc]:
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
        self.handlers: dict[str, Callable[[Params], Doc]] = {
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

    def routes(self) -> web.Application:
        http = web.Application(middlewares=[self._errors])
        for name, path in LCD_PATHS.items():
            # a path parameter is any one segment (aiohttp's default refuses braces)
            route = re.sub(r"\{(\w+)\}", r"{\1:[^/]+}", path)
            http.router.add_get(route, _json_handler(self.handlers[name]))
        http.router.add_post(TXS, self.broadcast)
        http.router.add_get(TXS, self.search_txs)
        http.router.add_get(TXS + "/{hash:[^/]+}", self.get_tx)
        http.router.add_post(SIMULATE, self.simulate)
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
            served = {TXS: "GET and POST", SIMULATE: "POST"}.get(request.path, "GET")
            message = (
                f"Method Not Allowed: {request.method} {request.path[:200]}; "
                f"the LCD serves {served}"
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
    def account(self, request: Params) -> Doc:
        address = request.match_info["address"]
        found = bank.account(self._state, address)
        if found is None:
            raise _not_found(f"account {address} not found")
        return {"account": found}

    def balances(self, request: Params) -> Doc:
        chunk, pagination = _page(
            request, bank.balances(self._state, request.match_info["address"])
        )
        return {"balances": chunk, "pagination": pagination}

    # -- market ---------------------------------------------------------------------------
    def _prefix(self, kind: str, request: Params, prefix: str = "filters") -> str:
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
    def _matches(doc: Doc, request: Params, prefix: str = "filters") -> bool:
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

    def _listed(self, kind: str, request: Params) -> list[Doc]:
        state = request.query.get("filters.state", "")
        if state and state not in STATES[kind]:
            raise _invalid(
                f"filters.state: invalid state value {state[:80]!r} "
                f"(one of {', '.join(STATES[kind])})"
            )
        return [d for d in self._scan(self._prefix(kind, request)) if self._matches(d, request)]

    def _by_id(self, kind: str, request: Params, fields: tuple[str, ...]) -> Doc:
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

    def orders(self, request: Params) -> Doc:
        chunk, pagination = _page(request, self._listed("order", request))
        return {"orders": chunk, "pagination": pagination}

    def order(self, request: Params) -> Doc:
        return {"order": self._by_id("order", request, ("dseq", "gseq", "oseq"))}

    def bids(self, request: Params) -> Doc:
        chunk, pagination = _page(request, self._listed("bid", request))
        return {"bids": [self._bid_answer(b) for b in chunk], "pagination": pagination}

    def bid(self, request: Params) -> Doc:
        return self._bid_answer(self._by_id("bid", request, ("dseq", "gseq", "oseq", "provider")))

    def leases(self, request: Params) -> Doc:
        chunk, pagination = _page(request, self._listed("lease", request))
        answers = [{"lease": lease, "escrow_payment": self._payment(lease)} for lease in chunk]
        return {"leases": answers, "pagination": pagination}

    def lease(self, request: Params) -> Doc:
        lease = self._by_id("lease", request, ("dseq", "gseq", "oseq", "provider"))
        return {"lease": lease, "escrow_payment": self._payment(lease)}

    # -- deployments and escrow -----------------------------------------------------------
    def deployments(self, request: Params) -> Doc:
        chunk, pagination = _page(request, self._listed("deployment", request))
        return {
            "deployments": [self._deployment_answer(d) for d in chunk],
            "pagination": pagination,
        }

    def deployment(self, request: Params) -> Doc:
        return self._deployment_answer(self._by_id("deployment", request, ("dseq",)))

    def group(self, request: Params) -> Doc:
        return {"group": self._by_id("group", request, ("dseq", "gseq"))}

    def escrow_accounts(self, request: Params) -> Doc:
        xid, state = request.query.get("xid", ""), request.query.get("state", "")
        found = [
            a
            for a in self._scan("escrow/acc/")
            if (not xid or a["id"]["xid"].startswith(xid))
            and (not state or a["state"]["state"] == state)
        ]
        chunk, pagination = _page(request, found)
        return {"accounts": chunk, "pagination": pagination}

    def escrow_payments(self, request: Params) -> Doc:
        xid, state = request.query.get("xid", ""), request.query.get("state", "")
        found = [
            p
            for p in self._scan("escrow/pay/")
            if (not xid or f"{p['id']['aid']['xid']}/{p['id']['xid']}".startswith(xid))
            and (not state or p["state"]["state"] == state)
        ]
        chunk, pagination = _page(request, found)
        return {"payments": chunk, "pagination": pagination}

    # -- providers, audit, certificates ---------------------------------------------------
    def providers(self, request: Params) -> Doc:
        chunk, pagination = _page(request, self._scan("provider/"))
        return {"providers": chunk, "pagination": pagination}

    def provider(self, request: Params) -> Doc:
        owner = request.match_info["owner"]
        found = self._state.get(f"provider/{owner}")
        if found is None:
            raise _not_found(f"invalid provider: address not found: {owner}")
        return {"provider": found}

    def provider_attributes(self, request: Params) -> Doc:
        chunk, pagination = _page(request, self._scan(f"audit/{request.match_info['owner']}/"))
        return {"providers": chunk, "pagination": pagination}

    def provider_auditor_attributes(self, request: Params) -> Doc:
        owner, auditor = request.match_info["owner"], request.match_info["auditor"]
        found = self._state.get(f"audit/{owner}/{auditor}")
        if found is None:
            raise _not_found("invalid provider: address not found")
        return {"providers": [found], "pagination": {"next_key": None, "total": "1"}}

    def certificates(self, request: Params) -> Doc:
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
        return {"certificates": chunk, "pagination": pagination}

    # -- transactions ---------------------------------------------------------------------
    @staticmethod
    async def _tx_bytes(request: web.Request) -> tuple[bytes, Doc]:
        """The ``tx_bytes`` of a POSTed JSON body, and the body."""
        try:
            body = await request.json()
        except ValueError as exc:
            raise _invalid(f"the body is not JSON: {exc}") from exc
        except RecursionError:
            raise _invalid("the body is not JSON: nested too deeply") from None
        if not isinstance(body, dict):
            raise _invalid("the body must be a JSON object with tx_bytes")
        encoded = body.get("tx_bytes")
        if not isinstance(encoded, str) or not encoded:
            raise _invalid("tx_bytes (base64) is required")
        try:
            return base64.b64decode(encoded, validate=True), body
        except (ValueError, binascii.Error) as exc:
            raise _invalid(f"tx_bytes is not base64: {exc}") from exc

    async def broadcast(self, request: web.Request) -> web.Response:
        raw, body = await self._tx_bytes(request)
        mode = body.get("mode", "BROADCAST_MODE_SYNC")
        if mode == "BROADCAST_MODE_BLOCK":
            raise _invalid("BROADCAST_MODE_BLOCK was removed in Cosmos SDK 0.47; use SYNC")
        if mode not in BROADCAST_MODES:
            raise _invalid(f"invalid broadcast mode {str(mode)[:80]!r}: use {BROADCAST_MODES}")
        checked = self.app.check_tx(raw)
        if mode == "BROADCAST_MODE_ASYNC":
            checked |= {"code": 0, "log": "", "codespace": ""}
        return web.json_response(
            {
                "tx_response": {
                    "height": "0",
                    "txhash": checked["hash"],
                    "codespace": checked["codespace"],
                    "code": checked["code"],
                    "data": "",
                    "raw_log": checked["log"],
                    "logs": [],
                    "info": "",
                    "gas_wanted": "0",
                    "gas_used": "0",
                    "tx": None,
                    "timestamp": "",
                    "events": [],
                }
            }
        )

    def _tx_doc(self, raw: str) -> Doc | None:
        """A stored transaction as Cosmos's ``Tx`` JSON (messages with their ``@type``)."""
        try:
            envelope = tx_pb2.TxRaw.FromString(base64.b64decode(raw))
            tx = tx_pb2.Tx(
                body=tx_pb2.TxBody.FromString(envelope.body_bytes),
                auth_info=tx_pb2.AuthInfo.FromString(envelope.auth_info_bytes),
                signatures=envelope.signatures,
            )
            return MessageToDict(tx, preserving_proto_field_name=True)
        except (DecodeError, TypeError, KeyError, ValueError):
            return None

    def _tx_response(self, row: TxRow) -> Doc:
        result = row.result
        found = self._state.block(row.height)
        tx = self._tx_doc(row.tx)
        return {
            "height": str(row.height),
            "txhash": row.hash,
            "codespace": result.get("codespace", ""),
            "code": result.get("code", 0),
            "data": base64.b64decode(result.get("data") or "").hex().upper(),
            "raw_log": result.get("log", ""),
            "logs": [],
            "info": result.get("info", ""),
            "gas_wanted": result.get("gas_wanted", "0"),
            "gas_used": result.get("gas_used", "0"),
            "tx": None if tx is None else {"@type": "/cosmos.tx.v1beta1.Tx", **tx},
            "timestamp": found[0].split(".")[0] + "Z" if found else "",
            "events": result.get("events", []),
        }

    async def get_tx(self, request: web.Request) -> web.Response:
        digest = request.match_info["hash"]
        if not re.fullmatch(r"[0-9a-fA-F]{64}", digest):
            raise _invalid(f"invalid tx hash {digest[:80]!r}: 64 hex digits")
        found = self._state.txs(tx_hash=digest)
        if not found:
            raise _not_found(f"tx not found: {digest.upper()}")
        response = self._tx_response(found[0])
        return web.json_response({"tx": response["tx"], "tx_response": response})

    async def search_txs(self, request: web.Request) -> web.Response:
        events = request.query.getall("events", [])
        query = request.query.get("query") or " AND ".join(events)
        if not query:
            raise _invalid("query cannot be empty")
        try:
            conditions = parse_query(query)
        except QueryError as exc:
            raise _invalid(f"invalid query {query[:200]!r}: {exc}") from exc
        order = request.query.get("order_by", "ORDER_BY_UNSPECIFIED")
        if order not in ("ORDER_BY_UNSPECIFIED", "ORDER_BY_ASC", "ORDER_BY_DESC", "0", "1", "2"):
            raise _invalid(f"order_by: {order[:80]!r} is not an order")
        page = _uint(request, "page") or 1
        limit = min(_uint(request, "limit") or 100, MAX_PAGE)
        found = search(self._state, conditions)
        if order in ("ORDER_BY_DESC", "2"):
            found.reverse()
        chunk = [self._tx_response(row) for row in found[(page - 1) * limit : page * limit]]
        return web.json_response(
            {
                "txs": [r["tx"] for r in chunk],
                "tx_responses": chunk,
                "pagination": None,
                "total": str(len(found)),
            }
        )

    async def simulate(self, request: web.Request) -> web.Response:
        raw, _ = await self._tx_bytes(request)
        try:
            outcome = self.app.simulate(raw)
        except TxFailure as exc:
            raise _invalid(f"{exc.log}: {exc.codespace} {exc.code}") from exc
        return web.json_response(
            {
                "gas_info": {"gas_wanted": "0", "gas_used": str(outcome["gas_used"])},
                "result": {
                    "data": "",
                    "log": "",
                    "events": outcome["events"],
                    "msg_responses": [{"@type": a.type_url} for a in outcome["msg_responses"]],
                },
            }
        )
