"""The reconciliation of the cluster with the chain: a sweep at start, then periodically.

The relay brings the chain's events; a missed one (dead-lettered after an outage, lost with
a stream) would otherwise never be noticed: a lease closed by escrow depletion stays
deployed, a reservation stays held. Every ``AP_CLUSTER_RECONCILE_INTERVAL`` the cluster
reads what it holds — the leases of the Manifest resources and lease namespaces in
Kubernetes, then the lease records, then the reservations — and then the chain's active
leases and open bids of this provider (every page, or the sweep is skipped), looks up the
leases held here the chain does not list active and the orders of the reservations nothing
explains, and compares them
(:func:`akcluster.domain.reconcile.compare`). A finding is repaired once it was found on two
sweeps in a row at least ``AP_CLUSTER_RECONCILE_GRACE`` apart
(:class:`aktypes.reconcile.Sightings`), through the paths the events take: a closed lease
is torn down as ``LeaseClosed`` does, a deployment without a record is adopted or removed as
start-up recovery does, a reservation is released as a teardown does. Each repair that
changed something is a ``reconcile.repaired`` event on ``akash.provider.cluster.events`` and
counts in ``provider_reconcile_repairs_total{kind}``.

A sweep that cannot read the chain, Kubernetes or Redis completely is skipped, and repairs
nothing. The provider's address is ``AP_PROVIDER_ADDRESS`` or the chain relay's, from its
retained status; until one is known the sweeps wait, and the service is as ready as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from akbus import ConnectionLost
from akcluster.adapters.chain import ProviderMarket
from akcluster.deployments import Deployments
from akcluster.domain.reconcile import (
    ChainView,
    LocalView,
    Repair,
    compare,
    unexplained,
    unlisted,
)
from akcluster.errors import ChainUnavailable, Unavailable
from akcluster.reservations import Reservations
from akcluster.settings import ClusterSettings
from akservice import Runtime
from akservice.reconcile import REPAIRS, keep_sweeping
from aktypes.events import ChainStatus, ReconcileRepaired, RepairAction
from aktypes.events.streams import CLUSTER_EVENTS
from aktypes.ids import OrderID
from aktypes.reconcile import Sightings

log = logging.getLogger("akcluster.reconcile")


class Reconciliation:
    """The sweeps of the cluster against the chain, and their repairs."""

    def __init__(
        self,
        rt: Runtime[ClusterSettings],
        deployments: Deployments,
        reservations: Reservations,
        market: ProviderMarket,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.rt, self.deployments = rt, deployments
        self.reservations, self.market = reservations, market
        self.provider = rt.settings.provider_address
        self.sightings: Sightings[tuple[str, str]] = Sightings(rt.settings.cluster_reconcile_grace)
        self.clock = clock

    async def _address(self) -> str:
        if not self.provider:
            envelope = await self.rt.bus.status("chain")
            payload = envelope.payload if envelope is not None else None
            if isinstance(payload, ChainStatus) and payload.provider:
                self.provider = payload.provider
        return self.provider

    async def views(self, provider: str) -> tuple[LocalView, ChainView]:
        """What the cluster holds, then what the chain says of it."""
        manifests, namespaces, records = await self.deployments.found()
        ledger = await self.reservations.refresh()
        local = LocalView(
            records=records,
            manifests=manifests,
            namespaces=namespaces,
            reservations=list(ledger.reservations),
        )
        listed = await self.market.listed(provider)
        partial = ChainView(active_leases=listed[0], open_bids=listed[1])
        leases, orders = unlisted(local, partial), unexplained(local, partial)
        return local, await self.market.looked_up(provider, leases, orders, listed)

    async def sweep(self) -> list[Repair]:
        """One sweep: the repairs made (those that changed something)."""
        provider = await self._address()
        if not provider:
            log.info("reconciliation waits for the provider's address (AP_PROVIDER_ADDRESS)")
            return []
        local, chain = await self.views(provider)
        found = {repair.key: repair for repair in compare(local, chain)}
        confirmed = self.sightings.confirm(found, self.clock())
        return [found[key] for key in confirmed if await self.repair(found[key])]

    async def _make(self, repair: Repair) -> RepairAction | None:
        """Make ``repair`` through the path its event would have taken; what was done (None:
        nothing, it was done meanwhile)."""
        lease = repair.lease_id
        if lease is not None and repair.kind == "lease_closed_deployed":
            return "torn_down" if await self.deployments.close(lease) else None
        if lease is not None and repair.action == "adopted":
            taken = await self.deployments.take_over(lease)  # a closed record: removed
            return "adopted" if taken == "adopted" else "removed" if taken == "removed" else None
        if lease is not None and repair.action == "removed":
            return "removed" if await self.deployments.remove(lease) else None
        if repair.kind == "reservation_without_bid":
            return "freed" if await self.reservations.release(repair.order_id) else None
        return None

    async def repair(self, repair: Repair) -> bool:
        """Make ``repair``; whether it changed anything (then it is published and counted)."""
        action = await self._make(repair)
        if action is None:
            return False
        lease = repair.lease_id
        log.warning(
            "reconciliation: %s %s (%s: %s)",
            lease or repair.order_id,
            action.replace("_", " "),
            repair.kind,
            repair.message,
            extra={"lease_id": str(lease or ""), "order_id": repair.order_id},
        )
        event = ReconcileRepaired(
            kind=repair.kind,
            action=action,
            order_id=OrderID.parse(repair.order_id),
            lease_id=lease,
            message=repair.message,
        )
        await self.rt.bus.publish(CLUSTER_EVENTS, event)
        REPAIRS.labels(repair.kind).inc()
        return True

    async def run(self) -> None:
        """Sweep now and every ``AP_CLUSTER_RECONCILE_INTERVAL``; a sweep that cannot read
        everything is skipped (one line says why)."""
        await keep_sweeping(
            self.sweep,
            self.rt.settings.cluster_reconcile_interval,
            self.rt.sleep,
            unreadable=(ChainUnavailable, Unavailable, ConnectionLost),
            log=log,
        )
