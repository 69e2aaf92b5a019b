"""The provider's Kubernetes client code, written once for the cluster service, the
operators and the gateway.

- :mod:`akkube.client`: the official client made from the provider's kubeconfig (sealed or
  not, ``$KUBECONFIG``, in-cluster); the same credentials for kopf and websockets;
- :mod:`akkube.calls`: requests by path for any resource (CRDs too), answered as JSON;
- :mod:`akkube.watch`: list, then watch, on threads feeding the event loop; 410 Gone lists
  again;
- :mod:`akkube.quantity` and :mod:`akkube.pods` (pure: no I/O library, so a service's
  ``domain/`` may import them): quantities, and what pods and claims take.

This package imports none of its modules: importing a pure one loads no client.
"""
