"""The hostname operator's process: its wiring on the service runtime (the handlers are in
:mod:`akoperators.hostname.handlers`)."""

from __future__ import annotations

import logging

from akoperators.adapters.election import lead
from akoperators.adapters.kopfrun import connect, operator_settings, run_kopf
from akoperators.hostname.handlers import Hosts, build_registry
from akoperators.hostname.settings import HostnameSettings
from akservice import Runtime, ServiceSpec
from aktypes.events import OperatorStatus

log = logging.getLogger("akoperators.hostname")


async def start(rt: Runtime[HostnameSettings]) -> None:
    settings = rt.settings
    kube, version = await connect(rt, settings.kubeconfig)
    log.info(
        "routing hostnames with %s (Kubernetes %s)",
        "HTTPRoutes" if settings.ingress_mode == "gateway-api" else "Ingresses",
        version.get("gitVersion", "?"),
    )
    await lead(rt, kube, "hostname", settings)  # a standby waits here
    hosts = Hosts(kube, settings)

    async def status() -> OperatorStatus:
        return (await hosts.status()).model_copy(update={"leader": rt.consumer})

    rt.publish_status(status, settings.operator_status_interval)
    await run_kopf(rt, build_registry(settings, hosts), operator_settings("hostname"))


SPEC = ServiceSpec(
    name="hostname",
    title="hostname operator",
    summary="ProviderHost resources → one Ingress (or Gateway API HTTPRoute) per hostname",
    distribution="akoperators",
    module="akoperators.hostname",
    settings=HostnameSettings,
    health_listen="0.0.0.0:8098",
    start=start,
)
