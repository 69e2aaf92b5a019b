"""The IP operator: each ``ProviderLeasedIP`` becomes a MetalLB LoadBalancer Service, and
the pool of leased addresses is served over HTTP (:mod:`akoperators.ip.service`)."""
