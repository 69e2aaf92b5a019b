"""The gRPC query services a Cosmos node answers through ABCI ``abci_query``.

A path is a gRPC method (``/cosmos.bank.v1beta1.Query/Balance``), the data its protobuf
request, the value its protobuf response, encoded as the Go node's query services encode
them. Failures read as a Cosmos node's do: the gRPC status (``rpc error: code = NotFound
desc = …``) wrapped in the SDK error that baseapp maps it to (NotFound → ``sdk`` 38 key not
found, InvalidArgument → ``sdk`` 18 invalid request, an unknown path → ``sdk`` 6).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass

from google.protobuf.any_pb2 import Any as AnyPb
from google.protobuf.message import DecodeError, Message

from akchain._pb.cosmos.auth.v1beta1 import auth_pb2
from akchain._pb.cosmos.auth.v1beta1 import query_pb2 as auth_query
from akchain._pb.cosmos.bank.v1beta1 import query_pb2 as bank_query
from akchain._pb.cosmos.base.abci.v1beta1 import abci_pb2
from akchain._pb.cosmos.base.query.v1beta1 import pagination_pb2
from akchain._pb.cosmos.base.v1beta1 import coin_pb2
from akchain._pb.cosmos.crypto.secp256k1 import keys_pb2
from akchain._pb.cosmos.tx.v1beta1 import service_pb2
from akchain._pb.tendermint.abci import types_pb2
from akdevnet.app import App
from akdevnet.errors import TxFailure
from akdevnet.modules import bank
from akdevnet.store import Doc
from aktypes.address import is_address

KEY_NOT_FOUND = 38
INVALID_REQUEST = 18
UNKNOWN_REQUEST = 6
DEFAULT_LIMIT = 100


@dataclass(frozen=True)
class QueryFailure(Exception):
    """An ABCI query's error answer."""

    code: int
    log: str
    codespace: str = "sdk"


def _not_found(what: str) -> QueryFailure:
    return QueryFailure(KEY_NOT_FOUND, f"rpc error: code = NotFound desc = {what}: key not found")


def _invalid(what: str) -> QueryFailure:
    return QueryFailure(
        INVALID_REQUEST, f"rpc error: code = InvalidArgument desc = {what}: invalid request"
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
        self.methods: dict[str, tuple[type[Message], Callable[[Message], Message]]] = {
            "/cosmos.auth.v1beta1.Query/Account": (
                auth_query.QueryAccountRequest,
                self.account,  # type: ignore[dict-item]
            ),
            "/cosmos.bank.v1beta1.Query/Balance": (
                bank_query.QueryBalanceRequest,
                self.balance,  # type: ignore[dict-item]
            ),
            "/cosmos.bank.v1beta1.Query/AllBalances": (
                bank_query.QueryAllBalancesRequest,
                self.all_balances,  # type: ignore[dict-item]
            ),
            "/cosmos.tx.v1beta1.Service/Simulate": (
                service_pb2.SimulateRequest,
                self.simulate,  # type: ignore[dict-item]
            ),
        }

    def query(self, path: str, data: bytes) -> bytes:
        """The encoded response of method ``path`` to the encoded request ``data``."""
        found = self.methods.get(path)
        if found is None:
            unknown = f"unknown query path: {path[:200]}: unknown request"
            raise QueryFailure(UNKNOWN_REQUEST, unknown)
        request_type, handler = found
        try:
            request = request_type.FromString(data)
        except DecodeError as exc:
            raise _invalid(f"cannot decode {request_type.DESCRIPTOR.full_name}: {exc}") from exc
        return handler(request).SerializeToString()

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
            raise QueryFailure(
                UNKNOWN_REQUEST,
                f"rpc error: code = Unknown desc = {exc.log} With gas wanted: "
                "'0' and gas used: '0' : unknown request",
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
