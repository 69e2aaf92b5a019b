"""What the cluster offers, for the capabilities check (:mod:`aktypes.capabilities`).

The offer is read from the inventory reservations place on, so the check says what the
cluster can actually place: each node's GPU model (the one it offers most of, as
:func:`~akcluster.domain.inventory.from_operator` keeps it), the persistent pools some node
takes, ``ram`` on any cluster with nodes, and the leased IPs of the IP operator's pool.
"""

from __future__ import annotations

from akcluster.domain.inventory import Inventory
from aktypes.capabilities import GPUOffer, Offer


def offer_of(inventory: Inventory, ips: int) -> Offer:
    """The offer of ``inventory`` with ``ips`` leased IPs to hand out."""
    return Offer.of(
        nodes=len(inventory.nodes),
        node_classes=[node.storage_classes for node in inventory.nodes],
        pools={cls: pool.capacity for cls, pool in inventory.storage.items()},
        gpus=[
            GPUOffer(model.vendor, model.model, model.memory, model.interface)
            for node in inventory.nodes
            if (model := node.gpu_model) is not None and node.allocatable.gpu > 0
        ],
        ips=ips,
    )
