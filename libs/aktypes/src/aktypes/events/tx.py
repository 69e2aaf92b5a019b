"""The provider account's transaction pipeline: commands in, results out.

Any service asks for a chain transaction by publishing ``BroadcastTx`` on
``akash.provider.chain.tx`` with an idempotency ``key`` (for example
``create-bid/<order id>``); the chain relay broadcasts each key at most once and answers on
``akash.provider.chain.results`` with ``TxCommitted`` or ``TxFailed`` carrying that key.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from aktypes.address import AkashAddress
from aktypes.attributes import Attribute
from aktypes.coin import Coin, DecCoin
from aktypes.events.base import LeaseClosedReason, NonEmptyStr, Payload, ResourceOffer
from aktypes.ids import BidID, LeaseID


class _Msg(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class CreateBid(_Msg):
    """Bid on an order (Akash ``MsgCreateBid``)."""

    type: Literal["create_bid"] = "create_bid"
    bid_id: BidID
    price: DecCoin
    deposit: Coin
    resources_offer: list[ResourceOffer] = Field(default_factory=list)
    reclamation_window_seconds: Annotated[int, Field(ge=0)] | None = None


class CloseBid(_Msg):
    """Close one of our bids or leases (Akash ``MsgCloseBid``)."""

    type: Literal["close_bid"] = "close_bid"
    bid_id: BidID
    reason: LeaseClosedReason = LeaseClosedReason.UNSPECIFIED


class WithdrawLease(_Msg):
    """Settle a lease's escrow and collect the provider's earnings."""

    type: Literal["withdraw_lease"] = "withdraw_lease"
    lease_id: LeaseID


class Send(_Msg):
    """Send funds from the provider account (Cosmos bank ``MsgSend``)."""

    type: Literal["send"] = "send"
    to_address: AkashAddress
    amount: Annotated[list[Coin], Field(min_length=1)]


class CreateCertificate(_Msg):
    """Publish the provider's certificate on chain (Akash ``MsgCreateCertificate``): one PEM
    ``CERTIFICATE`` and its ``EC PUBLIC KEY`` PEM."""

    type: Literal["create_certificate"] = "create_certificate"
    cert_pem: NonEmptyStr
    pubkey_pem: NonEmptyStr


class CreateProvider(_Msg):
    """Register the provider account on chain (Akash ``MsgCreateProvider``): its host URI,
    attributes and contact info, as ``provider.yaml`` gives them."""

    type: Literal["create_provider"] = "create_provider"
    host_uri: NonEmptyStr
    attributes: list[Attribute] = Field(default_factory=list)
    email: str = ""
    website: str = ""


class UpdateProvider(_Msg):
    """Replace the registered provider's host URI, attributes and info, all of them (Akash
    ``MsgUpdateProvider``)."""

    type: Literal["update_provider"] = "update_provider"
    host_uri: NonEmptyStr
    attributes: list[Attribute] = Field(default_factory=list)
    email: str = ""
    website: str = ""


class RevokeCertificate(_Msg):
    """Revoke one of the provider's certificates on chain (Akash ``MsgRevokeCertificate``),
    by its serial (decimal, as the chain lists it)."""

    type: Literal["revoke_certificate"] = "revoke_certificate"
    serial: Annotated[str, Field(pattern=r"^[0-9]+$")]


TxMsg = Annotated[
    CreateBid
    | CloseBid
    | WithdrawLease
    | Send
    | CreateCertificate
    | RevokeCertificate
    | CreateProvider
    | UpdateProvider,
    Field(discriminator="type"),
]


class BroadcastTx(Payload):
    """Broadcast one transaction; ``key`` makes repeats of the same command harmless."""

    type: Literal["tx.broadcast"] = "tx.broadcast"
    key: NonEmptyStr
    msgs: Annotated[list[TxMsg], Field(min_length=1)]
    memo: str = ""


class TxCommitted(Payload):
    type: Literal["tx.committed"] = "tx.committed"
    key: NonEmptyStr
    tx_hash: NonEmptyStr
    height: Annotated[int, Field(ge=0)]
    gas_wanted: Annotated[int, Field(ge=0)] = 0
    gas_used: Annotated[int, Field(ge=0)] = 0


class TxFailed(Payload):
    """The transaction will not be committed; ``code``/``log`` are the chain's own."""

    type: Literal["tx.failed"] = "tx.failed"
    key: NonEmptyStr
    code: int
    codespace: str = ""
    log: str = ""
    tx_hash: str | None = None
    attempts: Annotated[int, Field(ge=1)] = 1
