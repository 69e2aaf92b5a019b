"""The inventory operator: what the cluster's nodes offer, told to the rest of the provider.

Akash's inventory operator (``operator/inventory``) watches nodes and pods, names GPUs from a
registry, labels nodes with ``akash.network/capabilities.*`` and streams the inventory to
the provider over gRPC. This one does the same on the service runtime:

- :mod:`.handlers`: kopf's watches of nodes, pods, claims and storage classes → the tables
  of :mod:`.state` (plus a full list at start and every ``AP_INVENTORY_RESYNC``);
- :mod:`.publisher`: the inventory (:mod:`akoperators.domain.inventory`) → bus events on
  ``akash.provider.inventory.events``, the retained status, node labels, metrics;
- :mod:`.api`: ``/v1/inventory`` and ``/v1/inventory/watch`` on the health port (8097).
"""
