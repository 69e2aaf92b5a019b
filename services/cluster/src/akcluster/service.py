"""The cluster service process: inventory, reservations, deployments, status.

Start: take the inventory (``null``: a nodes file; ``kube``: the inventory operator's, from
its retained status, the first one awaited) and the leased IPs it may offer (the IP
operator's pool, from its retained status), build the deployment backend (``kube``: the
akash.network CRDs installed, then applies through the official client; ``null``: in
memory), reconcile the lease records with what the cluster holds
(:meth:`~akcluster.deployments.Deployments.recover`), then answer the commands on
``akash.provider.cluster.commands``, deploy what ``ManifestReceived`` brings, tear down
what ``LeaseClosed`` ends, keep each lease's Kubernetes events on its stream (``kube``:
:mod:`akcluster.leaseevents`), and publish, whenever the inventory changes and every
``AP_CLUSTER_STATUS_INTERVAL``, an ``InventoryChanged`` event (on change only) and the
retained status, with the capabilities check (:mod:`akcluster.capabilities`: the inventory
against the provider's on-chain capability attributes, computed again whenever either
changes), and compare, at start and every ``AP_CLUSTER_RECONCILE_INTERVAL``, the leases,
deployments and reservations with the chain's leases and bids of the provider, repairing
what a missed chain event left behind (:mod:`akcluster.reconcile`). Ingresses and
leased-IP Services are the hostname and IP operators' work: the cluster declares
ProviderHosts and ProviderLeasedIPs for them.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

from akbus import ConnectionLost
from akchain.lcd import LCDClient
from akcluster import metrics
from akcluster.adapters.chain import ProviderAttributes, ProviderMarket
from akcluster.adapters.null import load_inventory
from akcluster.capabilities import Capabilities, disabled
from akcluster.deployments import Backend, Deployments, MonitorPolicy
from akcluster.deployments.statuses import LeaseStatuses
from akcluster.domain.inventory import GPUModel, Inventory, from_operator
from akcluster.domain.objects import BuildSettings, crds
from akcluster.domain.placement import CommitLevels
from akcluster.errors import InventoryFileError, Unavailable
from akcluster.leaseevents import LeaseEvents
from akcluster.reconcile import Reconciliation
from akcluster.reservations import Reservations
from akcluster.settings import ClusterSettings
from akservice import Runtime, ServiceSpec
from akservice.runtime import GC_THRESHOLDS
from aktypes.events import (
    CapabilitiesCheck,
    CheckHostnames,
    ClusterStatus,
    GetLeaseManifest,
    GetLeaseStatus,
    InventoryChanged,
    InventoryCluster,
    LeaseClosed,
    LeaseTornDown,
    LookupReservation,
    ManifestReceived,
    MigrateEndpoints,
    MigrateHostnames,
    NodeTotals,
    OperatorStatus,
    ProviderUpdated,
    ReserveResources,
    ResourceTotals,
    ScreenGroup,
    UnreserveResources,
)
from aktypes.events.streams import (
    CHAIN_EVENTS,
    CLUSTER_COMMANDS,
    CLUSTER_EVENTS,
    MANIFEST_EVENTS,
)

log = logging.getLogger("akcluster")


class InventoryView:
    """The latest inventory, and a signal to compute the status again (set when the
    inventory, the IP operator's pool or the provider's on-chain attributes changed)."""

    def __init__(self, initial: Inventory | None = None) -> None:
        self.current = initial
        self.changed = asyncio.Event()
        if initial is not None:
            self.changed.set()

    def update(self, inventory: Inventory) -> None:
        self.current = inventory
        self.changed.set()

    def get(self) -> Inventory | None:
        return self.current

    async def first(self) -> Inventory:
        """The inventory once there is one; TimeoutError after a few seconds without."""
        async with asyncio.timeout(5.0):
            while self.current is None:
                self.changed.clear()
                await self.changed.wait()
        return self.current


async def follow_operators(
    rt: Runtime[ClusterSettings],
    view: InventoryView | None,
    res: Reservations,
    wake: asyncio.Event | None = None,
) -> None:
    """Take what the operators publish on their retained statuses (every replica sees every
    one, a restarted one starts from the latest): each inventory of the inventory operator,
    in order, into ``view`` (None: the inventory is not the operator's), and the size of the
    IP operator's pool, the leased IPs reservations may offer (a change sets ``wake``). The
    operators publish their latest again now and then, to show they are alive: an inventory
    generation already taken is skipped."""
    taken: int | None = None
    services = ["ip"] if view is None else ["inventory", "ip"]
    async for service, envelope in rt.bus.follow_statuses(services):
        payload = envelope.payload
        if service == "ip" and isinstance(payload, OperatorStatus):
            capacity = payload.figures.get("capacity")
            if capacity is not None and capacity != res.ips:
                res.ips = capacity
                if wake is not None:
                    wake.set()
                log.info("leased IPs: %d address(es) in the IP operator's pool", capacity)
        elif view is not None and isinstance(payload, InventoryCluster):
            if payload.generation == taken:
                continue
            generation = taken = payload.generation
            view.update(from_operator(payload))
            log.info(
                "inventory %d from the inventory operator: %d node(s)",
                generation,
                len(payload.nodes),
                extra={"unknown_gpus": payload.unknown_gpus} if payload.unknown_gpus else None,
            )


def _export(prefix: str, totals: ResourceTotals, gauge: Any) -> None:
    gauge.labels(f"{prefix}cpu").set(totals.cpu)
    gauge.labels(f"{prefix}gpu").set(totals.gpu)
    gauge.labels(f"{prefix}memory").set(totals.memory)
    gauge.labels(f"{prefix}storage-ephemeral").set(totals.storage_ephemeral)
    for cls, size in totals.storage.items():
        gauge.labels(f"{prefix}storage-{cls}").set(size)


def _gpu_name(model: GPUModel | None) -> str:
    if model is None:
        return ""
    parts = [model.vendor, model.model, model.memory, model.interface]
    return "/".join(p for p in parts if p)


def _totals(capacity: Any, storage: dict[str, int] | None = None) -> ResourceTotals:
    return ResourceTotals(
        cpu=max(capacity.cpu, 0),
        gpu=max(capacity.gpu, 0),
        memory=max(capacity.memory, 0),
        storage_ephemeral=max(capacity.ephemeral, 0),
        storage=storage or {},
    )


class Status:
    """The cluster's status from its inventory, reservations and leases, with the
    capabilities check; an ``InventoryChanged`` event when the inventory changed."""

    def __init__(
        self,
        rt: Runtime[ClusterSettings],
        view: InventoryView,
        res: Reservations,
        deployments: Deployments,
        kube_version: dict[str, str],
        *,
        capabilities: Capabilities | None = None,
    ) -> None:
        self.rt, self.view, self.res, self.deployments = rt, view, res, deployments
        self.kube_version = kube_version
        self.capabilities = capabilities
        self.last_event: InventoryChanged | None = None

    async def compute(self) -> ClusterStatus | None:
        rt, res, deployments, kube_version = self.rt, self.res, self.deployments, self.kube_version
        inventory = self.view.get()
        if inventory is None:
            return None
        ledger = await res.refresh()
        free = res.free(ledger, inventory)
        allocatable = inventory.allocatable()
        available = ResourceTotals(
            cpu=sum(c.cpu for c in free.node_free.values()),
            gpu=sum(c.gpu for c in free.node_free.values()),
            memory=sum(c.memory for c in free.node_free.values()),
            storage_ephemeral=sum(c.ephemeral for c in free.node_free.values()),
            storage=dict(free.storage),
        )
        pending, active = ledger.counts()
        leases = await deployments.active_count()
        metrics.MANAGERS.set(leases)
        held: dict[str, list[ResourceTotals]] = {"pending": [], "active": []}
        for reservation in ledger.reservations.values():
            held[reservation.state].append(reservation.totals)
        event = InventoryChanged(
            nodes=len(inventory.nodes), allocatable=allocatable, available=inventory.available()
        )
        if event != self.last_event:
            await rt.bus.publish(CLUSTER_EVENTS, event)
            self.last_event = event
        status = ClusterStatus(
            leases=leases,
            allocatable=allocatable,
            available=available,
            reservations_pending=pending,
            reservations_active=active,
            nodes=[
                NodeTotals(
                    name=node.name,
                    allocatable=_totals(node.allocatable),
                    available=_totals(free.node_free.get(node.name, node.available)),
                    gpu=_gpu_name(node.gpu_model),
                    storage_classes=sorted(node.storage_classes),
                )
                for node in inventory.nodes
            ],
            storage=dict(free.storage),
            active=held["active"],
            pending=held["pending"],
            public_hostname=rt.settings.cluster_public_hostname,
            kube_version=kube_version,
            capabilities=self._check(inventory),
        )
        metrics.ALLOCATABLE.labels("nodes").set(len(inventory.nodes))
        _export("", allocatable, metrics.ALLOCATABLE)
        _export("", available, metrics.AVAILABLE)
        metrics.ALLOCATABLE.labels("endpoints").set(rt.settings.cluster_node_ports)
        metrics.AVAILABLE.labels("endpoints").set(free.node_ports)
        metrics.RESERVATIONS.labels("pending", "quantity").set(pending)
        metrics.RESERVATIONS.labels("active", "quantity").set(active)
        pending_totals = ledger.pending_totals()
        for quantity, value in (
            ("cpu", pending_totals.cpu),
            ("gpu", pending_totals.gpu),
            ("memory", pending_totals.memory),
            ("storage-ephemeral", pending_totals.storage_ephemeral),
            ("endpoints", ledger.node_ports),
        ):
            metrics.RESERVATIONS.labels("pending", quantity).set(value)
        return status

    def _check(self, inventory: Inventory) -> CapabilitiesCheck:
        if self.capabilities is None:
            return disabled()
        return self.capabilities.check(inventory, self.res.ips)


async def start(rt: Runtime[ClusterSettings]) -> None:
    # start-up reads every lease and object back (millions of short-lived objects for ten
    # thousand leases): collect as rarely as the running service does, not every 700
    gc.set_threshold(*GC_THRESHOLDS)
    settings = rt.settings
    view = InventoryView()
    if settings.cluster_backend == "null":
        view.update(load_inventory(settings.cluster_inventory_file))
        log.info("null inventory: %d node(s)", len(view.current.nodes) if view.current else 0)
    res = Reservations(
        rt.bus,
        view.get,
        levels=commit_levels(settings),
        node_ports=settings.cluster_node_ports,
        ips=0,  # until the IP operator's pool is known
    )
    kube = settings.cluster_backend == "kube"
    rt.supervise(follow_operators(rt, view if kube else None, res, view.changed), "operators")
    backend = _deployment_backend(settings)
    kube_version: dict[str, str] = {}
    if kube:
        await rt.wait_for("the akash.network resources", lambda: backend.install(crds()))
        kube_version = await rt.wait_for("the API server's version", backend.server_version)
    deployments = Deployments(
        rt.bus,
        backend,
        res,
        build=build_settings(settings),
        levels=res.levels,
        monitor=MonitorPolicy(
            max_retries=settings.monitor_max_retries,
            retry_period=settings.monitor_retry_period,
            retry_jitter=settings.monitor_retry_period_jitter,
            healthcheck_period=settings.monitor_healthcheck_period,
            healthcheck_jitter=settings.monitor_healthcheck_period_jitter,
        ),
        blocked_hostnames=settings.blocked_hostnames(),
        concurrency=settings.cluster_deploy_concurrency,
        activate_reservations=kube,
    )
    counts = await rt.wait_for(
        "the leases held by the cluster",
        deployments.recover,
        retry_on=(ConnectionLost, Unavailable),
    )
    log.info(
        "recovered %d lease(s) unchanged, %d to deploy again, %d queued; adopted %d from "
        "Kubernetes; %d orphan namespace(s) to remove",
        counts["unchanged"],
        counts["reapplied"],
        counts["queued"],
        counts["adopted"],
        counts["orphans"],
    )
    if kube:
        await rt.wait_for(
            "the inventory operator's first inventory", view.first, retry_on=(TimeoutError,)
        )
    commands = rt.subscriber(CLUSTER_COMMANDS)
    commands.add(ReserveResources, res.reserve)
    commands.add(UnreserveResources, res.unreserve)
    commands.add(LookupReservation, res.lookup)
    commands.add(ScreenGroup, res.screen)
    commands.add(GetLeaseStatus, deployments.lease_status)
    commands.add(GetLeaseManifest, deployments.lease_manifest)
    commands.add(CheckHostnames, deployments.check_hostnames)
    commands.add(MigrateHostnames, deployments.migrate_hostnames)
    commands.add(MigrateEndpoints, deployments.migrate_endpoints)
    manifests = rt.subscriber(MANIFEST_EVENTS)
    manifests.add(ManifestReceived, deployments.on_manifest_received)
    chain = rt.subscriber(CHAIN_EVENTS)
    chain.add(LeaseClosed, deployments.on_lease_closed)
    capabilities = None
    lcd = None
    if settings.cluster_capabilities_check or settings.cluster_reconcile:
        lcd = await rt.resource(LCDClient(settings.api))
    if settings.cluster_reconcile and lcd is not None:
        reconciliation = Reconciliation(rt, deployments, res, ProviderMarket(lcd))
        rt.supervise(reconciliation.run(), "reconciliation")
    if settings.cluster_capabilities_check and lcd is not None:
        capabilities = Capabilities(rt, ProviderAttributes(lcd), view.changed)
        chain.add(ProviderUpdated, capabilities.on_provider_updated)
        rt.supervise(capabilities.run(settings.cluster_capabilities_interval), "capabilities")
    rt.supervise(deployments.run(rt.stopping), "deployments")
    if kube:
        await _keep_lease_events(rt)
    if kube and settings.cluster_lease_status_interval > 0:
        await follow_lease_statuses(rt, deployments)
    status = Status(rt, view, res, deployments, kube_version, capabilities=capabilities)
    rt.publish_status(status.compute, rt.settings.cluster_status_interval, wake=view.changed)


async def _keep_lease_events(rt: Runtime[ClusterSettings]) -> None:
    """Each lease's Kubernetes events written to its stream as they come, and the stream
    ended with the lease (:mod:`akcluster.leaseevents`)."""
    from akcluster.adapters.kube_events import KubeLeaseEvents  # noqa: PLC0415 - only for kube

    settings = rt.settings
    history = LeaseEvents(
        rt.bus,
        maxlen=settings.cluster_lease_events_maxlen,
        retention_s=settings.cluster_lease_events_retention,
    )
    source = await rt.resource(KubeLeaseEvents.from_kubeconfig(settings.kubeconfig))
    rt.supervise(history.run(), "lease-events")
    rt.supervise(source.follow(history.take), "lease-events-watch")
    rt.subscriber(CLUSTER_EVENTS).add(LeaseTornDown, history.on_torn_down)


async def follow_lease_statuses(rt: Runtime[ClusterSettings], deployments: Deployments) -> None:
    """Each lease's status kept from Kubernetes watches and published for the gateway
    (:mod:`akcluster.deployments.statuses`)."""
    from akcluster.adapters.kube_watch import LeaseWatches  # noqa: PLC0415 - only for kube

    statuses = LeaseStatuses(
        deployments.context, rt.bus, confirm_every=rt.settings.cluster_lease_status_interval
    )
    watches = await rt.resource(
        LeaseWatches.from_kubeconfig(rt.settings.kubeconfig, statuses.touched, statuses.relisted)
    )
    rt.supervise(watches.run(), "lease watches")
    rt.supervise(statuses.run(lambda: watches.live), "lease statuses")


def build_settings(settings: ClusterSettings) -> BuildSettings:
    """How the settings want a lease's objects built."""
    return BuildSettings(
        public_hostname=settings.cluster_public_hostname,
        network_policies=settings.deployment_network_policies_enabled,
        ingress_domain=settings.ingress_domain(),
        pull_secret=settings.docker_image_pull_secrets_name,
        manifest_namespace=settings.k8s_manifest_ns,
        runtime_class=settings.deployment_runtime_class,
    )


def commit_levels(settings: ClusterSettings) -> CommitLevels:
    return CommitLevels(
        cpu=settings.overcommit_pct_cpu,
        memory=settings.overcommit_pct_mem,
        storage=settings.overcommit_pct_storage,
    )


def _deployment_backend(settings: ClusterSettings) -> Backend:
    if settings.cluster_backend == "null":
        from akcluster.adapters.null_deploy import NullDeployments  # noqa: PLC0415

        return NullDeployments()
    from akcluster.adapters.kube_deploy import KubeDeployments  # noqa: PLC0415 - only for kube

    return KubeDeployments.from_kubeconfig(
        settings.kubeconfig, manifest_namespace=settings.k8s_manifest_ns
    )


SPEC = ServiceSpec(
    name="cluster",
    title="cluster service",
    summary="inventory, reservations and deployments of the provider's cluster",
    distribution="akcluster",
    settings=ClusterSettings,
    health_listen="0.0.0.0:8092",
    start=start,
    fatal=(InventoryFileError,),
)
