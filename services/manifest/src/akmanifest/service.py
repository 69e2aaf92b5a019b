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


async def status(manifests: Manifests) -> ManifestStatus:
    deployments, waiting = await manifests.counts()
    metrics.MANAGERS.set(deployments)
    metrics.WATCHDOGS.set(waiting)
    return ManifestStatus(deployments=deployments)


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
    rt.publish_status(
        lambda: status(manifests), settings.manifest_status_interval, wake=manifests.changed
    )


SPEC = ServiceSpec(
    name="manifest",
    title="manifest service",
    summary="tenants' manifests checked against the chain and sent to our leases; watchdogs",
    distribution="akmanifest",
    settings=ManifestSettings,
    health_listen="0.0.0.0:8094",
    start=start,
)
