"""Chain events on ``akash.chain.events``, published once each by the chain relay.

Each carries its position in the chain, ``(height, tx_index, event_index)``, which is the
relay's idempotency key; ``tx_index`` is ``None`` for events emitted by the block itself
(for example a lease closed for insufficient funds while settling escrow).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from aktypes.address import AkashAddress
from aktypes.coin import DecCoin
from aktypes.events.base import HexHash, LeaseClosedReason, Payload
from aktypes.ids import BidID, DeploymentID, GroupID, LeaseID, OrderID

Height = Annotated[int, Field(ge=0)]


class ChainEvent(Payload):
    """Position of an event in the chain: the relay publishes each position once."""

    height: Height
    tx_index: Annotated[int, Field(ge=0)] | None = None
    event_index: Annotated[int, Field(ge=0)]

    @property
    def position(self) -> str:
        """``height/tx/event`` (``height/block/event`` for block events): a unique key."""
        tx = "block" if self.tx_index is None else str(self.tx_index)
        return f"{self.height}/{tx}/{self.event_index}"


class OrderCreated(ChainEvent):
    type: Literal["chain.order.created"] = "chain.order.created"
    order_id: OrderID


class OrderClosed(ChainEvent):
    type: Literal["chain.order.closed"] = "chain.order.closed"
    order_id: OrderID


class BidCreated(ChainEvent):
    type: Literal["chain.bid.created"] = "chain.bid.created"
    bid_id: BidID
    price: DecCoin


class BidClosed(ChainEvent):
    type: Literal["chain.bid.closed"] = "chain.bid.closed"
    bid_id: BidID


class LeaseCreated(ChainEvent):
    type: Literal["chain.lease.created"] = "chain.lease.created"
    lease_id: LeaseID
    price: DecCoin


class LeaseClosed(ChainEvent):
    type: Literal["chain.lease.closed"] = "chain.lease.closed"
    lease_id: LeaseID
    reason: LeaseClosedReason


class LeaseReclaimStarted(ChainEvent):
    type: Literal["chain.lease.reclaim_started"] = "chain.lease.reclaim_started"
    lease_id: LeaseID
    reason: LeaseClosedReason
    deadline: int


class DeploymentCreated(ChainEvent):
    type: Literal["chain.deployment.created"] = "chain.deployment.created"
    deployment_id: DeploymentID
    hash: HexHash


class DeploymentUpdated(ChainEvent):
    type: Literal["chain.deployment.updated"] = "chain.deployment.updated"
    deployment_id: DeploymentID
    hash: HexHash


class DeploymentClosed(ChainEvent):
    type: Literal["chain.deployment.closed"] = "chain.deployment.closed"
    deployment_id: DeploymentID


class GroupStarted(ChainEvent):
    type: Literal["chain.group.started"] = "chain.group.started"
    group_id: GroupID


class GroupPaused(ChainEvent):
    type: Literal["chain.group.paused"] = "chain.group.paused"
    group_id: GroupID


class GroupClosed(ChainEvent):
    type: Literal["chain.group.closed"] = "chain.group.closed"
    group_id: GroupID


class ProviderUpdated(ChainEvent):
    """A provider's on-chain record (host URI, attributes) changed."""

    type: Literal["chain.provider.updated"] = "chain.provider.updated"
    owner: AkashAddress


class AuditorAttributesChanged(ChainEvent):
    """An auditor signed or removed attributes of a provider."""

    type: Literal["chain.auditor.attributes_changed"] = "chain.auditor.attributes_changed"
    owner: AkashAddress
    auditor: AkashAddress
    action: Literal["signed", "deleted"]
