"""The gRPC query services a Cosmos node answers through ABCI ``abci_query``.

A path is a gRPC method (``/cosmos.bank.v1beta1.Query/Balance``), the data its protobuf
request, the value its protobuf response, encoded as the Go node's query services encode
them. Akash's queries (deployment, market, escrow, provider, audit, certificates, at the
versions of :mod:`akchain.versions`) are the LCD's: the request's fields become the REST
query (``filters.owner``, ``id.dseq``, ``pagination.key``…) and the LCD's JSON answer is
encoded as the method's protobuf response.

Failures read as a Cosmos node's do: the gRPC status (``rpc error: code = NotFound desc =
…``) wrapped in the SDK error that baseapp maps it to (NotFound → ``sdk`` 38 key not
found, InvalidArgument → ``sdk`` 18 invalid request, an unknown path → ``sdk`` 6).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf.any_pb2 import Any as AnyPb
from google.protobuf.json_format import MessageToDict, ParseError
from google.protobuf.message import DecodeError, Message

from akchain._pb.akash.audit.v1 import query_pb2 as audit_query
from akchain._pb.akash.cert.v1 import query_pb2 as cert_query
from akchain._pb.akash.deployment.v1beta4 import query_pb2 as deployment_query
from akchain._pb.akash.escrow.v1 import query_pb2 as escrow_query
from akchain._pb.akash.market.v1beta5 import query_pb2 as market_query
from akchain._pb.akash.provider.v1beta4 import query_pb2 as provider_query
from akchain._pb.cosmos.auth.v1beta1 import auth_pb2
from akchain._pb.cosmos.auth.v1beta1 import query_pb2 as auth_query
from akchain._pb.cosmos.bank.v1beta1 import query_pb2 as bank_query
from akchain._pb.cosmos.base.abci.v1beta1 import abci_pb2
from akchain._pb.cosmos.base.query.v1beta1 import pagination_pb2
from akchain._pb.cosmos.base.v1beta1 import coin_pb2
from akchain._pb.cosmos.crypto.secp256k1 import keys_pb2
from akchain._pb.cosmos.tx.v1beta1 import service_pb2
from akchain._pb.tendermint.abci import types_pb2
from akchain.versions import AUDIT, CERT, DEPLOYMENT, ESCROW, MARKET, PROVIDER
from akdevnet.app import App
from akdevnet.context import from_json
from akdevnet.errors import TxFailure
from akdevnet.lcd import LCDFailure, LCDServer
from akdevnet.modules import bank
from akdevnet.store import Doc
from aktypes.address import is_address

# method → (request, response, the LCD query answering it)
AKASH_METHODS: dict[str, tuple[type[Message], type[Message], str]] = {
    f"/akash.deployment.{DEPLOYMENT}.Query/Deployments": (
        deployment_query.QueryDeploymentsRequest,
        deployment_query.QueryDeploymentsResponse,
        "deployments",
    ),
    f"/akash.deployment.{DEPLOYMENT}.Query/Deployment": (
        deployment_query.QueryDeploymentRequest,
        deployment_query.QueryDeploymentResponse,
        "deployment",
    ),
    f"/akash.deployment.{DEPLOYMENT}.Query/Group": (
        deployment_query.QueryGroupRequest,
        deployment_query.QueryGroupResponse,
        "group",
    ),
    f"/akash.market.{MARKET}.Query/Orders": (
        market_query.QueryOrdersRequest,
        market_query.QueryOrdersResponse,
        "orders",
    ),
    f"/akash.market.{MARKET}.Query/Order": (
        market_query.QueryOrderRequest,
        market_query.QueryOrderResponse,
        "order",
    ),
    f"/akash.market.{MARKET}.Query/Bids": (
        market_query.QueryBidsRequest,
        market_query.QueryBidsResponse,
        "bids",
    ),
    f"/akash.market.{MARKET}.Query/Bid": (
        market_query.QueryBidRequest,
        market_query.QueryBidResponse,
        "bid",
    ),
    f"/akash.market.{MARKET}.Query/Leases": (
        market_query.QueryLeasesRequest,
        market_query.QueryLeasesResponse,
        "leases",
    ),
    f"/akash.market.{MARKET}.Query/Lease": (
        market_query.QueryLeaseRequest,
        market_query.QueryLeaseResponse,
        "lease",
    ),
    f"/akash.escrow.{ESCROW}.Query/Accounts": (
        escrow_query.QueryAccountsRequest,
        escrow_query.QueryAccountsResponse,
        "escrow_accounts",
    ),
    f"/akash.escrow.{ESCROW}.Query/Payments": (
        escrow_query.QueryPaymentsRequest,
        escrow_query.QueryPaymentsResponse,
        "escrow_payments",
    ),
    f"/akash.provider.{PROVIDER}.Query/Providers": (
        provider_query.QueryProvidersRequest,
        provider_query.QueryProvidersResponse,
        "providers",
    ),
    f"/akash.provider.{PROVIDER}.Query/Provider": (
        provider_query.QueryProviderRequest,
        provider_query.QueryProviderResponse,
        "provider",
    ),
    f"/akash.audit.{AUDIT}.Query/ProviderAttributes": (
        audit_query.QueryProviderAttributesRequest,
        audit_query.QueryProvidersResponse,
        "provider_attributes",
    ),
    f"/akash.audit.{AUDIT}.Query/ProviderAuditorAttributes": (
        audit_query.QueryProviderAuditorRequest,
        audit_query.QueryProvidersResponse,
        "provider_auditor_attributes",
    ),
    f"/akash.cert.{CERT}.Query/Certificates": (
        cert_query.QueryCertificatesRequest,
        cert_query.QueryCertificatesResponse,
        "certificates",
    ),
}
GRPC_NOT_FOUND = 5
KEY_NOT_FOUND = 38
INVALID_REQUEST = 18
UNKNOWN_REQUEST = 6
DEFAULT_LIMIT = 100


class QueryFailure(Exception):
    """A query's error: the ABCI answer (``code``, ``log``, ``codespace``) and the gRPC
    status (``status``, ``detail``) it comes from."""

    def __init__(
        self,
        code: int,
        log: str,
        codespace: str = "sdk",
        *,
        status: str = "Unknown",
        detail: str = "",
    ) -> None:
        self.code, self.log, self.codespace = code, log, codespace
        self.status, self.detail = status, detail or log
        super().__init__(log)


def _not_found(what: str) -> QueryFailure:
    return QueryFailure(
        KEY_NOT_FOUND,
        f"rpc error: code = NotFound desc = {what}: key not found",
        status="NotFound",
        detail=what,
    )


def _invalid(what: str) -> QueryFailure:
    return QueryFailure(
        INVALID_REQUEST,
        f"rpc error: code = InvalidArgument desc = {what}: invalid request",
        status="InvalidArgument",
        detail=what,
    )


def _address(value: str, name: str = "address") -> str:
    if not value:
        raise _invalid(f"{name} cannot be empty")
    if not is_address(value):
        raise _invalid(f"invalid {name} {value[:100]!r}: decoding bech32 failed")
    return value


def account_any(doc: Doc) -> AnyPb:
    """A stored account as the ``Any`` of a ``BaseAccount`` (what the auth module returns)."""
    pub_key = None
    if doc.get("pub_key"):
        key = base64.b64decode(doc["pub_key"]["key"])
        pub_key = AnyPb(
            type_url="/cosmos.crypto.secp256k1.PubKey",
            value=keys_pb2.PubKey(key=key).SerializeToString(),
        )
    account = auth_pb2.BaseAccount(
        address=doc["address"],
        pub_key=pub_key,
        account_number=int(doc["account_number"]),
        sequence=int(doc["sequence"]),
    )
    return AnyPb(type_url="/cosmos.auth.v1beta1.BaseAccount", value=account.SerializeToString())


@dataclass(frozen=True)
class _Fields:
    """A gRPC request's fields as the LCD handlers read them (query string, path)."""

    query: Mapping[str, str]

    @property
    def match_info(self) -> Mapping[str, str]:
        return self.query


def _flatten(doc: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"filters": {"owner": "a"}}`` as ``{"filters.owner": "a"}`` (the REST form)."""
    flat: dict[str, str] = {}
    for name, value in doc.items():
        if isinstance(value, Mapping):
            flat |= _flatten(value, f"{prefix}{name}.")
        else:
            flat[f"{prefix}{name}"] = value if isinstance(value, str) else str(value).lower()
    return flat


def _page(
    items: list[bytes], keys: list[bytes], page: pagination_pb2.PageRequest
) -> tuple[list[bytes], pagination_pb2.PageResponse]:
    """One page of ``items`` (``keys`` are their sort keys, the ``next_key`` values)."""
    if page.key and page.offset:
        raise _invalid("paginate: invalid request, either offset or key is expected, got both")
    start = page.offset
    if page.key:
        start = next((i for i, k in enumerate(keys) if k >= page.key), len(keys))
    limit = page.limit or DEFAULT_LIMIT
    chunk = items[start : start + limit]
    answer = pagination_pb2.PageResponse()
    if start + limit < len(items):
        answer.next_key = keys[start + limit]
    if page.count_total and not page.key:
        answer.total = len(items)
    return chunk, answer


class QueryServices:
    """The query methods served over ``abci_query``, over one :class:`App`."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.lcd = LCDServer(app)
        self.methods: dict[str, tuple[type[Message], Callable[[Any], Message]]] = {
            "/cosmos.auth.v1beta1.Query/Account": (
                auth_query.QueryAccountRequest,
                self.account,
            ),
            "/cosmos.bank.v1beta1.Query/Balance": (
                bank_query.QueryBalanceRequest,
                self.balance,
            ),
            "/cosmos.bank.v1beta1.Query/AllBalances": (
                bank_query.QueryAllBalancesRequest,
                self.all_balances,
            ),
            "/cosmos.tx.v1beta1.Service/Simulate": (
                service_pb2.SimulateRequest,
                self.simulate,
            ),
        }

    def serves(self, path: str) -> bool:
        return path in AKASH_METHODS or path in self.methods

    def query(self, path: str, data: bytes) -> bytes:
        """The encoded response of method ``path`` to the encoded request ``data``."""
        if path in AKASH_METHODS:
            return self._akash(path, data)
        found = self.methods.get(path)
        if found is None:
            unknown = f"unknown query path: {path[:200]}: unknown request"
            raise QueryFailure(UNKNOWN_REQUEST, unknown, status="Unimplemented")
        request_type, handler = found
        try:
            request = request_type.FromString(data)
        except DecodeError as exc:
            raise _invalid(f"cannot decode {request_type.DESCRIPTOR.full_name}: {exc}") from exc
        return handler(request).SerializeToString()

    def _akash(self, path: str, data: bytes) -> bytes:
        request_type, response_type, handler = AKASH_METHODS[path]
        try:
            request = request_type.FromString(data)
        except DecodeError as exc:
            raise _invalid(f"cannot decode {request_type.DESCRIPTOR.full_name}: {exc}") from exc
        fields = _flatten(MessageToDict(request, preserving_proto_field_name=True))
        try:
            answer = self.lcd.handlers[handler](_Fields(fields))
        except LCDFailure as failure:
            desc = failure.message.split(" desc = ", 1)[-1]
            raise _not_found(desc) if failure.code == GRPC_NOT_FOUND else _invalid(desc) from None
        try:
            return from_json(answer, response_type()).SerializeToString()
        except (ParseError, ValueError) as exc:
            raise QueryFailure(1, f"cannot encode the answer: {exc}", "undefined") from exc

    # -- auth and bank --------------------------------------------------------------------
    def account(self, request: auth_query.QueryAccountRequest) -> auth_query.QueryAccountResponse:
        address = _address(request.address)
        found = bank.account(self.app.db, address)
        if found is None:
            raise _not_found(f"account {address} not found")
        return auth_query.QueryAccountResponse(account=account_any(found))

    def balance(self, request: bank_query.QueryBalanceRequest) -> bank_query.QueryBalanceResponse:
        address = _address(request.address)
        if not request.denom:
            raise _invalid("invalid denom")
        amount = bank.balance(self.app.db, address, request.denom)
        return bank_query.QueryBalanceResponse(
            balance=coin_pb2.Coin(denom=request.denom, amount=str(amount))
        )

    def all_balances(
        self, request: bank_query.QueryAllBalancesRequest
    ) -> bank_query.QueryAllBalancesResponse:
        address = _address(request.address)
        coins = bank.balances(self.app.db, address)
        encoded = [coin_pb2.Coin(denom=c["denom"], amount=c["amount"]) for c in coins]
        chunk, page = _page(
            [c.SerializeToString() for c in encoded],
            [c.denom.encode() for c in encoded],
            request.pagination,
        )
        return bank_query.QueryAllBalancesResponse(
            balances=[coin_pb2.Coin.FromString(c) for c in chunk], pagination=page
        )

    # -- transactions ---------------------------------------------------------------------
    def simulate(self, request: service_pb2.SimulateRequest) -> service_pb2.SimulateResponse:
        raw = request.tx_bytes
        if not raw and request.HasField("tx"):
            raw = request.tx.SerializeToString()
        if not raw:
            raise _invalid("empty txBytes is not allowed")
        try:
            outcome = self.app.simulate(raw)
        except TxFailure as exc:
            detail = f"{exc.log} With gas wanted: '0' and gas used: '0' "
            raise QueryFailure(
                UNKNOWN_REQUEST,
                f"rpc error: code = Unknown desc = {detail}: unknown request",
                detail=detail,
            ) from exc
        return service_pb2.SimulateResponse(
            gas_info=abci_pb2.GasInfo(gas_wanted=0, gas_used=outcome["gas_used"]),
            result=abci_pb2.Result(
                events=[event_pb(e) for e in outcome["events"]],
                msg_responses=outcome["msg_responses"],
            ),
        )


def event_pb(event: Doc) -> types_pb2.Event:
    return types_pb2.Event(
        type=event["type"],
        attributes=[
            types_pb2.EventAttribute(key=a["key"], value=a["value"], index=a.get("index", False))
            for a in event["attributes"]
        ],
    )
