"""Builders for the messages the provider and the devnet tools send.

Provider: MsgCreateBid, MsgCloseBid, MsgWithdrawLease, bank MsgSend, MsgCreateProvider,
MsgUpdateProvider. Tenant: MsgCreateDeployment, MsgCreateLease, MsgCloseDeployment.
Both: MsgCreateCertificate, MsgRevokeCertificate. Auditor: MsgSignProviderAttributes,
MsgDeleteProviderAttributes.
``from_command`` turns an :mod:`aktypes.events.tx` command message into its protobuf message.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message

from akchain._pb.akash.audit.v1 import audit_pb2
from akchain._pb.akash.base.deposit.v1 import deposit_pb2
from akchain._pb.akash.cert.v1 import cert_pb2
from akchain._pb.akash.deployment.v1 import deployment_pb2 as deployment_v1
from akchain._pb.akash.deployment.v1beta4 import deployment_pb2
from akchain._pb.akash.market.v1 import market_pb2 as market_v1
from akchain._pb.akash.market.v1beta5 import market_pb2
from akchain._pb.akash.provider.v1beta4 import provider_pb2
from akchain._pb.cosmos.bank.v1beta1 import tx_pb2 as bank_pb2
from akchain.convert import (
    attributes_pb,
    bid_id_pb,
    coin_pb,
    dec_coin_pb,
    deployment_id_pb,
    group_spec_pb,
    lease_id_pb,
    resources_pb,
)
from aktypes.attributes import Attribute
from aktypes.coin import Coin, DecCoin
from aktypes.events import (
    CloseBid,
    CreateBid,
    CreateCertificate,
    CreateProvider,
    LeaseClosedReason,
    RevokeCertificate,
    Send,
    TxMsg,
    UpdateProvider,
    WithdrawLease,
)
from aktypes.events.base import ResourceOffer
from aktypes.groupspec import GroupSpec
from aktypes.ids import BidID, DeploymentID, LeaseID


def _deposit(amount: Coin) -> deposit_pb2.Deposit:
    return deposit_pb2.Deposit(amount=coin_pb(amount), sources=[deposit_pb2.balance])


def create_bid(
    bid_id: BidID,
    price: DecCoin,
    deposit: Coin,
    offers: Sequence[ResourceOffer] = (),
    reclamation_window_seconds: int | None = None,
) -> market_pb2.MsgCreateBid:
    message = market_pb2.MsgCreateBid(
        id=bid_id_pb(bid_id),
        price=dec_coin_pb(price),
        deposit=_deposit(deposit),
        resources_offer=[
            market_pb2.ResourceOffer(resources=resources_pb(o.resources), count=o.count)
            for o in offers
        ],
    )
    if reclamation_window_seconds:
        message.reclamation_window.CopyFrom(Duration(seconds=reclamation_window_seconds))
    return message


def close_bid(
    bid_id: BidID, reason: LeaseClosedReason = LeaseClosedReason.UNSPECIFIED
) -> market_pb2.MsgCloseBid:
    return market_pb2.MsgCloseBid(id=bid_id_pb(bid_id), reason=reason.code)  # type: ignore[arg-type]


def withdraw_lease(lease_id: LeaseID) -> market_pb2.MsgWithdrawLease:
    return market_pb2.MsgWithdrawLease(id=lease_id_pb(lease_id))


def send(from_address: str, to_address: str, amount: Sequence[Coin]) -> bank_pb2.MsgSend:
    return bank_pb2.MsgSend(
        from_address=from_address, to_address=to_address, amount=[coin_pb(c) for c in amount]
    )


def create_deployment(
    deployment_id: DeploymentID, groups: Sequence[GroupSpec], version: bytes, deposit: Coin
) -> deployment_pb2.MsgCreateDeployment:
    return deployment_pb2.MsgCreateDeployment(
        id=deployment_id_pb(deployment_id),
        groups=[group_spec_pb(g) for g in groups],
        hash=version,
        deposit=_deposit(deposit),
    )


def update_deployment(
    deployment_id: DeploymentID, version: bytes
) -> deployment_pb2.MsgUpdateDeployment:
    return deployment_pb2.MsgUpdateDeployment(id=deployment_id_pb(deployment_id), hash=version)


def close_deployment(deployment_id: DeploymentID) -> deployment_pb2.MsgCloseDeployment:
    return deployment_pb2.MsgCloseDeployment(id=deployment_id_pb(deployment_id))


def create_lease(bid_id: BidID) -> market_pb2.MsgCreateLease:
    return market_pb2.MsgCreateLease(bid_id=bid_id_pb(bid_id))


def close_lease(
    lease_id: LeaseID, reason: LeaseClosedReason = LeaseClosedReason.OWNER
) -> market_pb2.MsgCloseLease:
    return market_pb2.MsgCloseLease(id=lease_id_pb(lease_id), reason=reason.code)  # type: ignore[arg-type]


def create_certificate(
    owner: str, cert_pem: bytes, pubkey_pem: bytes
) -> cert_pb2.MsgCreateCertificate:
    return cert_pb2.MsgCreateCertificate(owner=owner, cert=cert_pem, pubkey=pubkey_pem)


def revoke_certificate(owner: str, serial: str) -> cert_pb2.MsgRevokeCertificate:
    return cert_pb2.MsgRevokeCertificate(id=cert_pb2.ID(owner=owner, serial=serial))


def sign_provider_attributes(
    owner: str, auditor: str, attributes: Sequence[Attribute]
) -> audit_pb2.MsgSignProviderAttributes:
    return audit_pb2.MsgSignProviderAttributes(
        owner=owner, auditor=auditor, attributes=attributes_pb(attributes)
    )


def delete_provider_attributes(
    auditor: str, owner: str, keys: Sequence[str]
) -> audit_pb2.MsgDeleteProviderAttributes:
    """Withdraw ``auditor``'s signature from ``owner``'s attributes ``keys``; no keys: all of them.

    Note the order, auditor first (the signer), unlike :func:`sign_provider_attributes`.
    """
    return audit_pb2.MsgDeleteProviderAttributes(owner=owner, auditor=auditor, keys=list(keys))


def create_provider(
    owner: str, host_uri: str, attributes: Sequence[Attribute], email: str = "", website: str = ""
) -> provider_pb2.MsgCreateProvider:
    return provider_pb2.MsgCreateProvider(
        owner=owner,
        host_uri=host_uri,
        attributes=attributes_pb(attributes),
        info=provider_pb2.Info(email=email, website=website),
    )


def update_provider(
    owner: str, host_uri: str, attributes: Sequence[Attribute], email: str = "", website: str = ""
) -> provider_pb2.MsgUpdateProvider:
    """Replace a registered provider's host URI, attributes and contact info (all of them)."""
    return provider_pb2.MsgUpdateProvider(
        owner=owner,
        host_uri=host_uri,
        attributes=attributes_pb(attributes),
        info=provider_pb2.Info(email=email, website=website),
    )


def from_command(msg: TxMsg, *, sender: str) -> Message:
    """The protobuf message for one message of a ``BroadcastTx`` command."""
    if isinstance(msg, CreateBid):
        return create_bid(
            msg.bid_id, msg.price, msg.deposit, msg.resources_offer, msg.reclamation_window_seconds
        )
    if isinstance(msg, CloseBid):
        return close_bid(msg.bid_id, msg.reason)
    if isinstance(msg, WithdrawLease):
        return withdraw_lease(msg.lease_id)
    if isinstance(msg, Send):
        return send(sender, msg.to_address, msg.amount)
    if isinstance(msg, CreateCertificate):
        return create_certificate(sender, msg.cert_pem.encode(), msg.pubkey_pem.encode())
    if isinstance(msg, CreateProvider):
        return create_provider(sender, msg.host_uri, msg.attributes, msg.email, msg.website)
    if isinstance(msg, UpdateProvider):
        return update_provider(sender, msg.host_uri, msg.attributes, msg.email, msg.website)
    if isinstance(msg, RevokeCertificate):
        return revoke_certificate(sender, msg.serial)
    raise TypeError(f"no protobuf message for {type(msg).__name__}")  # pragma: no cover


MESSAGE_TYPES: dict[str, type[Message]] = {
    "/" + cls.DESCRIPTOR.full_name: cls
    for cls in (
        market_pb2.MsgCreateBid,
        market_pb2.MsgCloseBid,
        market_pb2.MsgCreateLease,
        market_pb2.MsgWithdrawLease,
        market_pb2.MsgCloseLease,
        deployment_pb2.MsgCreateDeployment,
        deployment_pb2.MsgUpdateDeployment,
        deployment_pb2.MsgCloseDeployment,
        cert_pb2.MsgCreateCertificate,
        cert_pb2.MsgRevokeCertificate,
        audit_pb2.MsgSignProviderAttributes,
        audit_pb2.MsgDeleteProviderAttributes,
        provider_pb2.MsgCreateProvider,
        provider_pb2.MsgUpdateProvider,
        bank_pb2.MsgSend,
    )
}
"""Every message type the devnet executes, by type URL."""

# Silence "imported but unused" for modules kept for their descriptors.
_ = (deployment_v1, market_v1)
