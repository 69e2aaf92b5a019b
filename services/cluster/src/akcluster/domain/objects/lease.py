"""Every Kubernetes object of a lease, in the order they are applied, and what is stale.

The order is Akash's (``cluster/kube/client.go`` ``Deploy``): the namespace, its network
policies, then per service its RBAC, pull secret, workload and Services. The Manifest
resource, the ProviderHosts and the ProviderLeasedIPs live in the manifest namespace and are
built by :mod:`.manifest` and :mod:`.custom`; the Ingresses of the hostnames and the
leased-IP Services are the hostname and IP operators'.

:func:`stale_objects` is Akash's cleanup without its quirk: Go selected stale objects by a
label (``akash.network/service-target=true``) that its builders never wrote, so nothing was
ever cleaned. Here anything that belongs to one of the lease's services and that the group
no longer asks for is stale, including a Deployment whose service now needs a StatefulSet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from akcluster.domain.objects.access import credentials_secret, rbac_objects
from akcluster.domain.objects.base import (
    MANAGED,
    MANIFEST_SERVICE,
    MANIFEST_VERSION,
    RESOURCE_VERSION,
    SERVICE_TARGET,
    BuildSettings,
    Obj,
    SchedulerParams,
    lease_labels,
    metadata,
    namespace_of,
)
from akcluster.domain.objects.network import (
    network_policies,
    node_port_name,
    service_ports,
    services,
)
from akcluster.domain.objects.workloads import (
    credentials_secret_name,
    is_stateful,
    read_permissions,
    workload,
)
from akcluster.domain.placement import CommitLevels
from aktypes.ids import LeaseID
from aktypes.manifest import Group

# kinds a service owns, in the order they are removed
SERVICE_KINDS = (
    "Service",
    "Deployment",
    "StatefulSet",
    "Secret",
    "RoleBinding",
    "Role",
    "ServiceAccount",
)


def namespace_object(lease_id: LeaseID, version: str, labels: dict[str, str]) -> Obj:
    annotations = {MANIFEST_VERSION: version} if version else None
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": metadata(namespace_of(lease_id), dict(labels), annotations=annotations),
    }


def lease_objects(
    lease_id: LeaseID,
    group: Group,
    version: str,
    *,
    settings: BuildSettings,
    levels: CommitLevels,
    params: Mapping[str, SchedulerParams],
    resource_version: str = "",
) -> list[dict[str, Any]]:
    """The lease's objects in apply order (the Manifest resource and Akash's other custom
    resources aside).

    ``params`` are the scheduler params by service name (:func:`.base.scheduler_params`);
    ``resource_version`` is the Manifest resource's, labelled on the objects as Akash does.
    """
    labels = lease_labels(lease_id)
    if resource_version:
        labels[RESOURCE_VERSION] = resource_version
    objects = [namespace_object(lease_id, version, labels)]
    objects += network_policies(lease_id, group, settings, labels)
    for service in group.services or ():
        objects += rbac_objects(service, lease_id)
        secret = credentials_secret(service, lease_id)
        if secret is not None:
            objects.append(secret)
        objects.append(
            workload(
                service,
                lease_id,
                params.get(service.name, SchedulerParams()),
                settings=settings,
                levels=levels,
                resource_version=resource_version,
            )
        )
        objects += services(service, lease_id, resource_version)
    return objects


def _wanted(group: Group) -> dict[str, set[str]]:
    wanted: dict[str, set[str]] = {kind: set() for kind in SERVICE_KINDS}
    for service in group.services or ():
        wanted["StatefulSet" if is_stateful(service) else "Deployment"].add(service.name)
        if service_ports(service, node_port=False):
            wanted["Service"].add(service.name)
        if service_ports(service, node_port=True):
            wanted["Service"].add(node_port_name(service.name))
        if service.credentials is not None:
            wanted["Secret"].add(credentials_secret_name(service))
        if read_permissions(service):
            for kind in ("ServiceAccount", "Role", "RoleBinding"):
                wanted[kind].add(service.name)
    return wanted


def stale_objects(existing: Iterable[Mapping[str, Any]], group: Group) -> list[tuple[str, str]]:
    """``(kind, name)`` of the ``existing`` objects of the lease's services that ``group``
    no longer has, in the order to delete them. Leased-IP Services (``metal-lb``) and
    objects not labelled with a manifest service are left alone."""
    wanted = _wanted(group)
    stale: list[tuple[str, str]] = []
    for obj in existing:
        kind = str(obj.get("kind", ""))
        meta = obj.get("metadata") or {}
        name, labels = str(meta.get("name", "")), meta.get("labels") or {}
        if (
            kind in wanted
            and labels.get(MANAGED) == "true"
            and MANIFEST_SERVICE in labels
            and labels.get(SERVICE_TARGET) != "metal-lb"
            and name not in wanted[kind]
        ):
            stale.append((kind, name))
    return sorted(stale, key=lambda ref: (SERVICE_KINDS.index(ref[0]), ref[1]))
