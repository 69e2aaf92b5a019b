"""Retained status snapshots, one stream per service: ``akash.provider.<service>.status``.

The latest entry wins; the gateway aggregates them for ``/status`` and gRPC ``GetStatus``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aktypes.events.base import Count, Payload
from aktypes.events.cluster import ResourceTotals


class ChainStatus(Payload):
    type: Literal["chain.status"] = "chain.status"
    height: Count
    node_height: Count
    pending_txs: Count = 0
    last_error: str = ""
    provider: str = ""  # the provider account the relay signs for
    leader: str = ""  # the relay holding the account's lease (its consumer name)

    @property
    def lag(self) -> int:
        """Blocks the relay is behind the node."""
        return max(self.node_height - self.height, 0)


class BidEngineStatus(Payload):
    type: Literal["bidengine.status"] = "bidengine.status"
    orders: Count


class NodeTotals(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str
    allocatable: ResourceTotals = ResourceTotals()
    available: ResourceTotals = ResourceTotals()
    gpu: str = ""  # vendor/model[/memory/interface], "" without GPUs
    storage_classes: list[str] = Field(default_factory=list)


MismatchDirection = Literal["offered_not_advertised", "advertised_not_offered"]
MismatchKind = Literal["storage", "gpu", "ip_lease"]


class CapabilityMismatch(BaseModel):
    """One difference between what the cluster offers and the provider's on-chain
    capability attributes (:mod:`aktypes.capabilities`). ``offered_not_advertised``: orders
    for it get no bid (lost orders); ``advertised_not_offered``: orders for it are bid on
    and cannot be placed (failed bids). ``attributes`` are the ones missing from the chain,
    or the ones the chain advertises in vain."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    direction: MismatchDirection
    kind: MismatchKind
    subject: str  # "beta3 (persistent)", "nvidia/h100/80Gi/sxm", "leased IPs"
    attributes: dict[str, str] = Field(default_factory=dict)
    message: str = ""


class CapabilitiesCheck(BaseModel):
    """The capabilities check on the cluster's status: ``checked`` once the provider's
    attributes were read from the chain; ``error`` why the last read failed; ``advertise``
    the capability attributes the current inventory calls for."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    checked: bool = False
    provider: str = ""
    error: str = ""
    mismatches: list[CapabilityMismatch] = Field(default_factory=list)
    advertise: dict[str, str] = Field(default_factory=dict)


class ClusterStatus(Payload):
    """The cluster's retained status: ``leases`` counts deployed leases; ``active`` and
    ``pending`` hold each reservation's resources; ``kube_version`` is the API server's
    ``/version`` (empty on the null backend); ``capabilities`` the capabilities check."""

    type: Literal["cluster.status"] = "cluster.status"
    leases: Count
    allocatable: ResourceTotals = ResourceTotals()
    available: ResourceTotals = ResourceTotals()
    reservations_pending: Count = 0
    reservations_active: Count = 0
    nodes: list[NodeTotals] = Field(default_factory=list)
    storage: dict[str, Count] = Field(default_factory=dict)  # free bytes per storage class
    active: list[ResourceTotals] = Field(default_factory=list)
    pending: list[ResourceTotals] = Field(default_factory=list)
    public_hostname: str = ""
    kube_version: dict[str, str] = Field(default_factory=dict)
    capabilities: CapabilitiesCheck = CapabilitiesCheck()


class ManifestStatus(Payload):
    type: Literal["manifest.status"] = "manifest.status"
    deployments: Count


class BalanceStatus(Payload):
    """The balance service's retained status: monitored leases, what withdrawals collected,
    what the leases still owe and what sweeps sent (per denom, since the service's state
    began), the provider account's balances, and the denoms below ``AP_MINIMUM_BALANCE``."""

    type: Literal["balance.status"] = "balance.status"
    leases: Count
    last_error: str = ""
    earned: dict[str, Count] = Field(default_factory=dict)
    unpaid: dict[str, Count] = Field(default_factory=dict)  # owed as of each lease's last check
    swept: dict[str, Count] = Field(default_factory=dict)
    balances: dict[str, Count] = Field(default_factory=dict)
    below_minimum: list[str] = Field(default_factory=list)
    pending: Count = 0  # transactions (withdrawals, sweeps) without a result yet


class GatewayStatus(Payload):
    """The gateway's own status: the tenants' open websockets and shells among them, how
    many tenants hold them, and the gateway's version."""

    type: Literal["gateway.status"] = "gateway.status"
    websockets: Count = 0
    shells: Count = 0
    tenants: Count = 0
    version: str = ""


class OperatorStatus(Payload):
    """An operator's status (the hostname and IP operators'): what it manages, counted by
    state (``routed``, ``conflict``…; ``in_use``, ``capacity``…), and its last error."""

    type: Literal["operator.status"] = "operator.status"
    operator: str
    figures: dict[str, Count] = Field(default_factory=dict)
    last_error: str = ""
    leader: str = ""  # the replica holding the operator's Lease (its consumer name)
