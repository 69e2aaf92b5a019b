"""The devnet's provider advertises what ``akash-provider run`` offers, no more, no less.

The offer is read from the same data the run uses: kubesim's example nodes, the storage
pools and the IP pool of :mod:`akcli.suite`, as the inventory and IP operators read them.
"""

from __future__ import annotations

from akcli.suite import IP_POOL, KUBESIM_NODES, STORAGE_POOLS
from akdevnet.node import PROVIDER_ATTRIBUTES
from akoperators.domain.ips import pool_size
from akoperators.inventory.settings import pools
from aktypes.attributes import Attribute
from aktypes.capabilities import GPUOffer, Offer, compare
from kubesim.cluster import ClusterSpec


def embedded_offer() -> Offer:
    cluster = ClusterSpec.load(KUBESIM_NODES)
    return Offer.of(
        nodes=len(cluster.nodes),
        node_classes=[node.storage_classes for node in cluster.nodes],
        pools=pools(STORAGE_POOLS),
        gpus=[
            GPUOffer(g.vendor, g.model, g.memory or "", g.interface or "")
            for node in cluster.nodes
            if (g := node.gpus) is not None
        ],
        ips=pool_size(IP_POOL),
    )


def attributes(mapping: dict[str, str]) -> list[Attribute]:
    return [Attribute(key=k, value=v) for k, v in mapping.items()]


def test_the_devnet_provider_advertises_what_the_embedded_inventory_offers() -> None:
    offer = embedded_offer()
    assert offer.storage == {"beta2": True, "beta3": True, "ram": False}
    assert {g.name for g in offer.gpus} == {"nvidia/a100/80Gi/sxm"}
    assert compare(offer, attributes(PROVIDER_ATTRIBUTES)) == []


def test_the_old_default_would_be_reported() -> None:
    old = {
        "host": "akash",
        "capabilities/storage/1/class": "beta2",
        "capabilities/storage/1/persistent": "true",
        "capabilities/storage/2/class": "ram",
        "capabilities/storage/2/persistent": "false",
        "capabilities/gpu/vendor/nvidia/model/a100": "true",
        "capabilities/gpu/vendor/nvidia/model/rtx4090": "true",
    }
    found = {(m.direction, m.subject) for m in compare(embedded_offer(), attributes(old))}
    assert found == {
        ("offered_not_advertised", "beta3 (persistent)"),
        ("offered_not_advertised", "nvidia/a100/80Gi/sxm"),  # asked with its memory: no bid
        ("offered_not_advertised", "leased IPs"),
        ("advertised_not_offered", "nvidia/rtx4090"),
    }
