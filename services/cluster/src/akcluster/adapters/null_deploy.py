"""The ``null`` deployment backend: no cluster, every lease's objects kept in memory.

For runs without Kubernetes (development, end-to-end tests of the other services): it
takes what the deployment managers apply, answers as a cluster would once everything is
running (every service available with its full count, every ProviderHost routed as the
hostname operator would route it), and forgets a lease on teardown.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Self

from akcluster.deployments.ports import LeaseStatus
from akcluster.domain.objects.base import SERVICE_TARGET
from akcluster.domain.objects.reading import lease_id_of
from aktypes.events import ServiceStatus
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace

Obj = dict[str, Any]

# what ``prune`` may remove: the objects of a lease's services, its policies and custom resources
PRUNED_KINDS = frozenset(
    {
        "Service",
        "Deployment",
        "StatefulSet",
        "NetworkPolicy",
        "Secret",
        "RoleBinding",
        "Role",
        "ServiceAccount",
        "ProviderHost",
        "ProviderLeasedIP",
    }
)


MANIFEST_NAMESPACE_KINDS = frozenset({"ProviderHost", "ProviderLeasedIP"})


def _key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", ""))


class NullDeployments:
    """The deployment backend's interface over a dict: (kind, namespace, name) → object."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.crds: list[Obj] = []

    async def install(self, crds: Sequence[dict[str, Any]]) -> None:
        self.crds = [copy.deepcopy(crd) for crd in crds]

    async def apply(self, objects: Sequence[dict[str, Any]]) -> int:
        """Keep each object; how many were new or different from what was kept."""
        changed = 0
        for obj in objects:
            key, stored = _key(obj), copy.deepcopy(dict(obj))
            if self.objects.get(key) != stored:
                self.objects[key] = stored
                changed += 1
        return changed

    async def prune(self, lease_id: LeaseID, keep: Collection[tuple[str, str]]) -> int:
        """Forget the lease's objects of :data:`PRUNED_KINDS` not in ``keep`` (kind, name)."""
        namespace, wanted = lease_namespace(lease_id), set(keep)
        stale = [
            key
            for key, obj in self.objects.items()
            if key[0] in PRUNED_KINDS
            and (key[0], key[2]) not in wanted
            and (key[1] == namespace or key[0] in MANIFEST_NAMESPACE_KINDS)
            and lease_id_of(obj) == lease_id
            and ((obj.get("metadata") or {}).get("labels") or {}).get(SERVICE_TARGET) != "metal-lb"
        ]
        for key in stale:
            del self.objects[key]
        return len(stale)

    async def teardown(self, lease_id: LeaseID) -> None:
        namespace = lease_namespace(lease_id)
        for key, obj in list(self.objects.items()):
            kind, ns, name = key
            if (
                ns == namespace
                or (kind == "Namespace" and name == namespace)
                or (kind == "Manifest" and name == namespace)
                or (kind in MANIFEST_NAMESPACE_KINDS and lease_id_of(obj) == lease_id)
            ):
                del self.objects[key]

    async def lease_status(
        self,
        lease_id: LeaseID,
        services: Sequence[tuple[str, int]],
        public_hostname: str,  # noqa: ARG002 - no node ports to forward without a cluster
    ) -> LeaseStatus:
        """Every service running with its full count; URIs from the lease's ProviderHosts
        (routed, as the hostname operator would route them)."""
        uris: dict[str, list[str]] = {}
        for (kind, _, _), obj in sorted(self.objects.items()):
            if kind == "ProviderHost" and lease_id_of(obj) == lease_id:
                spec = obj.get("spec") or {}
                uris.setdefault(str(spec["service_name"]), []).append(str(spec["hostname"]))
        return LeaseStatus(
            lease_id=lease_id,
            services={
                name: ServiceStatus(
                    name=name,
                    available=count,
                    total=count,
                    uris=uris.get(name),
                    replicas=count,
                    updated_replicas=count,
                    ready_replicas=count,
                    available_replicas=count,
                )
                for name, count in services
            },
        )

    async def pods_failing(self, lease_id: LeaseID) -> dict[str, str]:  # noqa: ARG002
        return {}

    async def manifest(self, lease_id: LeaseID) -> dict[str, Any] | None:
        namespace = lease_namespace(lease_id)
        for (kind, _, name), obj in self.objects.items():
            if kind == "Manifest" and name == namespace:
                return copy.deepcopy(obj)
        return None

    async def provider_hosts(self, lease_id: LeaseID) -> list[dict[str, Any]]:
        return self._of_lease(lease_id, "ProviderHost")

    async def provider_leased_ips(self, lease_id: LeaseID) -> list[dict[str, Any]]:
        return self._of_lease(lease_id, "ProviderLeasedIP")

    def _of_lease(self, lease_id: LeaseID, wanted: str) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(obj)
            for (kind, _, _), obj in sorted(self.objects.items())
            if kind == wanted and lease_id_of(obj) == lease_id
        ]

    def scan(self) -> NullScan:
        return NullScan(self.objects)

    async def server_version(self) -> dict[str, str]:
        return {}


class NullScan:
    """:class:`akcluster.adapters.kube_scan.KubeScan` over the kept objects."""

    def __init__(self, objects: Mapping[tuple[str, str, str], Obj]) -> None:
        self.objects = objects
        self.asked: set[tuple[str, str, str]] = set()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def unchanged(self, objects: Sequence[Mapping[str, Any]]) -> bool:
        keys = [_key(obj) for obj in objects]
        self.asked.update(keys)
        return all(self.objects.get(k) == obj for k, obj in zip(keys, objects, strict=True))

    async def unclaimed(self) -> tuple[list[LeaseID], list[LeaseID]]:
        manifests, namespaces = [], []
        for key, obj in sorted(self.objects.items()):
            kind, _, name = key
            lease_id = lease_id_of(obj) if kind in ("Manifest", "Namespace") else None
            if lease_id is None or key in self.asked:
                continue
            if kind == "Manifest":
                manifests.append(lease_id)
            elif lease_namespace(lease_id) == name:
                namespaces.append(lease_id)
        return manifests, namespaces
