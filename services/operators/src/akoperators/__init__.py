"""The provider's Kubernetes operators, each a process of its own on the service runtime.

- ``python -m akoperators.inventory``: nodes, GPUs and storage → the cluster's inventory,
  Akash's ``akash.network/capabilities.*`` node labels, ``/v1/inventory`` and bus events;
- ``python -m akoperators.hostname``: ``ProviderHost`` → one Ingress (or HTTPRoute) per host;
- ``python -m akoperators.ip``: ``ProviderLeasedIP`` → a MetalLB LoadBalancer Service.

Each runs its kopf handlers inside the runtime (:mod:`akoperators.adapters.kopfrun`), so it has the
same settings, logs, ``/healthz``/``/readyz``/``/metrics`` and shutdown as every service.
Only the adapters here (:mod:`akoperators.adapters.kube`, the kopf handlers) talk to Kubernetes.
"""
