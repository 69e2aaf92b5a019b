"""What the chain's queries return, read from the LCD's JSON into typed models.

The JSON is Cosmos's gRPC-gateway form: proto field names, ``uint64``/``int64`` as strings,
enums by name, bytes in base64, LegacyDec as decimal text (``"1.500000000000000000"``).
Each model has a ``from_json`` that reads exactly that form and ignores fields it does not
know, so a newer node's extra fields do not break the provider.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from akchain.convert import (
    bid_id_from_json,
    dec_coin_from_json,
    deployment_id_from_json,
    group_id_from_json,
    group_spec_from_json,
    lease_id_from_json,
    order_id_from_json,
    resources_from_json,
)
from aktypes.attributes import Attribute
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events.base import LeaseClosedReason, ResourceOffer
from aktypes.groupspec import GroupSpec
from aktypes.ids import BidID, DeploymentID, GroupID, LeaseID, OrderID

Json = Mapping[str, Any]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _attributes(items: Any) -> list[Attribute]:
    return [Attribute(key=a["key"], value=a.get("value", "")) for a in items or ()]


def _coin(data: Json | None) -> Coin:
    data = data or {}
    return Coin(denom=data.get("denom") or "uakt", amount=int(data.get("amount") or 0))


def _dec_coin(data: Json | None, denom: str = "uakt") -> DecCoin:
    data = data or {}
    return DecCoin(denom=data.get("denom") or denom, amount=Dec(data.get("amount") or "0"))


class Account(_Model):
    """A Cosmos ``BaseAccount``: what a signer needs to sign its next transaction."""

    address: str
    account_number: int
    sequence: int
    public_key: bytes = b""  # compressed secp256k1; empty until the account has signed a tx

    @classmethod
    def from_json(cls, data: Json) -> Self:
        account = data.get("account", data)
        if "base_account" in account:  # vesting and module accounts wrap a BaseAccount
            account = account["base_account"]
        key = account.get("pub_key") or {}
        secp256k1 = str(key.get("@type", "")).endswith("secp256k1.PubKey")
        return cls(
            address=account["address"],
            account_number=int(account.get("account_number") or 0),
            sequence=int(account.get("sequence") or 0),
            public_key=base64.b64decode(key.get("key") or "") if secp256k1 else b"",
        )


class Order(_Model):
    id: OrderID
    state: str
    spec: GroupSpec
    created_at: int

    @classmethod
    def from_json(cls, data: Json) -> Self:
        return cls(
            id=order_id_from_json(data["id"]),
            state=data["state"],
            spec=group_spec_from_json(data["spec"]),
            created_at=int(data.get("created_at") or 0),
        )


class Bid(_Model):
    id: BidID
    state: str
    price: DecCoin
    created_at: int
    resources_offer: list[ResourceOffer] = Field(default_factory=list)

    @classmethod
    def from_json(cls, data: Json) -> Self:
        bid = data.get("bid", data)
        return cls(
            id=bid_id_from_json(bid["id"]),
            state=bid["state"],
            price=dec_coin_from_json(bid["price"]),
            created_at=int(bid.get("created_at") or 0),
            resources_offer=[
                ResourceOffer(
                    resources=resources_from_json(o["resources"]), count=int(o.get("count") or 0)
                )
                for o in bid.get("resources_offer") or ()
            ],
        )


class EscrowPayment(_Model):
    """One lease's payment stream out of a deployment's escrow account."""

    account: str
    xid: str
    owner: str
    state: str
    rate: DecCoin
    balance: DecCoin
    unsettled: DecCoin
    withdrawn: Coin

    @classmethod
    def from_json(cls, data: Json) -> Self:
        state = data.get("state") or {}
        ident = data.get("id") or {}
        return cls(
            account=(ident.get("aid") or {}).get("xid", ""),
            xid=ident.get("xid", ""),
            owner=state.get("owner", ""),
            state=state.get("state", "invalid"),
            rate=_dec_coin(state.get("rate")),
            balance=_dec_coin(state.get("balance")),
            unsettled=_dec_coin(state.get("unsettled")),
            withdrawn=_coin(state.get("withdrawn")),
        )


class Lease(_Model):
    id: LeaseID
    state: str
    price: DecCoin
    created_at: int
    closed_on: int = 0
    reason: LeaseClosedReason | None = None
    payment: EscrowPayment | None = None

    @classmethod
    def from_json(cls, data: Json) -> Self:
        lease = data.get("lease", data)
        reason = lease.get("reason")
        payment = data.get("escrow_payment")
        return cls(
            id=lease_id_from_json(lease["id"]),
            state=lease["state"],
            price=dec_coin_from_json(lease["price"]),
            created_at=int(lease.get("created_at") or 0),
            closed_on=int(lease.get("closed_on") or 0),
            reason=LeaseClosedReason(reason)
            if reason and reason != "lease_closed_invalid"
            else None,
            payment=EscrowPayment.from_json(payment) if payment else None,
        )


class EscrowAccount(_Model):
    """A deployment's (or a bid's) escrow account: its funds and when it was last settled."""

    scope: str
    xid: str
    owner: str
    state: str
    settled_at: int
    funds: list[DecCoin]
    transferred: list[DecCoin]

    @classmethod
    def from_json(cls, data: Json) -> Self:
        state = data.get("state") or {}
        ident = data.get("id") or {}
        return cls(
            scope=ident.get("scope", "invalid"),
            xid=ident.get("xid", ""),
            owner=state.get("owner", ""),
            state=state.get("state", "invalid"),
            settled_at=int(state.get("settled_at") or 0),
            funds=[_dec_coin(f) for f in state.get("funds") or ()],
            transferred=[_dec_coin(f) for f in state.get("transferred") or ()],
        )

    def balance(self, denom: str) -> Dec:
        return sum((f.amount for f in self.funds if f.denom == denom), Dec(0))


class Group(_Model):
    id: GroupID
    state: str
    spec: GroupSpec
    created_at: int

    @classmethod
    def from_json(cls, data: Json) -> Self:
        return cls(
            id=group_id_from_json(data["id"]),
            state=data["state"],
            spec=group_spec_from_json(data["group_spec"]),
            created_at=int(data.get("created_at") or 0),
        )


class Deployment(_Model):
    """A deployment with its groups and escrow account, as ``deployments/info`` returns it."""

    id: DeploymentID
    state: str
    hash: str  # hex of the manifest version
    created_at: int
    groups: list[Group]
    escrow_account: EscrowAccount | None = None

    @classmethod
    def from_json(cls, data: Json) -> Self:
        deployment = data["deployment"]
        escrow = data.get("escrow_account")
        return cls(
            id=deployment_id_from_json(deployment["id"]),
            state=deployment["state"],
            hash=base64.b64decode(deployment.get("hash") or "").hex(),
            created_at=int(deployment.get("created_at") or 0),
            groups=[Group.from_json(g) for g in data.get("groups") or ()],
            escrow_account=EscrowAccount.from_json(escrow) if escrow else None,
        )


class Provider(_Model):
    owner: str
    host_uri: str
    attributes: list[Attribute]
    email: str = ""
    website: str = ""

    @classmethod
    def from_json(cls, data: Json) -> Self:
        provider = data.get("provider", data)
        info = provider.get("info") or {}
        return cls(
            owner=provider["owner"],
            host_uri=provider.get("host_uri", ""),
            attributes=_attributes(provider.get("attributes")),
            email=info.get("email", ""),
            website=info.get("website", ""),
        )


class AuditedAttributes(_Model):
    """Attributes of a provider signed by one auditor."""

    owner: str
    auditor: str
    attributes: list[Attribute]

    @classmethod
    def from_json(cls, data: Json) -> Self:
        return cls(
            owner=data["owner"],
            auditor=data["auditor"],
            attributes=_attributes(data.get("attributes")),
        )


class Certificate(_Model):
    owner: str
    serial: str
    state: str
    cert: bytes  # PEM
    pubkey: bytes  # PEM

    @classmethod
    def from_json(cls, data: Json, owner: str = "") -> Self:
        cert = data.get("certificate") or {}
        return cls(
            owner=owner,
            serial=data.get("serial", ""),
            state=cert.get("state", "invalid"),
            cert=base64.b64decode(cert.get("cert") or ""),
            pubkey=base64.b64decode(cert.get("pubkey") or ""),
        )


class NodeStatus(_Model):
    """CometBFT ``/status``: who the node is and how far it has got."""

    chain_id: str
    latest_height: int
    latest_time: str
    catching_up: bool
    earliest_height: int = 1

    @classmethod
    def from_json(cls, data: Json) -> Self:
        sync = data["sync_info"]
        return cls(
            chain_id=data["node_info"]["network"],
            latest_height=int(sync["latest_block_height"]),
            latest_time=sync.get("latest_block_time", ""),
            catching_up=bool(sync.get("catching_up", False)),
            earliest_height=int(sync.get("earliest_block_height") or 1),
        )


class TxResult(_Model):
    """A transaction's outcome: from ``broadcast_tx_sync`` (``height`` 0) or once committed."""

    hash: str
    code: int
    codespace: str = ""
    log: str = ""
    height: int = 0
    gas_wanted: int = 0
    gas_used: int = 0
    events: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.code == 0

    @classmethod
    def from_json(cls, data: Json) -> Self:
        result = data.get("tx_result", data)
        return cls(
            hash=str(data.get("hash", "")).upper(),
            code=int(result.get("code") or 0),
            codespace=result.get("codespace") or "",
            log=result.get("log") or "",
            height=int(data.get("height") or 0),
            gas_wanted=int(result.get("gas_wanted") or 0),
            gas_used=int(result.get("gas_used") or 0),
            events=list(result.get("events") or ()),
        )
