"""``Event``: every payload that can appear on a stream, as one discriminated union.

Discriminated by the payloads' ``type`` wire tag; :data:`EVENT_ADAPTER` validates any of
them from JSON (what :func:`aktypes.events.envelope.envelope_from_fields` reads an entry's
payload with). A module of its own, so the envelope can use it without importing the
package that re-exports both.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from aktypes.events.chain import (
    AuditorAttributesChanged,
    BidClosed,
    BidCreated,
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
    GetLeaseManifest,
    GetLeaseStatus,
    GroupScreened,
    HostnamesChecked,
    InventoryChanged,
    LeaseFundsMonitor,
    LeaseManifestReport,
    LeaseQueryFailed,
    LeaseStatusChanged,
    LeaseStatusesConfirmed,
    LeaseStatusGone,
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
    ScreenGroup,
    UnreserveResources,
)
from aktypes.events.deadletter import DeadLetter
from aktypes.events.inventory import (
    InventoryCluster,
    InventoryNodes,
    InventoryStorage,
)
from aktypes.events.provider import (
    BidDeclined,
    BidPlaced,
    BidScreened,
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
from aktypes.events.reconcile import ReconcileRepaired
from aktypes.events.status import (
    BalanceStatus,
    BidEngineStatus,
    ChainStatus,
    ClusterStatus,
    GatewayStatus,
    ManifestStatus,
    OperatorStatus,
)
from aktypes.events.tx import (
    BroadcastTx,
    TxCommitted,
    TxFailed,
)

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
    | LeaseStatusChanged
    | LeaseStatusGone
    | LeaseStatusesConfirmed
    | InventoryChanged
    | LeaseFundsMonitor
    | BidPlaced
    | BidDeclined
    | LeaseWon
    | ProviderBidClosed
    | ReconcileRepaired
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
