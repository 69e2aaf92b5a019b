from __future__ import annotations

import pytest

from aktypes.attributes import Attribute, PlacementRequirements
from aktypes.coin import Dec, DecCoin
from aktypes.errors import GroupSpecError
from aktypes.groupspec import GroupSpec, ResourceUnit, validate_groups
from aktypes.resources import CPU, GPU, Memory, Resources, Storage, rv

MI = 2**20


def unit(
    uid: int = 1,
    *,
    count: int = 1,
    price: str = "10",
    cpu: int = 1000,
    volumes: int = 1,
    denom: str = "uakt",
    gpu: int = 0,
    memory: int = 512 * MI,
) -> ResourceUnit:
    return ResourceUnit(
        resource=Resources(
            id=uid,
            cpu=CPU(units=rv(cpu)),
            memory=Memory(size=rv(memory)),
            storage=[Storage(name=f"v{i}", size=rv(1024 * MI)) for i in range(volumes)],
            gpu=GPU(units=rv(gpu)),
            endpoints=[],
        ),
        count=count,
        price=DecCoin(denom=denom, amount=Dec(price)),
    )


def test_max_price_is_sum_of_unit_price_times_count() -> None:
    group = GroupSpec(
        name="g", resources=[unit(1, count=3, price="1.5"), unit(2, count=2, price="0.25")]
    )
    assert group.price() == DecCoin(denom="uakt", amount=Dec("5"))
    validate_groups([group])


@pytest.mark.parametrize(
    ("units", "fragment"),
    [
        ([unit(count=0)], "count 0 is outside 1..50"),
        ([unit(count=51)], "count 51 is outside 1..50"),
        ([unit(cpu=5)], "CPU (millicpu) 5 is outside 10..384000"),
        ([unit(volumes=5)], "5 storage volumes, at most 4 allowed"),
        ([unit(gpu=25)], "GPU units 25 is outside 0..24"),
        ([unit(memory=100)], "memory (bytes) 100 is outside"),
        ([unit(price="10000001")], "exceeds 10000000"),
        ([unit(i) for i in range(1, 22)], "21 resource units, at most 20 allowed"),
        ([unit(1), unit(1)], "duplicate resources ID 1"),
        ([unit(1), unit(2, denom="uact")], "several denominations"),
    ],
)
def test_chain_limits(units: list[ResourceUnit], fragment: str) -> None:
    with pytest.raises(GroupSpecError) as info:
        validate_groups([GroupSpec(name="g", resources=units)])
    assert any(fragment in problem for problem in info.value.problems), info.value.problems


def test_every_problem_is_reported() -> None:
    bad = GroupSpec(name="g", resources=[unit(count=0, cpu=1, volumes=6)])
    with pytest.raises(GroupSpecError) as info:
        validate_groups([bad, bad])
    assert len(info.value.problems) >= 7  # 3 per group + duplicate name


def test_requirement_attributes_are_checked() -> None:
    group = GroupSpec(
        name="g",
        requirements=PlacementRequirements(attributes=[Attribute(key="bad key", value="x")]),
        resources=[unit()],
    )
    assert any("requirements" in p for p in group.problems())


def test_json_is_the_chain_form() -> None:
    group = GroupSpec(name="g", resources=[unit()])
    data = group.go_dict()
    assert data["requirements"] == {
        "signed_by": {"all_of": None, "any_of": None},
        "attributes": None,
    }
    assert data["resources"][0]["resource"]["cpu"] == {"units": {"val": "1000"}}
    assert data["resources"][0]["price"] == {"denom": "uakt", "amount": "10.000000000000000000"}
    assert GroupSpec.model_validate(data, strict=False) == group
