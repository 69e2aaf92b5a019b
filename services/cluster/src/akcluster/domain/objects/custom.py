"""Akash's other custom resources: a ProviderHost per hostname, a ProviderLeasedIP per
leased-IP port, and the CRDs themselves.

ProviderHosts tell the hostname operator which lease owns a hostname (name = hostname, in
the manifest namespace, Akash's spec). ProviderLeasedIPs tell the IP operator which ports of
which service to expose on the owner's endpoint; ports of one owner's endpoint share one
address through their ``sharing_key``. A lease taken over from the Go provider keeps Go's
names and sharing keys for the endpoints it had (:func:`go_sharing_key`), so the IP
operator finds the LoadBalancer Services Go's made, and their addresses, already there.
The CRDs (``manifests``, ``providerhosts`` and ``providerleasedips`` of ``akash.network``)
ship with the package as Akash's YAML.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Collection, Mapping
from importlib import resources

import yaml

from akcluster.domain.objects.base import BuildSettings, Obj, lease_labels, metadata
from akcluster.domain.objects.manifest import API_VERSION
from akcluster.domain.objects.network import hostnames
from aktypes.ids import LeaseID
from aktypes.manifest import Group


def provider_host_objects(
    lease_id: LeaseID,
    group: Group,
    *,
    settings: BuildSettings,
    withheld: Collection[str] = (),
    adopted: Mapping[str, str] | None = None,
) -> list[Obj]:
    """A ProviderHost per routed hostname (lowercased: accepted, generated or ``adopted``
    from the Go provider), except those ``withheld``."""
    skip = {host.lower() for host in withheld}
    routed = hostnames(lease_id, group, settings.ingress_domain, adopted)
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "ProviderHost",
            "metadata": metadata(host, lease_labels(lease_id), settings.manifest_namespace),
            "spec": {
                "owner": str(lease_id.owner),
                "provider": str(lease_id.provider),
                "hostname": host,
                "dseq": lease_id.dseq,
                "gseq": lease_id.gseq,
                "oseq": lease_id.oseq,
                "service_name": service.name,
                "external_port": expose.effective_external_port,
            },
        }
        for host, (service, expose) in routed.items()
        if host not in skip
    ]


def sharing_key(owner: str, endpoint: str) -> str:
    """One address per owner and endpoint name (a DNS label, stable across leases)."""
    return "ip-" + hashlib.sha256(f"{owner}/{endpoint}".encode()).hexdigest()[:20]


_GO_ENDPOINT = re.compile(r"[a-z\d\-]+")


def go_sharing_key(lease_id: LeaseID, endpoint: str) -> str:
    """The Go provider's sharing key of an owner's endpoint: ``<owner>-ip-<endpoint>``, the
    endpoint name replaced by a base32 digest of it when it is not a DNS label."""
    name = endpoint
    if not _GO_ENDPOINT.fullmatch(endpoint):
        digest = hashlib.sha256(endpoint.encode()).digest()[:15]
        name = base64.b32hexencode(digest).decode().lower()  # 15 bytes: no padding
    return f"{lease_id.owner}-ip-{name}"


def provider_leased_ip_objects(
    lease_id: LeaseID,
    group: Group,
    *,
    settings: BuildSettings,
    withheld: Collection[str] = (),
    adopted: Collection[str] = (),
) -> list[Obj]:
    """A ProviderLeasedIP per port exposed on a leased-IP endpoint, except on endpoints
    ``withheld`` (another lease of the owner holds them). Those on an endpoint ``adopted``
    from the Go provider are named and keyed as Go's (``<sharing key>-<protocol>-<external
    port>``, :func:`go_sharing_key`): the very resources Go declared."""
    lease = hashlib.sha256(str(lease_id).encode()).hexdigest()[:12]
    found: list[Obj] = []
    for service in group.services or ():
        for expose in service.expose or ():
            if not expose.ip or expose.ip in withheld:
                continue
            proto = "UDP" if expose.proto == "UDP" else "TCP"
            if expose.ip in adopted:
                key = go_sharing_key(lease_id, expose.ip)
                name = f"{key}-{proto}-{expose.effective_external_port}".lower()
            else:
                key = sharing_key(lease_id.owner, expose.ip)
                name = f"{lease}-{service.name}-{expose.port}-{proto.lower()}"
            found.append(
                {
                    "apiVersion": API_VERSION,
                    "kind": "ProviderLeasedIP",
                    "metadata": metadata(name, lease_labels(lease_id), settings.manifest_namespace),
                    "spec": {
                        "lease_id": {
                            "owner": lease_id.owner,
                            "dseq": str(lease_id.dseq),
                            "gseq": lease_id.gseq,
                            "oseq": lease_id.oseq,
                            "provider": lease_id.provider,
                        },
                        "service_name": service.name,
                        "port": expose.port,
                        "external_port": expose.effective_external_port,
                        "protocol": proto,
                        "sharing_key": key,
                    },
                }
            )
    return found


def crds() -> list[Obj]:
    """The CustomResourceDefinitions of ``akash.network``: manifests, providerhosts,
    providerleasedips (shipped with the package)."""
    folder = resources.files("akcluster").joinpath("crds")
    found: list[Obj] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            found.extend(doc for doc in yaml.safe_load_all(entry.read_text()) if doc)
    return found
