"""The inventory operator process: wiring and lifecycle, on the service runtime.

Start: load the GPU registry, read the retained status (to continue its generation), list
nodes, pods, claims and storage classes (waited for, retried), then run kopf's watches
(:mod:`akoperators.inventory.handlers`), the publisher (:mod:`.publisher`) and a re-list
every ``AP_INVENTORY_RESYNC``. ``/readyz`` is ready once the first inventory is built and
kopf watches; ``/v1/inventory`` and ``/v1/inventory/watch`` serve it (:mod:`.api`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from akkube.client import ConfigException
from akoperators.adapters.election import lead
from akoperators.adapters.kopfrun import operator_settings, registry_with_login, run_kopf
from akoperators.adapters.kube import Kube
from akoperators.errors import KubeError
from akoperators.inventory import api, handlers, registry
from akoperators.inventory.publisher import Publisher
from akoperators.inventory.settings import InventorySettings
from akoperators.inventory.state import State
from akservice import Runtime, ServiceSpec, StartupError
from aktypes.events import InventoryCluster

log = logging.getLogger("akoperators.inventory")


@contextlib.asynccontextmanager
async def kube_client(settings: InventorySettings) -> AsyncIterator[Kube]:
    try:
        kube = Kube.from_kubeconfig(settings.kubeconfig, timeout_s=settings.inventory_api_timeout)
    except (ConfigException, OSError) as exc:
        raise StartupError(f"no Kubernetes API to talk to: {exc}") from None
    try:
        yield kube
    finally:
        kube.close()


async def resync(rt: Runtime[InventorySettings], state: State, kube: Kube) -> None:
    """List everything again now and then: heals what a watch gap hid (a deletion)."""
    while await rt.sleep(rt.settings.inventory_resync):
        try:
            await state.list_all(kube)
        except KubeError as exc:
            log.warning("cannot list the cluster again: %s", exc)


async def start(rt: Runtime[InventorySettings]) -> None:
    settings = rt.settings
    gpus = registry.load(settings.inventory_gpu_registry)
    kube = await rt.resource(kube_client(settings))
    state = State()
    publisher = Publisher(
        bus=rt.bus,
        kube=kube,
        state=state,
        config=settings.config(),
        registry=gpus,
        debounce_s=settings.inventory_debounce,
        label_nodes=settings.inventory_label_nodes,
    )
    api.serve(rt, publisher)  # a standby's answers its leader's inventory
    await rt.wait_for(
        "the Kubernetes API", lambda: kube.request("GET", "/version"), retry_on=(KubeError,)
    )
    await lead(rt, kube, "inventory", settings)  # a standby waits here
    status = await rt.bus.status("inventory")
    retained = status.payload if status is not None else None
    publisher.continue_from(retained if isinstance(retained, InventoryCluster) else None)
    rt.readiness(publisher.not_ready)
    log.info(
        "inventory operator starting",
        extra={"gpu_models": len(gpus), "generation": publisher.generation},
    )
    await rt.wait_for(
        "the Kubernetes API (listing nodes, pods, claims, storage classes)",
        lambda: state.list_all(kube),
        retry_on=(KubeError,),
    )
    kopf_registry = registry_with_login(settings.kubeconfig)
    handlers.register(kopf_registry, state)
    await run_kopf(rt, kopf_registry, operator_settings("inventory"))
    rt.supervise(publisher.run(), "publisher")
    rt.publish_status(publisher.published, settings.operator_status_interval)
    rt.supervise(resync(rt, state, kube), "resync")


SPEC = ServiceSpec(
    name="inventory",
    title="inventory operator",
    summary="nodes, GPUs and storage pools -> the inventory (bus, /v1/inventory) and node labels",
    distribution="akoperators",
    module="akoperators.inventory",
    settings=InventorySettings,
    health_listen="0.0.0.0:8097",
    start=start,
)
