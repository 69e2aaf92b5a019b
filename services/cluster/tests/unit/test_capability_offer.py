"""What the cluster offers the capabilities check: what reservations can place."""

from __future__ import annotations

from akcluster.domain.capabilities import offer_of
from akcluster.domain.inventory import Capacity, GPUModel, Inventory, Node, StoragePool
from aktypes.capabilities import GPUOffer


def test_the_offer_is_what_placement_can_use() -> None:
    inventory = Inventory(
        nodes=(
            Node("cpu", Capacity(cpu=4000), storage_classes=frozenset({"beta2"})),
            Node(
                "gpu",
                Capacity(cpu=4000, gpu=2),
                gpu_model=GPUModel("nvidia", "h100", "80Gi", "sxm"),
                storage_classes=frozenset({"beta2", "beta3"}),
            ),
            Node("gone", Capacity(cpu=4000), gpu_model=GPUModel("nvidia", "t4")),  # no units
        ),
        storage={
            "beta2": StoragePool(1 << 40),
            "beta3": StoragePool(1 << 40, 1 << 40),
            "x": StoragePool(1),
        },
    )
    offer = offer_of(inventory, ips=3)
    # a full pool is still offered (it may free up); a pool no node takes is not
    assert offer.storage == {"beta2": True, "beta3": True, "ram": False}
    assert offer.gpus == {GPUOffer("nvidia", "h100", "80Gi", "sxm")}
    assert offer.ips == 3
    assert offer_of(Inventory(), ips=0).storage == {}
