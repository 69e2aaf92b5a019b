"""The cluster service process: inventory, reservations, status, on the service runtime.

Start: build the inventory backend (``null``: a nodes file; ``kube``: watches through the
official client, awaited until its first full listing), then answer the commands on
``akash.provider.cluster.commands`` and publish, whenever the inventory changes and every
``AP_CLUSTER_STATUS_INTERVAL``, an ``InventoryChanged`` event (on change only) and the
retained status. A lease of ours closed on chain releases its reservation. Deployments
join this process in a later stage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from akbus import ConnectionLost
from akcluster import metrics
from akcluster.adapters.null import load_inventory
from akcluster.domain.inventory import Inventory
from akcluster.domain.placement import CommitLevels
from akcluster.errors import InventoryFileError
from akcluster.handlers import Reservations
from akcluster.settings import ClusterSettings
from akservice import Runtime, ServiceSpec
from aktypes.events import (
    ClusterStatus,
    InventoryChanged,
    LeaseClosed,
    LookupReservation,
    ReserveResources,
    ResourceTotals,
    ScreenGroup,
    UnreserveResources,
)
from aktypes.events.streams import CHAIN_EVENTS, CLUSTER_COMMANDS, CLUSTER_EVENTS

log = logging.getLogger("akcluster")


class InventoryView:
    """The latest inventory, and a signal that it changed."""

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


def _export(prefix: str, totals: ResourceTotals, gauge: Any) -> None:
    gauge.labels(f"{prefix}cpu").set(totals.cpu)
    gauge.labels(f"{prefix}gpu").set(totals.gpu)
    gauge.labels(f"{prefix}memory").set(totals.memory)
    gauge.labels(f"{prefix}storage-ephemeral").set(totals.storage_ephemeral)
    for cls, size in totals.storage.items():
        gauge.labels(f"{prefix}storage-{cls}").set(size)


async def publish_status(
    rt: Runtime[ClusterSettings], view: InventoryView, res: Reservations
) -> None:
    """Status every interval; an ``InventoryChanged`` event when the inventory changed."""
    last_event: InventoryChanged | None = None
    while True:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(rt.settings.cluster_status_interval):
                await view.changed.wait()
        view.changed.clear()
        inventory = view.get()
        if rt.stopping.is_set():
            return
        if inventory is None:
            continue
        with contextlib.suppress(ConnectionLost):
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
            event = InventoryChanged(
                nodes=len(inventory.nodes), allocatable=allocatable, available=inventory.available()
            )
            if event != last_event:
                await rt.bus.publish(CLUSTER_EVENTS, event)
                last_event = event
            await rt.bus.publish_status(
                "cluster",
                ClusterStatus(
                    leases=active,
                    allocatable=allocatable,
                    available=available,
                    reservations_pending=pending,
                    reservations_active=active,
                ),
            )
            metrics.ALLOCATABLE.labels("nodes").set(len(inventory.nodes))
            _export("", allocatable, metrics.ALLOCATABLE)
            _export("", available, metrics.AVAILABLE)
            metrics.ALLOCATABLE.labels("endpoints").set(rt.settings.cluster_node_ports)
            metrics.AVAILABLE.labels("endpoints").set(free.node_ports)
            metrics.RESERVATIONS.labels("pending", "quantity").set(pending)
            metrics.RESERVATIONS.labels("active", "quantity").set(active)
            held = ledger.pending_totals()
            for quantity, value in (
                ("cpu", held.cpu),
                ("gpu", held.gpu),
                ("memory", held.memory),
                ("storage-ephemeral", held.storage_ephemeral),
                ("endpoints", ledger.node_ports),
            ):
                metrics.RESERVATIONS.labels("pending", quantity).set(value)


async def start(rt: Runtime[ClusterSettings]) -> None:
    settings = rt.settings
    view = InventoryView()
    if settings.cluster_backend == "null":
        view.update(load_inventory(settings.cluster_inventory_file))
        log.info("null inventory: %d node(s)", len(view.current.nodes) if view.current else 0)
    else:
        from akcluster.adapters.kube import KubeInventory  # noqa: PLC0415 - only for kube

        kube = KubeInventory.from_kubeconfig(
            settings.kubeconfig, storage_pools=settings.storage_pools(), on_change=view.update
        )
        rt.readiness(lambda: [f"Kubernetes: {kube.error}"] if kube.error else [])
        rt.supervise(kube.run(), "inventory")
        await rt.wait_for(
            "the first inventory from Kubernetes",
            lambda: kube.wait_synced(5.0),
            retry_on=(TimeoutError,),
        )
    res = Reservations(
        rt.bus,
        view.get,
        levels=CommitLevels(
            cpu=settings.overcommit_pct_cpu,
            memory=settings.overcommit_pct_mem,
            storage=settings.overcommit_pct_storage,
        ),
        node_ports=settings.cluster_node_ports,
        ips=settings.cluster_leased_ips,
    )
    commands = rt.subscriber(CLUSTER_COMMANDS)
    commands.add(ReserveResources, res.reserve)
    commands.add(UnreserveResources, res.unreserve)
    commands.add(LookupReservation, res.lookup)
    commands.add(ScreenGroup, res.screen)
    chain = rt.subscriber(CHAIN_EVENTS)
    chain.add(LeaseClosed, res.on_lease_closed)
    rt.supervise(publish_status(rt, view, res), "status")


SPEC = ServiceSpec(
    name="cluster",
    title="cluster service",
    summary="inventory and reservations of the provider's cluster",
    distribution="akcluster",
    settings=ClusterSettings,
    health_listen="0.0.0.0:8092",
    start=start,
    fatal=(InventoryFileError,),
)
