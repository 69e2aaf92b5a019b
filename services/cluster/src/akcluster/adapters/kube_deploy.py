"""The ``kube`` deployment backend: a lease's objects applied to, read from and removed
from Kubernetes through the official client.

Objects come as the plain dicts the builders (:mod:`akcluster.domain.objects`) return, of
any kind: the resource (path, plural, namespaced) of an ``apiVersion``/``kind`` is found by
discovery and remembered, so a CRD installed later is found too. Requests go through the
client's ``ApiClient`` (its kubeconfig, TLS and token handling); each blocking call runs on
a worker thread under a per-request timeout, so a hung API server never holds the loop.

Apply is idempotent, like Akash's (``cluster/kube/apply.go``) but without needless writes:
an object is read, created when missing, and replaced only when what it says differs —

- labels and annotations under the prefixes the desired object uses (``akash.network``
  always) must be exactly the desired ones; others (a controller's, kubectl's) are kept;
- every desired field (``spec``, ``data``, ``rules``…) must be in what the server holds, so
  the defaults the server fills in never count as a difference;
- a field removed from the desired object shows as a new fingerprint of it, kept in the
  annotation :data:`APPLIED` when it is written;
- a Service keeps the addresses and node ports the server assigned (Akash does the same);
- a Deployment or StatefulSet the Go provider built keeps its pod template while it runs
  what ours would (:mod:`~akcluster.adapters.kube_adopt`): taking it over restarts no pod.

A 409 (created or changed meanwhile) means reading again and deciding again; that is the
only retry here, the caller owns every other. Errors are translated at this boundary into
the service's own (:mod:`akcluster.errors`):

- :class:`Unavailable`: unreachable, timed out, 5xx, 429, 401/403 (the provider's own
  credentials or a namespace being deleted): nothing can be judged now;
- :class:`Rejected`: any other 4xx on a write, naming the object and the server's
  reason: the object cannot be applied as it is;
- :class:`LeaseNotFound`: the lease's namespace or Manifest resource is not there.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from urllib3.util.retry import Retry

from akcluster.adapters.kube_adopt import adopted
from akcluster.adapters.kube_rules import (
    APPLIED,
    created,
    fingerprint,
    forwarded_ports,
    leased_ips,
    merged,
    pod_failure,
    restarts,
    service_status,
    up_to_date,
)
from akcluster.adapters.kube_scan import AKASH_API, KubeScan
from akcluster.deployments.ports import LeaseStatus
from akcluster.domain.objects.base import MANAGED, MANIFEST_SERVICE, SERVICE_TARGET
from akcluster.domain.objects.reading import LEASE_LABELS, ingress_routes
from akcluster.errors import LeaseNotFound, Rejected, Unavailable
from akkube.calls import resource_path, send
from akkube.client import ApiClient, ApiException, api_client
from aktypes.events import ServiceStatus
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace

__all__ = ["APPLIED", "KubeDeployments", "LeaseStatus"]

log = logging.getLogger("akcluster.kube_deploy")

Obj = dict[str, Any]

_CONFLICT_ATTEMPTS = 5
_PAGE = 500
# one more try for a connection that could not be made (or a pooled one gone stale);
# never after a request was sent, never on a status (urllib3 would honour Retry-After)
_RETRIES = Retry(
    total=1, connect=1, read=0, status=0, other=0, redirect=False, raise_on_status=False
)


class _Answer(Exception):
    """An answer other than 2xx (internal: callers decide what each status means)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class _Resource:
    """Where the API serves one kind."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        return resource_path(
            self.api_version, self.plural, namespace if self.namespaced else None, name
        )


NAMESPACES = _Resource("v1", "Namespace", "namespaces", namespaced=False)


class KubeDeployments:
    """Apply, read and remove leases' objects; see the module docstring for the rules.

    ``api_client`` should not retry on its own (``from_kubeconfig`` sets its urllib3
    retries so); ``request_timeout_s`` bounds every request.
    """

    def __init__(
        self,
        api_client: ApiClient,
        *,
        manifest_namespace: str = "lease",
        request_timeout_s: float = 10.0,
    ) -> None:
        self.api_client = api_client
        self.manifest_namespace = manifest_namespace
        self.request_timeout_s = request_timeout_s
        self._resources: dict[tuple[str, str], _Resource] = {}
        self._owns_client = False

    @classmethod
    def from_kubeconfig(cls, path: Path | None = None, **kw: Any) -> KubeDeployments:
        """From a kubeconfig file; with None, ``$KUBECONFIG`` or ``~/.kube/config``, else
        the in-cluster service account. ``close`` closes the client."""
        deployments = cls(api_client(path, retries=_RETRIES), **kw)
        deployments._owns_client = True
        return deployments

    def close(self) -> None:
        if self._owns_client:
            self.api_client.close()  # type: ignore[no-untyped-call]

    # -- the interface ----------------------------------------------------------------
    async def install(self, crds: Sequence[dict[str, Any]]) -> None:
        """Create or update the CRDs, wait until they are served; make the manifest
        namespace if it is missing (an existing one is left as it is)."""
        for crd in crds:
            await self._apply(crd)
        for crd in crds:
            await self._established(str(crd["metadata"]["name"]))
        if await self._get(NAMESPACES, self.manifest_namespace) is None:
            name = self.manifest_namespace
            body: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            try:
                await self._request("POST", NAMESPACES.path(), body=body)
            except _Answer as exc:
                if exc.status != 409:
                    raise _failure(exc, f"namespace {self.manifest_namespace}") from None

    async def apply(self, objects: Sequence[dict[str, Any]]) -> int:
        """Create or update each object, in order; how many writes that took."""
        writes = 0
        for obj in objects:
            writes += await self._apply(obj)
        return writes

    async def prune(self, lease_id: LeaseID, keep: Collection[tuple[str, str]]) -> int:
        """Delete the lease's objects whose (kind, name) is not in ``keep``; how many.

        In the lease's namespace: Deployments, StatefulSets and Services labelled
        ``akash.network/service-target=true`` (never a leased-IP Service, ``metal-lb``: the
        IP operator's); NetworkPolicies with the lease's labels; Secrets and RBAC objects of
        a manifest service. In the manifest namespace: ProviderHosts and ProviderLeasedIPs
        of the lease. Ingresses are the hostname operator's: it removes one when its
        ProviderHost goes.
        """
        namespace, wanted = lease_namespace(lease_id), set(keep)
        lease, service = _lease_selector(lease_id), f"{MANAGED}=true,{MANIFEST_SERVICE}"
        target = f"{SERVICE_TARGET}=true"
        rules = (
            ("v1", "Service", namespace, target),
            ("apps/v1", "Deployment", namespace, target),
            ("apps/v1", "StatefulSet", namespace, target),
            ("networking.k8s.io/v1", "NetworkPolicy", namespace, lease),
            ("v1", "Secret", namespace, service),
            ("rbac.authorization.k8s.io/v1", "RoleBinding", namespace, service),
            ("rbac.authorization.k8s.io/v1", "Role", namespace, service),
            ("v1", "ServiceAccount", namespace, service),
            (AKASH_API, "ProviderHost", self.manifest_namespace, lease),
            (AKASH_API, "ProviderLeasedIP", self.manifest_namespace, lease),
        )
        removed = 0
        for api_version, kind, ns, selector in rules:
            resource = await self._resource(api_version, kind)
            if resource is None:
                continue
            for obj in await self._list(resource, ns, selector):
                name = str(obj["metadata"]["name"])
                if (kind, name) not in wanted and await self._delete(resource, name, ns):
                    log.info("removed %s %s/%s", kind, ns, name, extra={"lease_id": str(lease_id)})
                    removed += 1
        return removed

    async def teardown(self, lease_id: LeaseID) -> None:
        """Delete the namespace (its objects go with it), the Manifest resource and the
        lease's ProviderHosts and ProviderLeasedIPs. What is gone already counts as done."""
        namespace = lease_namespace(lease_id)
        await self._delete(NAMESPACES, namespace)
        manifests = await self._resource(AKASH_API, "Manifest")
        if manifests is not None:
            await self._delete(manifests, namespace, self.manifest_namespace)
        selector = _lease_selector(lease_id)
        for kind in ("ProviderHost", "ProviderLeasedIP"):
            resource = await self._resource(AKASH_API, kind)
            if resource is None:
                continue
            for obj in await self._list(resource, self.manifest_namespace, selector):
                await self._delete(resource, str(obj["metadata"]["name"]), self.manifest_namespace)
        log.info("tore down lease %s", lease_id, extra={"lease_id": str(lease_id)})

    async def lease_status(
        self, lease_id: LeaseID, services: Sequence[tuple[str, int]], public_hostname: str
    ) -> LeaseStatus:
        """Each service's replicas, restarts and hostnames (those the hostname operator's
        Ingresses route), the node ports of ``<svc>-np`` and the leased-IP ports of the IP
        operator's LoadBalancer Services.

        A Deployment's ``available`` is its available replicas (Akash's); a StatefulSet's
        its *ready* replicas, where Akash counts current ones — pods of the current
        revision, ready or not, so a crash-looping StatefulSet looked healthy to the
        monitor and was never replaced. A service without a workload yet reports zeros.
        """
        namespace = lease_namespace(lease_id)
        found = await self._get(NAMESPACES, namespace)
        if found is None or found["metadata"].get("deletionTimestamp"):
            raise LeaseNotFound(f"no namespace {namespace} for lease {lease_id}")
        manifests = await self._resource(AKASH_API, "Manifest")
        if (
            manifests is None
            or await self._get(manifests, namespace, self.manifest_namespace) is None
        ):
            raise LeaseNotFound(f"no Manifest {self.manifest_namespace}/{namespace} for {lease_id}")
        target = f"{SERVICE_TARGET}=true"
        workloads: dict[str, ServiceStatus] = {}
        for kind in ("StatefulSet", "Deployment"):
            resource = await self._require("apps/v1", kind)
            for obj in await self._list(resource, namespace, target):
                workloads[str(obj["metadata"]["name"])] = service_status(obj)
        uris: dict[str, list[str]] = {}
        ingresses = await self._require("networking.k8s.io/v1", "Ingress")
        for ingress in await self._list(ingresses, namespace):
            for host, backend in ingress_routes(ingress):
                uris.setdefault(backend, []).append(host)
        pods = await self._require("v1", "Pod")
        restarted = restarts(await self._list(pods, namespace, MANIFEST_SERVICE))
        statuses = {}
        for name, _count in services:
            status = workloads.get(name, ServiceStatus(name=name))
            hosts = sorted(set(uris.get(name, ())))
            ended = restarted.get(name, ServiceStatus(name=name))
            statuses[name] = status.model_copy(
                update={
                    "uris": hosts or None,
                    "restarts": ended.restarts,
                    "last_termination": ended.last_termination,
                }
            )
        kube_services = await self._require("v1", "Service")
        forwarded = forwarded_ports(
            await self._list(kube_services, namespace, target), public_hostname
        )
        balancers = await self._list(kube_services, namespace, f"{SERVICE_TARGET}=metal-lb")
        return LeaseStatus(
            lease_id=lease_id,
            services=statuses,
            forwarded_ports=forwarded,
            ips=leased_ips(balancers),
        )

    async def pods_failing(self, lease_id: LeaseID) -> dict[str, str]:
        """Per service whose pods keep failing (crash loop, image pull, unschedulable,
        repeated restarts), why — the first failing pod's reason; services whose pods
        are only starting are not in it."""
        pods = await self._require("v1", "Pod")
        failing: dict[str, str] = {}
        items = await self._list(pods, lease_namespace(lease_id), MANIFEST_SERVICE)
        for pod in sorted(items, key=lambda p: str(p["metadata"]["name"])):
            service = str(pod["metadata"]["labels"][MANIFEST_SERVICE])
            reason = pod_failure(pod) if service not in failing else None
            if reason:
                failing[service] = f"pod {pod['metadata']['name']}: {reason}"
        return failing

    async def manifest(self, lease_id: LeaseID) -> dict[str, Any] | None:
        """The lease's Manifest resource, None when there is none."""
        manifests = await self._resource(AKASH_API, "Manifest")
        if manifests is None:
            return None
        return await self._get(manifests, lease_namespace(lease_id), self.manifest_namespace)

    async def provider_hosts(self, lease_id: LeaseID) -> list[dict[str, Any]]:
        """The lease's ProviderHosts (by its labels), whichever provider declared them."""
        return await self._of_lease(lease_id, "ProviderHost")

    async def provider_leased_ips(self, lease_id: LeaseID) -> list[dict[str, Any]]:
        """The lease's ProviderLeasedIPs (by its labels), whichever provider declared them."""
        return await self._of_lease(lease_id, "ProviderLeasedIP")

    async def _of_lease(self, lease_id: LeaseID, kind: str) -> list[dict[str, Any]]:
        resource = await self._resource(AKASH_API, kind)
        if resource is None:
            return []
        return await self._list(resource, self.manifest_namespace, _lease_selector(lease_id))

    def scan(self) -> KubeScan:
        """Every object of the provider's leases, read back once for recovery."""
        return KubeScan(self)

    async def server_version(self) -> dict[str, str]:
        """The API server's ``/version`` (major, minor, gitVersion, platform…)."""
        try:
            answer = await self._request("GET", "/version")
        except _Answer as exc:
            raise _failure(exc, "the server version") from None
        return {str(key): str(value) for key, value in answer.items()}

    # -- apply --------------------------------------------------------------------------
    async def _apply(self, desired: Mapping[str, Any]) -> int:
        """Create or replace one object when it differs; 1 if it was written, else 0."""
        resource = await self._require(str(desired["apiVersion"]), str(desired["kind"]))
        meta = desired.get("metadata") or {}
        name, namespace = str(meta["name"]), meta.get("namespace")
        what = _describe(resource.kind, namespace, name)
        if resource.namespaced and not namespace:
            raise Rejected(f"{what}: no namespace")
        stamp = fingerprint(desired)
        for _ in range(_CONFLICT_ATTEMPTS):
            current = await self._get(resource, name, namespace)
            try:
                if current is None:
                    await self._request(
                        "POST", resource.path(namespace), body=created(desired, stamp)
                    )
                    log.debug("created %s", what)
                    return 1
                if (current.get("metadata") or {}).get("deletionTimestamp"):
                    raise Unavailable(f"{what} is being deleted")
                wanted = adopted(current, desired)  # a Go-built workload keeps its pods
                if up_to_date(current, wanted, stamp):
                    return 0
                body = merged(current, wanted, stamp)
                await self._request("PUT", resource.path(namespace, name), body=body)
                log.debug("updated %s", what)
                return 1
            except _Answer as exc:
                if exc.status not in (404, 409):  # 409/404: changed or gone meanwhile
                    raise _failure(exc, what) from None
                log.debug("%s changed meanwhile (%s); reading it again", what, exc)
        raise Unavailable(f"{what}: still conflicting after {_CONFLICT_ATTEMPTS} attempts")

    async def _established(self, name: str) -> None:
        """Wait (at most a request timeout) until the CRD ``name`` is served."""
        crds = await self._require("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        deadline = time.monotonic() + self.request_timeout_s
        while True:
            crd = await self._get(crds, name)
            conditions = ((crd or {}).get("status") or {}).get("conditions") or ()
            if any(
                c.get("type") == "Established" and c.get("status") == "True" for c in conditions
            ):
                return
            if time.monotonic() > deadline:
                raise Unavailable(f"CustomResourceDefinition {name} is not established")
            await asyncio.sleep(0.1)

    # -- requests -----------------------------------------------------------------------
    async def _resource(self, api_version: str, kind: str) -> _Resource | None:
        """Where ``kind`` is served (discovery, remembered); None when it is not."""
        found = self._resources.get((api_version, kind))
        if found is not None:
            return found
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            listing = await self._request("GET", path)
        except _Answer as exc:
            if exc.status == 404:
                return None
            raise _failure(exc, f"discovery of {api_version}") from None
        for entry in listing.get("resources") or ():
            if "/" not in entry["name"]:  # not a subresource
                resource = _Resource(api_version, entry["kind"], entry["name"], entry["namespaced"])
                self._resources[(api_version, resource.kind)] = resource
        return self._resources.get((api_version, kind))

    async def _require(self, api_version: str, kind: str) -> _Resource:
        resource = await self._resource(api_version, kind)
        if resource is None:
            raise Unavailable(f"the API server does not serve {kind} ({api_version})")
        return resource

    async def _get(
        self, resource: _Resource, name: str, namespace: str | None = None
    ) -> Obj | None:
        try:
            return await self._request("GET", resource.path(namespace, name))
        except _Answer as exc:
            if exc.status == 404:
                return None
            raise _failure(exc, _describe(resource.kind, namespace, name)) from None

    async def _list(
        self, resource: _Resource, namespace: str | None, selector: str = ""
    ) -> list[Obj]:
        """Every object in ``namespace`` (None: all) matching ``selector``."""
        return [obj async for page in self._pages(resource, namespace, selector) for obj in page]

    async def _pages(
        self, resource: _Resource, namespace: str | None, selector: str = "", limit: int = 0
    ) -> AsyncGenerator[list[Obj], None]:
        """The objects of a LIST, page by page (``limit``/``continue``), in the server's
        order: by namespace, then name."""
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", limit or _PAGE)]
            if selector:
                query.append(("labelSelector", selector))
            if token:
                query.append(("continue", token))
            try:
                page = await self._request("GET", resource.path(namespace), query=query)
            except _Answer as exc:
                where = f" in {namespace}" if namespace else ""
                raise _failure(exc, f"list of {resource.plural}{where}") from None
            yield list(page.get("items") or ())
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return

    async def _delete(self, resource: _Resource, name: str, namespace: str | None = None) -> bool:
        """Delete in the background (dependents follow); False when it was gone already."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        try:
            await self._request("DELETE", resource.path(namespace, name), body=body)
        except _Answer as exc:
            if exc.status == 404:
                return False
            if exc.status == 409 and resource is NAMESPACES:  # being deleted already
                return True
            raise _failure(exc, _describe(resource.kind, namespace, name)) from None
        return True

    async def _request(
        self, method: str, path: str, *, query: Sequence[tuple[str, Any]] = (), body: Any = None
    ) -> Obj:
        """One request, on a worker thread; :class:`_Answer` for a status other than 2xx,
        :class:`Unavailable` when there is no answer (in time)."""
        timeout = self.request_timeout_s
        try:
            async with asyncio.timeout(timeout + 1.0):  # the thread's own timeout, and a margin
                return await asyncio.to_thread(self._blocking, method, path, query, body)
        except _Answer:
            raise
        except TimeoutError:
            raise Unavailable(f"{method} {path}: no answer within {timeout:g}s") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unavailable(f"{method} {path}: {_cause(exc)}") from None

    def _blocking(self, method: str, path: str, query: Sequence[tuple[str, Any]], body: Any) -> Obj:
        try:
            answer = send(
                self.api_client,
                method,
                path,
                query=query,
                body=body,
                timeout=self.request_timeout_s,
            )
        except ApiException as exc:  # the client's own checks (Retry-After with its retries)
            raise _Answer(
                int(exc.status or 0), str(exc.reason or ""), str(exc.body or "")
            ) from None
        if not 200 <= answer.status < 300:
            raise _answer(answer.status, answer.reason, answer.data)
        return json.loads(answer.data) if answer.data else {}


# -- deciding what to write (pure) -----------------------------------------------------------
def _answer(status: int, reason: str, data: bytes) -> _Answer:
    """A non-2xx answer, with the message of the server's Status body when it has one."""
    message = ""
    try:
        body = json.loads(data) if data else {}
    except ValueError:
        body = {}
    if isinstance(body, dict):
        message = str(body.get("message") or "")
        reason = str(body.get("reason") or reason)
    elif data:
        message = data[:200].decode(errors="replace")
    return _Answer(status, reason, message)


def _failure(exc: _Answer, what: str) -> Unavailable | Rejected:
    """What an answer means for the caller: the server cannot now, or the object is refused."""
    if exc.status >= 500 or exc.status in (401, 403, 404, 408, 409, 410, 429):
        return Unavailable(f"{what}: {exc}")
    return Rejected(f"{what}: {exc}")


def _cause(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)  # urllib3's MaxRetryError carries the cause
    return f"{type(exc).__name__}: {reason if reason is not None else exc}"


def _describe(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _lease_selector(lease_id: LeaseID) -> str:
    parts = {
        "owner": lease_id.owner,
        "dseq": lease_id.dseq,
        "gseq": lease_id.gseq,
        "oseq": lease_id.oseq,
        "provider": lease_id.provider,
    }
    return ",".join(
        [f"{MANAGED}=true", *(f"{label}={parts[part]}" for part, label in LEASE_LABELS.items())]
    )
