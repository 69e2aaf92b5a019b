"""From the tables to the rest of the provider: the inventory published, the nodes labelled.

A change in the tables wakes :meth:`Publisher.run`; it waits ``AP_INVENTORY_DEBOUNCE``
(0.2 s) so that a burst of events (a Deployment's pods starting) makes one inventory, then:

1. builds the inventory; if it differs from the last one (whatever the generation), the
   generation grows by one, ``/v1/inventory`` and its watchers have it at once, and
   ``akash.provider.inventory.events`` gets ``inventory.nodes`` (the nodes that changed or
   left), ``inventory.storage`` (when the pools changed) and ``inventory.cluster``, then
   the retained status;
2. merge-patches the ``akash.network*`` labels of each node whose labels differ from what
   the inventory says (an excluded node loses them all) — and only those: a restarted
   operator that finds everything as it left it writes nothing, not even an event (it
   continues from the generation of the retained status).

A publication or label write that fails (Redis or the API server away) is tried again a
second later; problems with a node's GPUs or labels are logged once each.
"""

from __future__ import annotations

import asyncio
import logging
import re

from akbus import Bus, ConnectionLost
from akoperators.adapters.kube import Kube
from akoperators.domain.gpus import GPURegistry
from akoperators.domain.inventory import (
    Discovery,
    InventoryConfig,
    label_patch,
    node_changes,
    same,
)
from akoperators.errors import KubeError
from akoperators.inventory import metrics
from akoperators.inventory.state import State
from aktypes.events import InventoryCluster, InventoryNodes, InventoryStorage, Payload
from aktypes.events.streams import INVENTORY_EVENTS

log = logging.getLogger("akoperators.inventory")

RETRY_S = 1.0


class Publisher:
    """The latest inventory, its publication on the bus, and the node labels."""

    def __init__(
        self,
        *,
        bus: Bus,
        kube: Kube,
        state: State,
        config: InventoryConfig,
        registry: GPURegistry,
        debounce_s: float,
        label_nodes: bool = True,
        retained: InventoryCluster | None = None,
    ) -> None:
        self.bus, self.kube, self.state = bus, kube, state
        self.config, self.registry = config, registry
        self.debounce_s = debounce_s
        self.label_nodes = label_nodes
        self.current: InventoryCluster | None = None  # what /v1/inventory serves
        self.on_bus: InventoryCluster | None = retained  # what readers of the bus have
        self.generation = retained.generation if retained is not None else 0
        self.synced = False  # a first pass published the inventory and labelled the nodes
        self._told: set[str] = set()
        self._tick = asyncio.Event()  # set, and replaced, at every new inventory

    def continue_from(self, retained: InventoryCluster | None) -> None:
        """Carry on from the inventory last published on the bus, read once this replica
        leads (a standby's reading would be stale by then)."""
        self.on_bus = retained
        self.generation = retained.generation if retained is not None else 0

    # -- for the REST API -------------------------------------------------------------------
    def not_ready(self) -> list[str]:
        """Ready once a first pass published the inventory and labelled every node."""
        if self.synced:
            return []
        if not self.state.listed:
            return ["inventory: nodes, pods, claims and storage classes not listed yet"]
        if self.current is None:
            return ["inventory: not computed yet"]
        return ["inventory: not published and labelled yet (Redis or the API server failing)"]

    async def next_change(self, after: int, stopping: asyncio.Event) -> InventoryCluster | None:
        """The inventory once its generation is past ``after``; None when stopping."""
        while not stopping.is_set():
            current = self.current
            if current is not None and current.generation != after:
                return current
            tick = self._tick
            waiters = [asyncio.ensure_future(tick.wait()), asyncio.ensure_future(stopping.wait())]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
        return None

    # -- the loop ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Until cancelled: after each change, publish and label (see the module)."""
        first = True
        while True:
            await self.state.changed.wait()
            if not first:
                await asyncio.sleep(self.debounce_s)
            first = False
            self.state.changed.clear()
            if not await self.once():
                await asyncio.sleep(RETRY_S)
                self.state.changed.set()

    async def once(self) -> bool:
        """One pass; False if something must be tried again."""
        discovery = self.state.discovery(self.config, self.registry)
        self._tell(discovery)
        self._update(discovery.cluster)
        published = await self._publish()
        labelled = await self._label(discovery) if self.label_nodes else True
        if published and labelled and not self.synced:
            self.synced = True
            log.info("inventory published and nodes labelled: ready")
        return published and labelled

    def _update(self, found: InventoryCluster) -> None:
        known = self.current or self.on_bus
        if known is not None and same(known, found):
            if self.current is None:
                self.current = known  # as the last incarnation left it: nothing to tell
                _metrics(known)
                self._wake()
            return
        self.generation += 1
        self.current = found.model_copy(update={"generation": self.generation})
        _metrics(self.current)
        self._wake()
        log.info(
            "inventory changed",
            extra={
                "generation": self.generation,
                "nodes": len(found.nodes),
                "excluded": len(found.excluded),
                "gpus": sum(g.count for n in found.nodes for g in n.gpus),
            },
        )

    def _wake(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    async def published(self) -> InventoryCluster | None:
        """The inventory last published (None: none yet), to be published again as the
        operator's status now and then, so that its age says the operator is alive."""
        return self.on_bus

    async def _publish(self) -> bool:
        current = self.current
        if current is None or current == self.on_bus:
            return True
        before = self.on_bus
        changed, removed = node_changes(before.nodes if before else [], current.nodes)
        events: list[Payload] = []
        if changed or removed:
            events.append(
                InventoryNodes(changed=changed, removed=removed, generation=current.generation)
            )
        if before is None or before.storage != current.storage:
            events.append(InventoryStorage(storage=current.storage, generation=current.generation))
        events.append(current)
        try:
            await self.bus.publish_many(INVENTORY_EVENTS, events)
            await self.bus.publish_status("inventory", current)
        except ConnectionLost as exc:
            log.warning("cannot publish the inventory: %s", exc)
            return False
        self.on_bus = current
        metrics.PUBLISHED.inc()
        return True

    async def _label(self, discovery: Discovery) -> bool:
        ok = True
        for name, wanted in discovery.labels.items():
            row = self.state.nodes.rows.get(name)
            if row is None:
                continue
            patch = label_patch(row["metadata"]["labels"], wanted)
            if not patch:
                continue
            try:
                node = await self.kube.patch(
                    f"/api/v1/nodes/{name}", {"metadata": {"labels": patch}}
                )
            except KubeError as exc:
                if exc.status == 404:
                    continue  # gone meanwhile: its deletion is on its way
                metrics.LABEL_WRITES.labels("failed").inc()
                log.warning("cannot label node %s: %s", name, exc, extra={"node": name})
                ok = False
                continue
            self.state.nodes.upsert(node)  # our own write: no need to look again
            metrics.LABEL_WRITES.labels("written").inc()
            log.info(
                "node labels written",
                extra={
                    "node": name,
                    "set": sorted(k for k, v in patch.items() if v is not None),
                    "removed": sorted(k for k, v in patch.items() if v is None),
                },
            )
        return ok

    def _tell(self, discovery: Discovery) -> None:
        """Log each problem, and each product the registry lacks, once per process."""
        for key, message in discovery.problems.items():
            if key not in self._told:
                self._told.add(key)
                metrics.PROBLEMS.inc()
                log.warning("%s", message)
        for node in discovery.cluster.nodes:
            for gpu in node.gpus:
                key = f"unknown:{gpu.vendor}:{gpu.product}"
                if gpu.known or key in self._told:
                    continue
                self._told.add(key)
                matcher = (
                    "pci" if re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{4}", gpu.product) else ("products")
                )
                log.warning(
                    "GPU %r on node %s is not in the GPU registry: offered as %s/%s; to name "
                    "it, add an entry to the YAML file in AP_INVENTORY_GPU_REGISTRY: "
                    "{vendor: %s, model: <name>, memory: <size>Gi, interface: <pcie|sxm>, "
                    "%s: [%r]}",
                    gpu.product,
                    node.name,
                    gpu.vendor,
                    gpu.model,
                    gpu.vendor,
                    matcher,
                    gpu.product.lower(),
                    extra={"node": node.name, "product": gpu.product},
                )


def _metrics(cluster: InventoryCluster) -> None:
    metrics.GENERATION.set(cluster.generation)
    metrics.NODES.labels("offered").set(len(cluster.nodes))
    metrics.NODES.labels("excluded").set(len(cluster.excluded))
    metrics.GPUS.clear()
    metrics.UNKNOWN_GPUS.clear()
    for node in cluster.nodes:
        for gpu in node.gpus:
            metrics.GPUS.labels(gpu.vendor, gpu.model, str(gpu.known).lower()).inc(gpu.count)
            if not gpu.known:
                metrics.UNKNOWN_GPUS.labels(gpu.product).inc(gpu.count)
    for quantity in ("cpu", "memory", "ephemeral", "gpu"):
        metrics.ALLOCATABLE.labels(quantity).set(
            sum(getattr(n.allocatable, quantity) for n in cluster.nodes)
        )
        metrics.ALLOCATED.labels(quantity).set(
            sum(getattr(n.allocated, quantity) for n in cluster.nodes)
        )
    metrics.STORAGE.clear()
    for pool in cluster.storage:
        metrics.STORAGE.labels(pool.storage_class, "capacity").set(pool.capacity)
        metrics.STORAGE.labels(pool.storage_class, "allocated").set(pool.allocated)
