"""The cluster service: commands it answers and events it publishes.

Commands travel on ``akash.provider.cluster.commands`` with ``reply_to`` and
``correlation_id`` in their envelope; the cluster answers on the caller's reply stream with
one of the ``*Reply`` payloads below. Events go to ``akash.provider.cluster.events``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from aktypes.events.base import Count, HexHash, NonEmptyStr, Payload, ResourceOffer
from aktypes.gojson import GoModel
from aktypes.groupspec import GroupSpec
from aktypes.ids import LeaseID, OrderID
from aktypes.manifest.models import Group

# -- commands ----------------------------------------------------------------------------


class ReserveResources(Payload):
    """Hold capacity for an order's group until unreserved or the lease is won."""

    type: Literal["cluster.reserve"] = "cluster.reserve"
    order_id: OrderID
    group: GroupSpec


class UnreserveResources(Payload):
    type: Literal["cluster.unreserve"] = "cluster.unreserve"
    order_id: OrderID


class LookupReservation(Payload):
    type: Literal["cluster.lookup_reservation"] = "cluster.lookup_reservation"
    order_id: OrderID
    group_name: str = ""


class ScreenGroup(Payload):
    """Would this group fit right now? Reserves nothing (answers "why no bid")."""

    type: Literal["cluster.screen"] = "cluster.screen"
    group: GroupSpec


class GetLeaseStatus(Payload):
    """The status of a lease's workload, read from Kubernetes (one ``service`` if set)."""

    type: Literal["cluster.lease_status"] = "cluster.lease_status"
    lease_id: LeaseID
    service: str = ""


class GetLeaseManifest(Payload):
    """The manifest group deployed for a lease, as stored with the deployment."""

    type: Literal["cluster.lease_manifest"] = "cluster.lease_manifest"
    lease_id: LeaseID


class CheckHostnames(Payload):
    """May these hostnames be used by this lease's deployment? Reserves nothing."""

    type: Literal["cluster.check_hostnames"] = "cluster.check_hostnames"
    lease_id: LeaseID
    hostnames: list[str] = Field(default_factory=list)


class MigrateHostnames(Payload):
    """Move hostnames the owner's leases hold here to the owner's lease of deployment
    ``dseq``, group ``gseq`` (Akash's ``POST /hostname/migrate``)."""

    type: Literal["cluster.migrate_hostnames"] = "cluster.migrate_hostnames"
    owner: str
    hostnames: list[str] = Field(min_length=1)
    dseq: int = Field(ge=1)
    gseq: int = Field(ge=1)


class MigrateEndpoints(Payload):
    """Move leased-IP endpoints (the SDL's ``endpoints:`` names) the owner's leases hold
    here to the owner's lease of deployment ``dseq``, group ``gseq`` (Akash's
    ``POST /endpoint/migrate``); only the named endpoints move."""

    type: Literal["cluster.migrate_endpoints"] = "cluster.migrate_endpoints"
    owner: str
    endpoints: list[str] = Field(min_length=1)
    dseq: int = Field(ge=1)
    gseq: int = Field(ge=1)


# -- replies -----------------------------------------------------------------------------


class ResourcesReserved(Payload):
    """Reply to ``ReserveResources``: ``allocated`` names concrete resources (GPU model…)."""

    type: Literal["cluster.reserved"] = "cluster.reserved"
    order_id: OrderID
    allocated: list[ResourceOffer] = Field(default_factory=list)


class ReservationFailed(Payload):
    type: Literal["cluster.reservation_failed"] = "cluster.reservation_failed"
    order_id: OrderID
    code: NonEmptyStr  # e.g. insufficient_capacity, invalid_resources
    reason: str = ""


class ResourcesUnreserved(Payload):
    type: Literal["cluster.unreserved"] = "cluster.unreserved"
    order_id: OrderID
    found: bool


class ReservationFound(Payload):
    type: Literal["cluster.reservation_found"] = "cluster.reservation_found"
    order_id: OrderID
    found: bool
    allocated: list[ResourceOffer] = Field(default_factory=list)


class GroupScreened(Payload):
    type: Literal["cluster.screened"] = "cluster.screened"
    passed: bool
    reasons: list[str] = Field(default_factory=list)
    allocated: list[ResourceOffer] = Field(default_factory=list)


class Termination(GoModel):
    """How a service's container last ended (its ``lastState.terminated``): ``reason``
    (``Error``, ``OOMKilled``…), ``exit_code``, ``finished_at`` (RFC 3339, "" unknown)."""

    reason: str = ""
    exit_code: int = 0
    finished_at: str = ""


class ServiceStatus(GoModel):
    """One service of a lease, with Akash's field names (``GET …/status``). ``restarts``
    (its containers' restarts, all pods together) and ``last_termination`` (the latest of
    its containers' last terminations, null when none ended) are additions of ours."""

    name: str
    available: int = 0
    total: int = 0
    uris: list[str] | None = None
    observed_generation: int = 0
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    restarts: int = 0
    last_termination: Termination | None = None


class ForwardedPort(GoModel):
    """A service port reachable on a node port of the cluster's public host."""

    _omitempty = frozenset({"host"})

    host: str = ""
    port: int
    external_port: Annotated[int, Field(alias="externalPort")]
    proto: str
    name: str


class LeasedIPStatus(GoModel):
    port: Annotated[int, Field(alias="Port")]
    external_port: Annotated[int, Field(alias="ExternalPort")]
    protocol: Annotated[str, Field(alias="Protocol")]
    ip: Annotated[str, Field(alias="IP")]


class LeaseStatusReport(Payload):
    """Reply to ``GetLeaseStatus``."""

    type: Literal["cluster.lease_status_report"] = "cluster.lease_status_report"
    lease_id: LeaseID
    services: dict[str, ServiceStatus] = Field(default_factory=dict)
    forwarded_ports: dict[str, list[ForwardedPort]] = Field(default_factory=dict)
    ips: dict[str, list[LeasedIPStatus]] = Field(default_factory=dict)


class LeaseStatusChanged(Payload):
    """A lease's status as the cluster has it now, published on
    ``akash.provider.cluster.lease-status`` when it changes; ``checked_at`` (Unix seconds)
    is when Kubernetes was read for it."""

    type: Literal["cluster.lease_status_changed"] = "cluster.lease_status_changed"
    lease_id: LeaseID
    services: dict[str, ServiceStatus] = Field(default_factory=dict)
    forwarded_ports: dict[str, list[ForwardedPort]] = Field(default_factory=dict)
    ips: dict[str, list[LeasedIPStatus]] = Field(default_factory=dict)
    checked_at: float


class LeaseStatusGone(Payload):
    """The lease has no status to serve from memory any more (closed, not deployed)."""

    type: Literal["cluster.lease_status_gone"] = "cluster.lease_status_gone"
    lease_id: LeaseID


class LeaseStatusesConfirmed(Payload):
    """Every lease status published before this one, but those of ``pending``, is still
    current as of ``at`` (Unix seconds): the cluster's watches were live and every change
    they told before ``at`` has been published."""

    type: Literal["cluster.lease_statuses_confirmed"] = "cluster.lease_statuses_confirmed"
    at: float
    pending: list[LeaseID] = Field(default_factory=list)


class LeaseManifestReport(Payload):
    """Reply to ``GetLeaseManifest``; ``version`` is ``""`` when the cluster does not know
    it (a lease taken over from the Go provider, whose Manifest resource keeps none)."""

    type: Literal["cluster.lease_manifest_report"] = "cluster.lease_manifest_report"
    lease_id: LeaseID
    version: HexHash | Literal[""]
    group: Group


class HostnamesChecked(Payload):
    """Reply to ``CheckHostnames``: each refused hostname with why."""

    type: Literal["cluster.hostnames_checked"] = "cluster.hostnames_checked"
    refused: dict[str, str] = Field(default_factory=dict)


class Migrated(Payload):
    """Reply to a migration: what moved, and to which lease."""

    type: Literal["cluster.migrated"] = "cluster.migrated"
    destination: LeaseID
    transferred: list[str] = Field(default_factory=list)


class MigrationRefused(Payload):
    """Reply to a migration that moved nothing: ``not_found`` (no such destination lease
    here), ``invalid`` (the destination does not declare them, or nothing holds them) or
    ``forbidden`` (another tenant's)."""

    type: Literal["cluster.migration_refused"] = "cluster.migration_refused"
    code: Literal["not_found", "invalid", "forbidden"]
    message: str = ""


class LeaseQueryFailed(Payload):
    """A lease query that could not be answered: ``not_found`` (lease, deployment or
    service), ``unavailable`` (Kubernetes cannot be reached) or ``internal``."""

    type: Literal["cluster.lease_query_failed"] = "cluster.lease_query_failed"
    lease_id: LeaseID
    code: Literal["not_found", "unavailable", "internal"]
    message: str = ""


# -- events ------------------------------------------------------------------------------


class DeploymentApplied(Payload):
    """A lease's manifest group was applied to Kubernetes."""

    type: Literal["deployment.applied"] = "deployment.applied"
    lease_id: LeaseID
    manifest_version: str = ""
    services: list[str] = Field(default_factory=list)


class DeploymentHealth(Payload):
    type: Literal["deployment.health"] = "deployment.health"
    lease_id: LeaseID
    state: Literal["deployed", "pending", "failed"]
    message: str = ""


class LeaseTornDown(Payload):
    type: Literal["lease.torn_down"] = "lease.torn_down"
    lease_id: LeaseID


class ResourceTotals(BaseModel):
    """Amounts of each resource: CPU in millicpu, memory and storage in bytes."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    cpu: Count = 0
    gpu: Count = 0
    memory: Count = 0
    storage_ephemeral: Count = 0
    storage: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)


class InventoryChanged(Payload):
    type: Literal["inventory.changed"] = "inventory.changed"
    nodes: Count
    allocatable: ResourceTotals
    available: ResourceTotals


class LeaseFundsMonitor(Payload):
    """Start (``add``) or stop (``remove``) watching a lease's escrow."""

    type: Literal["lease.funds_monitor"] = "lease.funds_monitor"
    lease_id: LeaseID
    action: Literal["add", "remove"]
    is_new_lease: bool = False
