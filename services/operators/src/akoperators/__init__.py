"""The provider's Kubernetes operators, each a process of its own on the service runtime.

- ``python -m akoperators.inventory``: nodes, GPUs and storage → the cluster's inventory,
  Akash's ``akash.network/capabilities.*`` node labels, ``/v1/inventory`` and bus events;
- ``python -m akoperators.hostname``: ``ProviderHost`` → one Ingress (or HTTPRoute) per host;
- ``python -m akoperators.ip``: ``ProviderLeasedIP`` → a MetalLB LoadBalancer Service.

Each runs its kopf handlers inside the runtime (:mod:`akoperators.adapters.kopfrun`), so it
has the same settings, logs, ``/healthz``/``/readyz``/``/metrics`` and shutdown as every service.
Only the adapters here (:mod:`akoperators.adapters.kube`, the kopf handlers) talk to Kubernetes.
"""

import sys


def without_kubernetes_asyncio() -> None:
    """Keep kopf from importing ``kubernetes_asyncio`` in this process.

    kopf imports that client, when it is installed, only to recognise its objects; the
    operators never hand it any, and the import costs a second and a half of CPU at every
    start (1.4 s of 2.2 s). Called first by each operator's ``__main__``, never on import of
    this package: another program in the same interpreter may want the client."""
    sys.modules.setdefault("kubernetes_asyncio", None)  # type: ignore[arg-type]
