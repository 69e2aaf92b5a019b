"""The hostname operator: each ``ProviderHost`` becomes the Ingress (or HTTPRoute) that
routes its hostname to its lease (:mod:`akoperators.hostname.service`)."""
