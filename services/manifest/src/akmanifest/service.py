"""The manifest service process: wiring, watchdogs and status, on the service runtime.

Start: learn the provider's address (``AP_PROVIDER_ADDRESS``, else the chain relay's
status), then consume ``akash.provider.manifest.commands`` (submissions from the gateway),
``akash.provider.bidengine.events`` (``LeaseWon``) and ``akash.chain.events`` (deployment
updates and closes, lease closes), each partitioned by deployment so one deployment's
entries run in order; run the watchdog deadlines and the status publisher. Accepted
manifests and waiting leases are in Redis: a restarted service (or a second replica) carries
on with the same deadlines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from akbus import ConnectionLost
from akchain.lcd import LCDClient
from akmanifest import metrics
from akmanifest.adapters.chain import CachedChain, LCDQueries
from akmanifest.errors import ChainUnavailable
from akmanifest.handlers import Manifests, Policy
from akmanifest.settings import ManifestSettings
from akservice import Runtime, ServiceSpec
from aktypes.events import (
    DeploymentClosed,
    DeploymentUpdated,
    Envelope,
    LeaseClosed,
    LeaseWon,
    ManifestStatus,
    SubmitManifest,
)
from aktypes.events.streams import BIDENGINE_EVENTS, CHAIN_EVENTS, MANIFEST_COMMANDS

log = logging.getLogger("akmanifest")
WATCHDOG_TICK_S = 0.5


def deployment_of(envelope: Envelope[Any]) -> str | None:
    """The deployment an entry is about (its partition)."""
    payload = envelope.payload
    found = getattr(payload, "deployment_id", None)
    if found is None:
        lease = getattr(payload, "lease_id", None)
        found = lease.deployment_id if lease is not None else None
    return str(found) if found is not None else None


async def run_watchdogs(rt: Runtime[ManifestSettings], manifests: Manifests) -> None:
    while True:
        try:
            await manifests.expire_due()
        except (ConnectionLost, ChainUnavailable) as exc:
            log.warning("watchdog round failed; trying again", extra={"error": str(exc)})
        if not await rt.sleep(WATCHDOG_TICK_S):
            return


async def publish_status(rt: Runtime[ManifestSettings], manifests: Manifests) -> None:
    """Publish counts every ``AP_MANIFEST_STATUS_INTERVAL``, and soon after each change."""
    while True:
        manifests.changed.clear()
        with contextlib.suppress(ConnectionLost):
            deployments, waiting = await manifests.counts()
            metrics.MANAGERS.set(deployments)
            metrics.WATCHDOGS.set(waiting)
            await rt.bus.publish_status("manifest", ManifestStatus(deployments=deployments))
        changed = asyncio.create_task(manifests.changed.wait())
        stopping = asyncio.create_task(rt.stopping.wait())
        try:
            await asyncio.wait(
                {changed, stopping},
                timeout=rt.settings.manifest_status_interval,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            changed.cancel()
            stopping.cancel()
        if rt.stopping.is_set():
            return
        await asyncio.sleep(0.05)  # a burst of changes makes one status


async def start(rt: Runtime[ManifestSettings]) -> None:
    settings = rt.settings
    address = await rt.provider_address(settings.provider_address)
    log.info("manifest service for provider %s", address)
    lcd = await rt.resource(LCDClient(settings.api))
    chain = CachedChain(LCDQueries(lcd, address), settings.manifest_cache_age)
    manifests = Manifests(
        rt.bus,
        chain,
        Policy(
            provider=address,
            manifest_timeout=settings.manifest_timeout,
            hostname_check_timeout=settings.manifest_hostname_check_timeout,
            http_needs_hosts=not settings.deployment_ingress_static_hosts,
        ),
    )
    # a handled submission is in the deployment's record (accepted) or nowhere (refused):
    # its command, up to the gateway's body limit, leaves the bus at the next trim
    commands = rt.subscriber(MANIFEST_COMMANDS, partition_key=deployment_of, retention_s=0)
    commands.add(SubmitManifest, manifests.on_submit)
    won = rt.subscriber(BIDENGINE_EVENTS, partition_key=deployment_of)
    won.add(LeaseWon, manifests.on_lease_won)
    events = rt.subscriber(CHAIN_EVENTS, partition_key=deployment_of)
    events.add(DeploymentUpdated, manifests.on_deployment_updated)
    events.add(DeploymentClosed, manifests.on_deployment_closed)
    events.add(LeaseClosed, manifests.on_lease_closed)
    if settings.manifest_timeout > 0:
        rt.supervise(run_watchdogs(rt, manifests), "watchdogs")
    rt.supervise(publish_status(rt, manifests), "status")


SPEC = ServiceSpec(
    name="manifest",
    title="manifest service",
    summary="tenants' manifests checked against the chain and sent to our leases; watchdogs",
    distribution="akmanifest",
    settings=ManifestSettings,
    health_listen="0.0.0.0:8094",
    start=start,
)
