"""The capabilities check: what the cluster offers against the provider's attributes."""

from __future__ import annotations

import pytest

from aktypes.attributes import Attribute, attributes_subset_of
from aktypes.capabilities import (
    GPUOffer,
    Offer,
    capability_attributes,
    compare,
    gpu_capabilities,
    storage_capability_groups,
    with_capabilities,
)

A100 = GPUOffer("nvidia", "a100", "80Gi", "sxm")
H100 = GPUOffer("nvidia", "h100", "80Gi", "sxm")


def attrs(**pairs: str) -> list[Attribute]:
    return [Attribute(key=k.replace("__", "/"), value=v) for k, v in pairs.items()]


def kv(mapping: dict[str, str]) -> list[Attribute]:
    return [Attribute(key=k, value=v) for k, v in mapping.items()]


def offer(**changes: object) -> Offer:
    fields: dict[str, object] = {
        "nodes": 2,
        "node_classes": [["beta2", "beta3"], ["beta2"]],
        "pools": {"beta2": 1 << 40, "beta3": 1 << 40},
        "gpus": [A100],
        "ips": 10,
    }
    return Offer.of(**(fields | changes))  # type: ignore[arg-type]


def found(mismatches: list[object]) -> set[tuple[str, str, str]]:
    return {(m.direction, m.kind, m.subject) for m in mismatches}  # type: ignore[attr-defined]


def test_an_offer_takes_ram_with_nodes_and_the_pools_some_node_takes() -> None:
    made = offer(pools={"beta2": 1, "beta3": 0, "gone": 5})
    assert made.storage == {"beta2": True, "ram": False}  # beta3 empty, gone on no node
    assert Offer.of(nodes=0, node_classes=[], pools={}, gpus=[]).storage == {}


def test_what_an_offer_calls_for_matches_it_exactly() -> None:
    wanted = offer()
    advertise = capability_attributes(wanted)
    assert advertise == {
        "capabilities/storage/1/class": "beta2",
        "capabilities/storage/1/persistent": "true",
        "capabilities/storage/2/class": "beta3",
        "capabilities/storage/2/persistent": "true",
        "capabilities/storage/3/class": "ram",
        "capabilities/storage/3/persistent": "false",
        "capabilities/gpu/vendor/nvidia/model/a100": "true",
        "capabilities/gpu/vendor/nvidia/model/a100/ram/80Gi": "true",
        "capabilities/gpu/vendor/nvidia/model/a100/ram/80Gi/interface/sxm": "true",
        "capabilities/gpu/vendor/nvidia/model/a100/interface/sxm": "true",
        "feat-endpoint-ip": "true",
    }
    assert compare(wanted, kv(advertise)) == []


def test_what_is_advertised_is_read_as_the_bid_engine_reads_it() -> None:
    """Every way a tenant may ask for the offered GPU and classes matches what is advertised,
    as the bid engine matches them."""
    advertised = kv(capability_attributes(offer()))
    groups = storage_capability_groups(advertised)
    for volume in (attrs(**{"class": "beta3", "persistent": "true"}), attrs(**{"class": "ram"})):
        assert any(attributes_subset_of(volume, g) for g in groups)
    gpus = gpu_capabilities(advertised)
    for asked in (
        "vendor/nvidia/model/a100",
        "vendor/nvidia/model/a100/ram/80Gi",
        "vendor/nvidia/model/a100/interface/sxm",
        "vendor/nvidia/model/a100/ram/80Gi/interface/sxm",
        "vendor/nvidia/model/*",
    ):
        assert attributes_subset_of([Attribute(key=asked, value="true")], gpus), asked


def test_a_class_and_a_gpu_in_the_inventory_but_not_on_chain_are_lost_orders() -> None:
    chain = {**capability_attributes(offer(gpus=[A100])), "region": "us-west"}
    chain = {k: v for k, v in chain.items() if v != "beta3" and "storage/2/" not in k}
    mismatches = compare(offer(gpus=[A100, H100]), kv(chain))
    assert found(mismatches) == {
        ("offered_not_advertised", "storage", "beta3 (persistent)"),
        ("offered_not_advertised", "gpu", "nvidia/h100/80Gi/sxm"),
    }
    storage = next(m for m in mismatches if m.kind == "storage")
    # numbered after the groups already on chain, so it can be added as it is
    assert storage.attributes == {
        "capabilities/storage/4/class": "beta3",
        "capabilities/storage/4/persistent": "true",
    }
    gpu = next(m for m in mismatches if m.kind == "gpu")
    assert gpu.attributes == dict.fromkeys(H100.attribute_keys(), "true")
    assert "no bid" in gpu.message


def test_a_class_and_a_gpu_on_chain_but_not_in_the_inventory_are_failed_bids() -> None:
    chain = capability_attributes(offer(gpus=[A100, H100]))
    chain["capabilities/gpu/vendor/nvidia/model/rtx4090"] = "true"
    mismatches = compare(offer(pools={"beta2": 1}), kv(chain))
    assert found(mismatches) == {
        ("advertised_not_offered", "storage", "beta3 (persistent)"),
        ("advertised_not_offered", "gpu", "nvidia/h100"),
        ("advertised_not_offered", "gpu", "nvidia/rtx4090"),
    }
    h100 = next(m for m in mismatches if m.subject == "nvidia/h100")
    assert h100.attributes == dict.fromkeys(H100.attribute_keys(), "true")
    assert all("cannot be placed" in m.message for m in mismatches)


def test_a_gpu_advertised_with_other_memory_or_only_in_part() -> None:
    chain = {
        "capabilities/gpu/vendor/nvidia/model/a100": "true",
        "capabilities/gpu/vendor/nvidia/model/a100/ram/40Gi": "true",
        "capabilities/gpu/vendor/nvidia/model/a100/interface/sxm": "false",  # says nothing
    }
    mismatches = compare(offer(pools={}, nodes=0, ips=0), kv(chain))
    offered = next(m for m in mismatches if m.direction == "offered_not_advertised")
    assert "in part" in offered.message
    assert list(offered.attributes) == A100.attribute_keys()[1:]
    failed = next(m for m in mismatches if m.direction == "advertised_not_offered")
    assert failed.attributes == {"capabilities/gpu/vendor/nvidia/model/a100/ram/40Gi": "true"}


def test_persistence_must_agree_and_be_said() -> None:
    chain = {
        "capabilities/storage/1/class": "beta2",
        "capabilities/storage/1/persistent": "false",
        "capabilities/storage/2/class": "ram",  # persistent unsaid: a ram volume still matches
        "capabilities/storage/3/class": "beta3",
        "capabilities/storage/3/persistent": "True",  # tenants ask "true": never matches
    }
    mismatches = compare(offer(gpus=[], ips=0), kv(chain))
    assert found(mismatches) == {
        ("offered_not_advertised", "storage", "beta2 (persistent)"),
        ("offered_not_advertised", "storage", "beta3 (persistent)"),
        ("offered_not_advertised", "storage", "ram (not persistent)"),
        ("advertised_not_offered", "storage", "beta2 (not persistent)"),
        ("advertised_not_offered", "storage", "ram (persistent unsaid)"),
        ("advertised_not_offered", "storage", "beta3 (persistent unsaid)"),
    }


def test_leased_ips_both_ways() -> None:
    assert found(compare(offer(gpus=[], pools={}, nodes=0), [])) == {
        ("offered_not_advertised", "ip_lease", "leased IPs")
    }
    assert compare(offer(gpus=[], pools={}, nodes=0), attrs(**{"ip-lease": "true"})) == []
    [failed] = compare(
        offer(gpus=[], pools={}, nodes=0, ips=0), attrs(**{"feat-endpoint-ip": "true"})
    )
    assert (failed.direction, failed.attributes) == (
        "advertised_not_offered", {"feat-endpoint-ip": "true"},
    )  # fmt: skip


def test_syncing_replaces_the_capabilities_and_keeps_the_rest() -> None:
    old = kv({
        "host": "akash",
        "capabilities/storage/1/class": "beta2",
        "capabilities/gpu/vendor/nvidia/model/rtx4090": "true",
        "ip-lease": "true",
        "region": "us-west",
    })  # fmt: skip
    new = with_capabilities(old, capability_attributes(offer()))
    assert [a.key for a in new[:2]] == ["host", "region"]
    assert {a.key: a.value for a in new[2:]} == capability_attributes(offer())
    assert compare(offer(), new) == []
    assert [a.key for a in with_capabilities(old, {})] == ["host", "region"]
    with pytest.raises(ValueError, match="not a capability"):
        with_capabilities(old, {"region": "us"})
