"""Pure builders of every Kubernetes object a lease needs, as the JSON the API takes.

A lease's manifest group, the scheduler params of its reservation, the cluster's build
settings and commit levels go in; plain dicts come out, in the order to apply them, with
Akash's names, labels and shapes (``cluster/kube/builder`` of the Go provider), so an
operator can move a cluster between the two providers. No I/O and no ``kubernetes`` import:
the adapters send what these return.

- :mod:`.base`: settings, scheduler params, labels, quantities;
- :mod:`.workloads`: container, pod, Deployment or StatefulSet;
- :mod:`.access`: RBAC for read permissions, registry credentials;
- :mod:`.network`: NetworkPolicies, Services, the hostnames routed;
- :mod:`.lease`: everything of a lease in apply order, and what is stale;
- :mod:`.manifest`: the Manifest resource, both ways;
- :mod:`.custom`: ProviderHosts, ProviderLeasedIPs and Akash's CRDs (what the hostname
  and IP operators make Ingresses and LoadBalancer Services of);
- :mod:`.reading`: objects read back, the lease each belongs to, an Ingress's routes.
"""

from akcluster.domain.objects.base import (
    BuildSettings,
    SchedulerParams,
    allocation_of,
    lease_labels,
    scheduler_params,
    uses_offers,
)
from akcluster.domain.objects.custom import (
    crds,
    provider_host_objects,
    provider_leased_ip_objects,
)
from akcluster.domain.objects.lease import lease_objects, stale_objects
from akcluster.domain.objects.manifest import (
    group_from_manifest_object,
    manifest_object,
    scheduler_params_from_manifest_object,
)

__all__ = [
    "BuildSettings",
    "SchedulerParams",
    "allocation_of",
    "crds",
    "group_from_manifest_object",
    "lease_labels",
    "lease_objects",
    "manifest_object",
    "provider_host_objects",
    "provider_leased_ip_objects",
    "scheduler_params",
    "scheduler_params_from_manifest_object",
    "stale_objects",
    "uses_offers",
]
