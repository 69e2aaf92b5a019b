"""Objects read back from a cluster: which lease one belongs to, where an Ingress routes.

Both deployment backends (:mod:`akcluster.adapters.kube_deploy` and
:mod:`akcluster.adapters.null_deploy`) and the recovery scan read the objects the builders
wrote, or the Go provider did: the five lease labels (:data:`LEASE_LABELS`) name a lease,
and so does a Manifest resource's ``spec.lease_id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from akcluster.domain.objects.base import (
    LEASE_DSEQ,
    LEASE_GSEQ,
    LEASE_OSEQ,
    LEASE_OWNER,
    LEASE_PROVIDER,
)
from akcluster.domain.objects.custom import go_sharing_key
from aktypes.errors import InvalidIDError
from aktypes.ids import LeaseID
from aktypes.manifest import Group

LEASE_LABELS = {
    "owner": LEASE_OWNER,
    "dseq": LEASE_DSEQ,
    "gseq": LEASE_GSEQ,
    "oseq": LEASE_OSEQ,
    "provider": LEASE_PROVIDER,
}


def lease_id_of(obj: Mapping[str, Any]) -> LeaseID | None:
    """The lease ``obj`` belongs to: from its five lease labels, else (a Manifest) from
    ``spec.lease_id``; None when it names no valid lease."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    candidates: list[Mapping[str, Any]] = []
    if all(label in labels for label in LEASE_LABELS.values()):
        candidates.append({part: labels[label] for part, label in LEASE_LABELS.items()})
    spec = obj.get("spec")
    if isinstance(spec, Mapping) and isinstance(spec.get("lease_id"), Mapping):
        candidates.append(spec["lease_id"])
    for parts in candidates:
        try:  # the string form: numbers in labels (and Akash's dseq) are strings
            return LeaseID.parse("/".join(str(parts.get(part, "")) for part in LEASE_LABELS))
        except InvalidIDError:
            continue
    return None


def generated_hosts(group: Group, provider_hosts: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Hostname → service of the ProviderHosts (of one lease) that route none of the
    group's accepted hostnames: the generated ones (the Go provider declares no other)."""
    accepted = {
        host.lower()
        for service in group.services or ()
        for expose in service.expose or ()
        for host in expose.hosts or ()
    }
    found: dict[str, str] = {}
    for obj in provider_hosts:
        spec = obj.get("spec") or {}
        host = str(spec.get("hostname") or (obj.get("metadata") or {}).get("name") or "").lower()
        service = str(spec.get("service_name") or "")
        if host and service and host not in accepted:
            found[host] = service
    return dict(sorted(found.items()))


def go_endpoints(
    lease_id: LeaseID, group: Group, leased_ips: Iterable[Mapping[str, Any]]
) -> list[str]:
    """The group's leased-IP endpoints that ProviderLeasedIPs (of the lease) declare under
    the Go provider's sharing key: those Go exposed, whose addresses stay as Go keyed them."""
    keys = {str((obj.get("spec") or {}).get("sharing_key") or "") for obj in leased_ips}
    endpoints = {
        expose.ip
        for service in group.services or ()
        for expose in service.expose or ()
        if expose.ip and go_sharing_key(lease_id, expose.ip) in keys
    }
    return sorted(endpoints)


def ingress_routes(ingress: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(hostname, Service) of each rule of an Ingress that routes a host to a Service."""
    routes = []
    for rule in (ingress.get("spec") or {}).get("rules") or ():
        for path in (rule.get("http") or {}).get("paths") or ():
            name = ((path.get("backend") or {}).get("service") or {}).get("name")
            if name and rule.get("host") and (rule["host"], name) not in routes:
                routes.append((str(rule["host"]), str(name)))
    return routes
