"""Events of the bid engine, the manifest service and the balance service."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from aktypes.address import AkashAddress
from aktypes.coin import Coin, DecCoin
from aktypes.events.base import HexHash, NonEmptyStr, Payload, ResourceOffer
from aktypes.groupspec import GroupSpec
from aktypes.ids import BidID, DeploymentID, LeaseID, OrderID
from aktypes.manifest.models import Group, Manifest

# -- bid engine (akash.provider.bidengine.events) -------------------------------------------


class DeclineReason(BaseModel):
    """One reason not to bid: a stable ``code`` and a sentence for people."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    code: NonEmptyStr  # e.g. attributes_mismatch, insufficient_capacity, price_above_max
    message: str = ""


class BidPlaced(Payload):
    type: Literal["bid.placed"] = "bid.placed"
    bid_id: BidID
    price: DecCoin
    deposit: Coin


class BidDeclined(Payload):
    type: Literal["bid.declined"] = "bid.declined"
    order_id: OrderID
    reasons: Annotated[list[DeclineReason], Field(min_length=1)]


class LeaseWon(Payload):
    type: Literal["lease.won"] = "lease.won"
    lease_id: LeaseID
    group: GroupSpec
    price: DecCoin


class BidCloseCause(StrEnum):
    LEASE_LOST = "lease_lost"
    ORDER_CLOSED = "order_closed"
    BID_TIMEOUT = "bid_timeout"
    CLOSED_EXTERNALLY = "closed_externally"
    MANIFEST_TIMEOUT = "manifest_timeout"


class ProviderBidClosed(Payload):
    """The bid engine is done with one of its bids (the chain's ``BidClosed`` is separate)."""

    type: Literal["bid.closed"] = "bid.closed"
    bid_id: BidID
    cause: BidCloseCause


class ScreenBid(Payload):
    """Would the bid engine bid on this group, and at what price? Reserves and bids nothing.

    Sent on ``akash.provider.bidengine.commands``; answered with :class:`BidScreened`.
    ``owner`` is the tenant the group would come from (tenant lists, price scripts).
    """

    type: Literal["bidengine.screen"] = "bidengine.screen"
    group: GroupSpec
    owner: str = ""


class BidScreened(Payload):
    """Reply to :class:`ScreenBid`: every reason not to bid, or the offer and the price."""

    type: Literal["bidengine.screened"] = "bidengine.screened"
    passed: bool
    reasons: list[DeclineReason] = Field(default_factory=list)
    offer: list[ResourceOffer] = Field(default_factory=list)
    price: DecCoin | None = None


# -- manifest (akash.provider.manifest.events) ----------------------------------------------


class ManifestReceived(Payload):
    """A valid manifest arrived for one of our leases: deploy ``group`` for ``lease_id``."""

    type: Literal["manifest.received"] = "manifest.received"
    lease_id: LeaseID
    version: HexHash
    group: Group


class ManifestRejected(Payload):
    """A manifest refused, on the events stream and as the reply to ``SubmitManifest``.

    Codes: ``invalid``, ``version_mismatch``, ``cross_validation``, ``hostname_not_allowed``
    (422 at the gateway); ``no_lease``, ``deployment_not_found`` (404); ``chain_unavailable``
    (503).
    """

    type: Literal["manifest.rejected"] = "manifest.rejected"
    deployment_id: DeploymentID
    code: NonEmptyStr
    reason: str = ""


class SubmitManifest(Payload):
    """A tenant's manifest for one of its deployments (command, from the gateway)."""

    type: Literal["manifest.submit"] = "manifest.submit"
    deployment_id: DeploymentID
    manifest: Manifest


class ManifestAccepted(Payload):
    """Reply to ``SubmitManifest``: the manifest goes to every lease of ours in ``leases``."""

    type: Literal["manifest.accepted"] = "manifest.accepted"
    deployment_id: DeploymentID
    version: HexHash
    leases: list[LeaseID] = Field(default_factory=list)


class ManifestTimedOut(Payload):
    type: Literal["manifest.timed_out"] = "manifest.timed_out"
    lease_id: LeaseID


# -- balance (akash.provider.balance.events) ------------------------------------------------


class WithdrawalRequested(Payload):
    type: Literal["withdrawal.requested"] = "withdrawal.requested"
    lease_id: LeaseID
    reason: Literal["out_of_funds", "periodic", "lease_closing"]


class LeaseOutOfFunds(Payload):
    type: Literal["lease.out_of_funds"] = "lease.out_of_funds"
    lease_id: LeaseID
    balance: DecCoin
    height: Annotated[int, Field(ge=0)]


class SweepRequested(Payload):
    """Move earnings above the configured floor to the operator's cold wallet."""

    type: Literal["sweep.requested"] = "sweep.requested"
    to_address: AkashAddress
    amount: Coin
