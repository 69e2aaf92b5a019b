"""The hostname operator process: ``ProviderHost`` resources in, Ingresses (or HTTPRoutes) out.

The cluster service declares a ``ProviderHost`` per accepted hostname of a lease (in
``AP_K8S_MANIFEST_NS``); this operator routes it, with kopf:

- created, changed, or found at start (resume): the Ingress named after the hostname is
  made in the lease's namespace, or brought back to what it should be. A hostname that an
  Ingress of the same owner routes from another lease moves (the old Ingress is deleted:
  a migration); one that another owner's lease holds is a conflict, reported on the
  ``ProviderHost``'s status and tried again every ``AP_HOSTNAME_RETRY`` until it clears;
- an invalid hostname is reported on the status and never written;
- a hostname whose Ingress the API server refuses ``AP_HOSTNAME_IGNORE_FAILURES`` times in
  a row is put on the ignore list (``status.ignored_until``) for ``AP_HOSTNAME_IGNORE_FOR``,
  so one bad host does not keep the operator busy; changing its spec retries at once;
- the lease's ``Manifest`` changed (new proxy settings): its hosts are routed again;
- deleted: the Ingress goes first, then kopf releases its finalizer.

Everything it decides comes from Kubernetes, so a killed operator resumes where it was.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import kopf

from akkube.calls import resource_path
from akoperators.adapters.kopfrun import registry_with_login
from akoperators.adapters.kube import Kube
from akoperators.domain.hosts import (
    HOST_LABEL,
    MANAGED_BY,
    OPERATOR,
    InvalidHost,
    Route,
    hosts_of,
    http_options,
    http_route,
    ingress,
    route_of,
)
from akoperators.errors import KubeError
from akoperators.hostname.metrics import RECONCILES
from akoperators.hostname.settings import HostnameSettings
from aktypes.events import OperatorStatus

log = logging.getLogger("akoperators.hostname")

AKASH = "akash.network/v2beta2"
_FAILING = frozenset({0, 401, 403, 404, 408, 409, 429})  # not the object's fault
RETRIED = frozenset({"conflict", "pending", "refused"})  # tried again every AP_HOSTNAME_RETRY


class Hosts:
    """Routes ProviderHosts: what the kopf handlers call."""

    def __init__(self, kube: Kube, settings: HostnameSettings) -> None:
        self.kube = kube
        self.settings = settings
        gateway = settings.ingress_mode == "gateway-api"
        self.api_version = "gateway.networking.k8s.io/v1" if gateway else "networking.k8s.io/v1"
        self.plural = "httproutes" if gateway else "ingresses"
        self.kind = "HTTPRoute" if gateway else "Ingress"

    def _collection(self, namespace: str) -> str:
        return resource_path(self.api_version, self.plural, namespace)

    def _desired(self, route: Route, manifest: Mapping[str, Any] | None, labels: Any) -> Any:
        settings = self.settings
        if settings.ingress_mode == "gateway-api":
            return http_route(
                route,
                gateway=settings.gateway_name,
                gateway_namespace=settings.gateway_namespace,
                lease_labels=labels,
            )
        return ingress(
            route,
            http_options(manifest, route),
            ingress_class=settings.deployment_ingress_class,
            lease_labels=labels,
        )

    async def reconcile(
        self, body: Mapping[str, Any], routed: Mapping[str, Iterable[tuple[str, str, str]]]
    ) -> dict[str, Any]:
        """Route one ProviderHost; the status to record. A ``conflict``, ``pending`` (the
        lease's namespace not there yet, the API unreachable) or ``refused`` one is tried
        again by the timer."""
        meta, status = body.get("metadata") or {}, dict(body.get("status") or {})
        try:
            route = route_of(body.get("spec") or {}, str(meta.get("name", "")))
        except InvalidHost as exc:
            RECONCILES.labels("invalid").inc()
            return {"state": "invalid", "message": str(exc)}
        if float(status.get("ignored_until") or 0) > time.time():
            RECONCILES.labels("ignored").inc()
            return status
        owner = route.lease_id.owner
        holders = list(routed.get(route.hostname, ()))  # the index changes as we delete
        for namespace, name, holder in holders:
            if namespace == route.namespace:
                continue
            if holder != owner:
                RECONCILES.labels("conflict").inc()
                message = f"{route.hostname} is routed to another owner's lease ({namespace})"
                return {"state": "conflict", "message": message}
            if await self.kube.delete(self._collection(namespace) + f"/{name}"):
                log.info(
                    "moved %s from %s to %s",
                    route.hostname,
                    namespace,
                    route.namespace,
                    extra={"lease_id": str(route.lease_id)},
                )
        manifest = await self.kube.get(
            resource_path(AKASH, "manifests", self.settings.k8s_manifest_ns, route.namespace)
        )
        desired = self._desired(route, manifest, meta.get("labels") or {})
        try:
            result = await self.kube.ensure(
                self._collection(route.namespace), desired, owned=("spec",)
            )
        except KubeError as exc:
            if exc.status in _FAILING or exc.status >= 500:
                RECONCILES.labels("pending").inc()
                return {"state": "pending", "message": f"{self.plural} in {route.namespace}: {exc}"}
            return self._refused(route, status, exc)
        RECONCILES.labels(result).inc()
        if result != "unchanged":
            log.info(
                "%s %s for %s", result, self.kind, route.hostname,
                extra={"lease_id": str(route.lease_id)},
            )  # fmt: skip
        return {
            "state": "routed",
            "message": "",
            "namespace": route.namespace,
            "service": f"{route.service}:{route.port}",
            "failures": 0,
        }

    def _refused(self, route: Route, status: dict[str, Any], exc: KubeError) -> dict[str, Any]:
        failures = int(status.get("failures") or 0) + 1
        RECONCILES.labels("refused").inc()
        if failures >= self.settings.hostname_ignore_failures:
            log.warning(
                "ignoring %s for %.0f h: refused %d times (%s)",
                route.hostname,
                self.settings.hostname_ignore_for / 3600,
                failures,
                exc.message,
            )
            return {
                "state": "ignored",
                "message": f"refused {failures} times: {exc.message}",
                "failures": failures,
                "ignored_until": time.time() + self.settings.hostname_ignore_for,
            }
        return {"state": "refused", "message": exc.message, "failures": failures}

    async def remove(self, body: Mapping[str, Any]) -> None:
        """Delete what routes this ProviderHost's hostname to its lease (if this operator
        made it)."""
        meta = body.get("metadata") or {}
        try:
            route = route_of(body.get("spec") or {}, str(meta.get("name", "")))
        except InvalidHost:
            return
        path = self._collection(route.namespace) + f"/{route.hostname}"
        try:
            current = await self.kube.get(path)
            labels = ((current or {}).get("metadata") or {}).get("labels") or {}
            if labels.get(MANAGED_BY) == OPERATOR and labels.get(HOST_LABEL) == route.hostname:
                await self.kube.delete(path)
                RECONCILES.labels("removed").inc()
                log.info("removed %s for %s", self.kind, route.hostname)
        except KubeError as exc:
            raise kopf.TemporaryError(str(exc), delay=self.settings.hostname_retry) from None

    async def hosts_of_lease(self, namespace: str) -> list[dict[str, Any]]:
        return await self.kube.list(
            resource_path(AKASH, "providerhosts", self.settings.k8s_manifest_ns),
            selector=f"akash.network/namespace={namespace}",
        )

    async def status(self) -> OperatorStatus:
        """The ProviderHosts counted by the state their status records."""
        try:
            hosts = await self.kube.list(
                resource_path(AKASH, "providerhosts", self.settings.k8s_manifest_ns)
            )
        except KubeError as exc:
            return OperatorStatus(operator="hostname", last_error=str(exc)[:500])
        states = Counter(str((h.get("status") or {}).get("state") or "new") for h in hosts)
        return OperatorStatus(operator="hostname", figures=dict(sorted(states.items())))

    async def record(self, body: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        name = (body.get("metadata") or {}).get("name", "")
        path = resource_path(AKASH, "providerhosts", self.settings.k8s_manifest_ns, name)
        await self.kube.patch(f"{path}/status", {"status": dict(status)})


def build_registry(settings: HostnameSettings, hosts: Hosts) -> kopf.OperatorRegistry:
    registry = registry_with_login(settings.kubeconfig)
    group, version = AKASH.split("/")

    def in_manifest_ns(*, namespace: str | None, **_: Any) -> bool:
        return namespace == settings.k8s_manifest_ns

    def unsettled(*, namespace: str | None, status: kopf.Status, **_: Any) -> bool:
        return namespace == settings.k8s_manifest_ns and status.get("state") in RETRIED

    route_group, route_version = hosts.api_version.split("/")

    @kopf.index(
        route_group, route_version, hosts.plural,
        labels={MANAGED_BY: OPERATOR}, id="routed", registry=registry,
    )  # fmt: skip
    def routed(
        *, body: kopf.Body, namespace: str | None, name: str, labels: kopf.Labels, **_: Any
    ) -> dict[str, tuple[str, str, str]]:
        owner = str(labels.get("akash.network/lease.id.owner", ""))
        return dict.fromkeys(hosts_of(body), (namespace or "", name, owner))

    async def route(
        body: Mapping[str, Any], patch: kopf.Patch, routed: kopf.Index[str, Any]
    ) -> None:
        patch.status.update(await hosts.reconcile(body, routed))

    @kopf.on.resume(
        group, version, "providerhosts", id="route", when=in_manifest_ns, registry=registry
    )
    @kopf.on.create(
        group, version, "providerhosts", id="route", when=in_manifest_ns, registry=registry
    )
    async def declared(*, body: kopf.Body, patch: kopf.Patch, routed: Any = None, **_: Any) -> None:
        await route(body, patch, routed)

    @kopf.on.update(
        group, version, "providerhosts", field="spec", id="reroute", when=in_manifest_ns,
        registry=registry,
    )  # fmt: skip
    async def changed(*, body: kopf.Body, patch: kopf.Patch, routed: Any = None, **_: Any) -> None:
        fresh = {k: v for k, v in body.items() if k != "status"}  # a new spec: try at once
        await route(fresh, patch, routed)

    @kopf.timer(
        group, version, "providerhosts", id="retry", interval=settings.hostname_retry,
        when=unsettled, registry=registry,
    )  # fmt: skip
    async def retry(*, body: kopf.Body, patch: kopf.Patch, routed: Any = None, **_: Any) -> None:
        await route(body, patch, routed)

    @kopf.on.delete(
        group, version, "providerhosts", id="unroute", when=in_manifest_ns, registry=registry
    )
    async def withdrawn(*, body: kopf.Body, **_: Any) -> None:
        await hosts.remove(body)

    @kopf.on.update(
        group, version, "manifests", field="spec.group", id="manifest", when=in_manifest_ns,
        registry=registry,
    )  # fmt: skip
    async def manifest_changed(*, name: str, routed: Any = None, **_: Any) -> None:
        for host in await hosts.hosts_of_lease(name):
            await hosts.record(host, await hosts.reconcile(host, routed))

    return registry
