"""The IP operator process: ``ProviderLeasedIP`` resources in, MetalLB LoadBalancer
Services out, and the address pool's use served at ``GET /v1/pool``.

The cluster service declares a ``ProviderLeasedIP`` per port a lease exposes on a leased
IP endpoint (in ``AP_K8S_MANIFEST_NS``); with kopf this operator:

- makes (or brings back) the LoadBalancer Service for it, created, changed or found at
  start, with the sharing key that puts every port of one owner's endpoint on one address;
  one that already exposes the port (Akash's operator made it, for a lease taken over from
  the Go provider) keeps its spec, and so its address: only labels are added;
- refuses a new sharing key when every address of ``AP_IP_POOL`` is in use (the status says
  ``pending``; it is tried again every ``AP_IP_RETRY``), where Akash let MetalLB leave the
  Service without an address;
- deletes the Service when the ProviderLeasedIP goes (a finalizer holds it until then).

``/v1/pool`` answers ``{"capacity", "in_use", "available", "sharing_keys"}``; the retained
status (``akash.provider.ip.status``) carries the same figures, and the cluster service
takes its leased-IP capacity from it. The pool's use is counted from the Services
themselves (their sharing key: our label, else MetalLB's annotation, as Akash's operator
left it), watched, so a restarted operator counts the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import kopf

from akkube.calls import resource_path
from akoperators.adapters.kopfrun import registry_with_login
from akoperators.adapters.kube import Kube
from akoperators.domain.ips import (
    METAL_LB,
    SERVICE_TARGET,
    InvalidLeasedIP,
    exposure_of,
    load_balancer,
    serves,
    sharing_key_of,
)
from akoperators.errors import KubeError
from akoperators.ip.metrics import POOL, RECONCILES
from akoperators.ip.settings import IPSettings

log = logging.getLogger("akoperators.ip")

AKASH = "akash.network/v2beta2"


class Pool:
    """Addresses in use: one per sharing key among the operator's LoadBalancer Services."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.services: dict[tuple[str, str], str] = {}  # (namespace, name) -> sharing key
        self.lock = asyncio.Lock()  # a new key is checked and taken as one step

    def keys(self) -> set[str]:
        return set(self.services.values())

    def observe(self, event: str, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        ref = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        key = sharing_key_of(body)
        if event == "DELETED" or not key:
            self.services.pop(ref, None)
        else:
            self.services[ref] = key
        self.export()

    def admits(self, key: str) -> bool:
        return key in self.keys() or len(self.keys()) < self.capacity

    def usage(self) -> dict[str, Any]:
        keys = self.keys()
        return {
            "capacity": self.capacity,
            "in_use": len(keys),
            "available": max(self.capacity - len(keys), 0),
            "sharing_keys": sorted(keys),
        }

    def export(self) -> None:
        used = len(self.keys())
        POOL.labels("in_use").set(used)
        POOL.labels("available").set(max(self.capacity - used, 0))


class LeasedIPs:
    """Exposes ProviderLeasedIPs: what the kopf handlers call."""

    def __init__(self, kube: Kube, settings: IPSettings, pool: Pool) -> None:
        self.kube, self.settings, self.pool = kube, settings, pool

    async def expose(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Make the Service of one ProviderLeasedIP; the status to record (``pending`` ones
        are tried again by the timer)."""
        try:
            exposure = exposure_of(body.get("spec") or {})
        except InvalidLeasedIP as exc:
            RECONCILES.labels("invalid").inc()
            return {"state": "invalid", "message": str(exc)}
        labels = (body.get("metadata") or {}).get("labels") or {}
        desired = load_balancer(exposure, pool=self.settings.ip_pool_name, lease_labels=labels)
        collection = resource_path("v1", "services", exposure.namespace)
        async with self.pool.lock:
            if not self.pool.admits(exposure.sharing_key):
                RECONCILES.labels("exhausted").inc()
                return {
                    "state": "pending",
                    "message": f"every address of the pool ({self.pool.capacity}) is in use",
                }
            try:
                current = await self.kube.get(f"{collection}/{exposure.name}")
                owned = () if serves(current, exposure) else ("spec",)
                result = await self.kube.ensure(collection, desired, owned=owned)
            except KubeError as exc:
                RECONCILES.labels("pending").inc()
                return {"state": "pending", "message": f"Service {exposure.name}: {exc}"}
            self.pool.observe("ADDED", desired)
        RECONCILES.labels(result).inc()
        if result != "unchanged":
            log.info(
                "%s Service %s/%s (sharing key %s)", result, exposure.namespace, exposure.name,
                exposure.sharing_key, extra={"lease_id": str(exposure.lease_id)},
            )  # fmt: skip
        current = await self.kube.get(f"{collection}/{exposure.name}") or {}
        ingress = ((current.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        return {
            "state": "exposed",
            "message": "",
            "service": f"{exposure.namespace}/{exposure.name}",
            "address": next((i.get("ip", "") for i in ingress if i.get("ip")), ""),
        }

    async def withdraw(self, body: Mapping[str, Any]) -> None:
        try:
            exposure = exposure_of(body.get("spec") or {})
        except InvalidLeasedIP:
            return
        path = resource_path("v1", "services", exposure.namespace, exposure.name)
        try:
            current = await self.kube.get(path)
            labels = ((current or {}).get("metadata") or {}).get("labels") or {}
            if labels.get(SERVICE_TARGET) == METAL_LB and await self.kube.delete(path):
                RECONCILES.labels("removed").inc()
                log.info("removed Service %s/%s", exposure.namespace, exposure.name)
        except KubeError as exc:
            raise kopf.TemporaryError(str(exc), delay=self.settings.ip_retry) from None


def build_registry(settings: IPSettings, ips: LeasedIPs) -> kopf.OperatorRegistry:
    registry = registry_with_login(settings.kubeconfig)
    group, version = AKASH.split("/")

    def in_manifest_ns(*, namespace: str | None, **_: Any) -> bool:
        return namespace == settings.k8s_manifest_ns

    def unsettled(*, namespace: str | None, status: kopf.Status, **_: Any) -> bool:
        return namespace == settings.k8s_manifest_ns and status.get("state") == "pending"

    @kopf.on.event("", "v1", "services", labels={SERVICE_TARGET: METAL_LB}, registry=registry)
    def seen(*, type: str, body: kopf.Body, **_: Any) -> None:
        ips.pool.observe(type or "ADDED", body)

    @kopf.on.resume(
        group, version, "providerleasedips", id="expose", when=in_manifest_ns, registry=registry
    )
    @kopf.on.create(
        group, version, "providerleasedips", id="expose", when=in_manifest_ns, registry=registry
    )
    @kopf.on.update(
        group, version, "providerleasedips", field="spec", id="re-expose",
        when=in_manifest_ns, registry=registry,
    )  # fmt: skip
    @kopf.timer(
        group, version, "providerleasedips", id="retry", interval=settings.ip_retry,
        when=unsettled, registry=registry,
    )  # fmt: skip
    async def exposed(*, body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        patch.status.update(await ips.expose(body))

    @kopf.on.delete(
        group, version, "providerleasedips", id="withdraw", when=in_manifest_ns, registry=registry
    )
    async def withdrawn(*, body: kopf.Body, **_: Any) -> None:
        await ips.withdraw(body)

    return registry
