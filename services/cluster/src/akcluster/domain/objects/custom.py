"""Akash's other custom resources: a ProviderHost per hostname, and the CRDs themselves.

ProviderHosts tell the hostname operator which lease owns a hostname (name = hostname, in
the manifest namespace, Akash's spec). The CRDs (``manifests``, ``providerhosts`` and
``providerleasedips`` of ``akash.network``) ship with the package as Akash's YAML.
"""

from __future__ import annotations

from collections.abc import Collection
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
) -> list[Obj]:
    """A ProviderHost per accepted hostname (lowercased), except those ``withheld``."""
    skip = {host.lower() for host in withheld}
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
        for host, (service, expose) in hostnames(group).items()
        if host not in skip
    ]


def crds() -> list[Obj]:
    """The CustomResourceDefinitions of ``akash.network``: manifests, providerhosts,
    providerleasedips (shipped with the package)."""
    folder = resources.files("akcluster").joinpath("crds")
    found: list[Obj] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            found.extend(doc for doc in yaml.safe_load_all(entry.read_text()) if doc)
    return found
