"""The IP operator's process: its wiring on the service runtime (the handlers are in
:mod:`akoperators.ip.handlers`)."""

from __future__ import annotations

import logging

from aiohttp import web

from akoperators.adapters.election import lead
from akoperators.adapters.kopfrun import connect, operator_settings, run_kopf
from akoperators.domain.ips import pool_size
from akoperators.ip.handlers import LeasedIPs, Pool, build_registry
from akoperators.ip.settings import IPSettings
from akservice import Runtime, ServiceSpec
from aktypes.events import OperatorStatus

log = logging.getLogger("akoperators.ip")


async def start(rt: Runtime[IPSettings]) -> None:
    settings = rt.settings
    kube, version = await connect(rt, settings.kubeconfig)
    await lead(rt, kube, "ip", settings)  # a standby waits here
    pool = Pool(pool_size(settings.ip_pool))
    pool.export()
    log.info(
        "leasing %d address(es)%s (Kubernetes %s)",
        pool.capacity,
        f" from MetalLB pool {settings.ip_pool_name}" if settings.ip_pool_name else "",
        version.get("gitVersion", "?"),
    )

    async def usage(_: web.Request) -> web.Response:
        return web.json_response(pool.usage())

    async def status() -> OperatorStatus:
        use = pool.usage()
        figures = {k: use[k] for k in ("capacity", "in_use", "available")}
        return OperatorStatus(operator="ip", figures=figures, leader=rt.consumer)

    rt.route("GET", "/v1/pool", usage)
    rt.publish_status(status, settings.operator_status_interval)
    ips = LeasedIPs(kube, settings, pool)
    await run_kopf(rt, build_registry(settings, ips), operator_settings("ip"))


SPEC = ServiceSpec(
    name="ip",
    title="IP operator",
    summary="ProviderLeasedIP resources → MetalLB LoadBalancer Services; the pool at /v1/pool",
    distribution="akoperators",
    module="akoperators.ip",
    settings=IPSettings,
    health_listen="0.0.0.0:8099",
    start=start,
)
