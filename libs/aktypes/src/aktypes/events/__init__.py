"""Every event and command the services exchange, as one discriminated union.

``Event`` is the union of all payloads, discriminated by their ``type`` wire tag;
``EVENT_ADAPTER`` validates any of them from JSON. ``STREAM_TYPES`` says which payloads
belong on which stream (status snapshots and replies are checked by their own helpers).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from aktypes.events import streams
from aktypes.events.base import LeaseClosedReason, Payload, ResourceOffer
from aktypes.events.chain import (
    AuditorAttributesChanged,
    BidClosed,
    BidCreated,
    ChainEvent,
    DeploymentClosed,
    DeploymentCreated,
    DeploymentUpdated,
    GroupClosed,
    GroupPaused,
    GroupStarted,
    LeaseClosed,
    LeaseCreated,
    LeaseReclaimStarted,
    OrderClosed,
    OrderCreated,
    ProviderUpdated,
)
from aktypes.events.cluster import (
    CheckHostnames,
    DeploymentApplied,
    DeploymentHealth,
    ForwardedPort,
    GetLeaseManifest,
    GetLeaseStatus,
    GroupScreened,
    HostnamesChecked,
    InventoryChanged,
    LeasedIPStatus,
    LeaseFundsMonitor,
    LeaseManifestReport,
    LeaseQueryFailed,
    LeaseStatusReport,
    LeaseTornDown,
    LookupReservation,
    Migrated,
    MigrateEndpoints,
    MigrateHostnames,
    MigrationRefused,
    ReservationFailed,
    ReservationFound,
    ReserveResources,
    ResourcesReserved,
    ResourcesUnreserved,
    ResourceTotals,
    ScreenGroup,
    ServiceStatus,
    UnreserveResources,
)
from aktypes.events.deadletter import DeadLetter
from aktypes.events.envelope import Envelope, InvalidEntryError, envelope_from_fields
from aktypes.events.inventory import (
    Amounts,
    ExcludedNode,
    GPUInfo,
    InventoryCluster,
    InventoryNodes,
    InventoryStorage,
    NodeInventory,
    StorageInventory,
)
from aktypes.events.provider import (
    BidCloseCause,
    BidDeclined,
    BidPlaced,
    BidScreened,
    DeclineReason,
    LeaseOutOfFunds,
    LeaseWon,
    ManifestAccepted,
    ManifestReceived,
    ManifestRejected,
    ManifestTimedOut,
    ProviderBidClosed,
    ScreenBid,
    SubmitManifest,
    SweepRequested,
    WithdrawalRequested,
)
from aktypes.events.status import (
    BalanceStatus,
    BidEngineStatus,
    ChainStatus,
    ClusterStatus,
    GatewayStatus,
    ManifestStatus,
    NodeTotals,
    OperatorStatus,
)
from aktypes.events.tx import (
    BroadcastTx,
    CloseBid,
    CreateBid,
    CreateCertificate,
    Send,
    TxCommitted,
    TxFailed,
    TxMsg,
    WithdrawLease,
)

CHAIN_EVENT_TYPES = (
    OrderCreated,
    OrderClosed,
    BidCreated,
    BidClosed,
    LeaseCreated,
    LeaseClosed,
    LeaseReclaimStarted,
    DeploymentCreated,
    DeploymentUpdated,
    DeploymentClosed,
    GroupStarted,
    GroupPaused,
    GroupClosed,
    ProviderUpdated,
    AuditorAttributesChanged,
)
CLUSTER_COMMAND_TYPES = (
    ReserveResources,
    UnreserveResources,
    LookupReservation,
    ScreenGroup,
    GetLeaseStatus,
    GetLeaseManifest,
    CheckHostnames,
    MigrateHostnames,
    MigrateEndpoints,
)
CLUSTER_REPLY_TYPES = (
    ResourcesReserved,
    ReservationFailed,
    ResourcesUnreserved,
    ReservationFound,
    GroupScreened,
    LeaseStatusReport,
    LeaseManifestReport,
    HostnamesChecked,
    Migrated,
    MigrationRefused,
    LeaseQueryFailed,
)
STATUS_TYPES = (
    ChainStatus,
    BidEngineStatus,
    ClusterStatus,
    ManifestStatus,
    BalanceStatus,
    InventoryCluster,
    GatewayStatus,
    OperatorStatus,
)

STREAM_TYPES: dict[str, tuple[type[Payload], ...]] = {
    streams.CHAIN_EVENTS: CHAIN_EVENT_TYPES,
    streams.CHAIN_TX: (BroadcastTx,),
    streams.CHAIN_RESULTS: (TxCommitted, TxFailed),
    streams.CLUSTER_COMMANDS: CLUSTER_COMMAND_TYPES,
    streams.CLUSTER_EVENTS: (
        DeploymentApplied,
        DeploymentHealth,
        LeaseTornDown,
        InventoryChanged,
        LeaseFundsMonitor,
    ),
    streams.BIDENGINE_EVENTS: (BidPlaced, BidDeclined, LeaseWon, ProviderBidClosed),
    streams.BIDENGINE_COMMANDS: (ScreenBid,),
    streams.MANIFEST_EVENTS: (ManifestReceived, ManifestRejected, ManifestTimedOut),
    streams.MANIFEST_COMMANDS: (SubmitManifest,),
    streams.BALANCE_EVENTS: (WithdrawalRequested, LeaseOutOfFunds, SweepRequested),
    streams.INVENTORY_EVENTS: (InventoryCluster, InventoryNodes, InventoryStorage),
}

Event = Annotated[
    OrderCreated
    | OrderClosed
    | BidCreated
    | BidClosed
    | LeaseCreated
    | LeaseClosed
    | LeaseReclaimStarted
    | DeploymentCreated
    | DeploymentUpdated
    | DeploymentClosed
    | GroupStarted
    | GroupPaused
    | GroupClosed
    | ProviderUpdated
    | AuditorAttributesChanged
    | BroadcastTx
    | TxCommitted
    | TxFailed
    | ReserveResources
    | UnreserveResources
    | LookupReservation
    | ScreenGroup
    | ResourcesReserved
    | ReservationFailed
    | ResourcesUnreserved
    | ReservationFound
    | GroupScreened
    | GetLeaseStatus
    | GetLeaseManifest
    | CheckHostnames
    | MigrateHostnames
    | MigrateEndpoints
    | LeaseStatusReport
    | LeaseManifestReport
    | HostnamesChecked
    | Migrated
    | MigrationRefused
    | LeaseQueryFailed
    | DeploymentApplied
    | DeploymentHealth
    | LeaseTornDown
    | InventoryChanged
    | LeaseFundsMonitor
    | BidPlaced
    | BidDeclined
    | LeaseWon
    | ProviderBidClosed
    | ScreenBid
    | BidScreened
    | ManifestReceived
    | ManifestRejected
    | ManifestTimedOut
    | SubmitManifest
    | ManifestAccepted
    | WithdrawalRequested
    | LeaseOutOfFunds
    | SweepRequested
    | ChainStatus
    | BidEngineStatus
    | ClusterStatus
    | ManifestStatus
    | BalanceStatus
    | GatewayStatus
    | OperatorStatus
    | InventoryCluster
    | InventoryNodes
    | InventoryStorage
    | DeadLetter,
    Field(discriminator="type"),
]
"""Any payload that can appear on a stream."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

__all__ = [
    "CHAIN_EVENT_TYPES",
    "CLUSTER_COMMAND_TYPES",
    "CLUSTER_REPLY_TYPES",
    "EVENT_ADAPTER",
    "STATUS_TYPES",
    "STREAM_TYPES",
    "Amounts",
    "AuditorAttributesChanged",
    "BalanceStatus",
    "BidCloseCause",
    "BidClosed",
    "BidCreated",
    "BidDeclined",
    "BidEngineStatus",
    "BidPlaced",
    "BidScreened",
    "BroadcastTx",
    "ChainEvent",
    "ChainStatus",
    "CheckHostnames",
    "CloseBid",
    "ClusterStatus",
    "CreateBid",
    "CreateCertificate",
    "DeadLetter",
    "DeclineReason",
    "DeploymentApplied",
    "DeploymentClosed",
    "DeploymentCreated",
    "DeploymentHealth",
    "DeploymentUpdated",
    "Envelope",
    "Event",
    "ExcludedNode",
    "ForwardedPort",
    "GPUInfo",
    "GatewayStatus",
    "GetLeaseManifest",
    "GetLeaseStatus",
    "GroupClosed",
    "GroupPaused",
    "GroupScreened",
    "GroupStarted",
    "HostnamesChecked",
    "InvalidEntryError",
    "InventoryChanged",
    "InventoryCluster",
    "InventoryNodes",
    "InventoryStorage",
    "LeaseClosed",
    "LeaseClosedReason",
    "LeaseCreated",
    "LeaseFundsMonitor",
    "LeaseManifestReport",
    "LeaseOutOfFunds",
    "LeaseQueryFailed",
    "LeaseReclaimStarted",
    "LeaseStatusReport",
    "LeaseTornDown",
    "LeaseWon",
    "LeasedIPStatus",
    "LookupReservation",
    "ManifestAccepted",
    "ManifestReceived",
    "ManifestRejected",
    "ManifestStatus",
    "ManifestTimedOut",
    "MigrateEndpoints",
    "MigrateHostnames",
    "Migrated",
    "MigrationRefused",
    "NodeInventory",
    "NodeTotals",
    "OperatorStatus",
    "OrderClosed",
    "OrderCreated",
    "Payload",
    "ProviderBidClosed",
    "ProviderUpdated",
    "ReservationFailed",
    "ReservationFound",
    "ReserveResources",
    "ResourceOffer",
    "ResourceTotals",
    "ResourcesReserved",
    "ResourcesUnreserved",
    "ScreenBid",
    "ScreenGroup",
    "Send",
    "ServiceStatus",
    "StorageInventory",
    "SubmitManifest",
    "SweepRequested",
    "TxCommitted",
    "TxFailed",
    "TxMsg",
    "UnreserveResources",
    "WithdrawLease",
    "WithdrawalRequested",
    "envelope_from_fields",
    "streams",
]
