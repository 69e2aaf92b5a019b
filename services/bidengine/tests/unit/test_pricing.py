"""The ``scale`` strategy against independently computed exact prices, and the script input.

Expected prices are computed here with Python's ``decimal`` at 100 digits, rounding
memory and storage to 16 places half up per class total as Go's shopspring ``Div`` does.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest

from akbidengine.domain.pricing import (
    PriceRequest,
    PricingError,
    ScaleStrategy,
    script_input,
    script_stdin,
)
from aktypes.attributes import Attribute
from aktypes.coin import Dec, DecCoin
from aktypes.events import ResourceOffer
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.resources import CPU, GPU, Endpoint, EndpointKind, Memory, Resources, Storage, rv

MI = 2**20
GI = 2**30
OWNER = "akash1tenant"


def volume(name: str, size: int, **attrs: str) -> Storage:
    attributes = [Attribute(key=k, value=v) for k, v in attrs.items()] or None
    return Storage(name=name, size=rv(size), attributes=attributes)


def unit(
    uid: int,
    *,
    cpu: int = 1000,
    memory: int = GI,
    storage: tuple[Storage, ...] = (),
    gpu: int = 0,
    gpu_keys: tuple[str, ...] = (),
    endpoints: tuple[Endpoint, ...] = (),
    count: int = 1,
    price: str = "1000",
    denom: str = "uact",
) -> ResourceUnit:
    return ResourceUnit(
        resource=Resources(
            id=uid,
            cpu=CPU(units=rv(cpu)),
            memory=Memory(size=rv(memory)),
            storage=list(storage) or None,
            gpu=GPU(
                units=rv(gpu), attributes=[Attribute(key=k, value="true") for k in gpu_keys] or None
            ),
            endpoints=list(endpoints),
        ),
        count=count,
        price=DecCoin(denom=denom, amount=Dec(price)),
    )


def group(*units: ResourceUnit) -> GroupSpec:
    return GroupSpec(name="web", resources=list(units))


def request(*units: ResourceUnit, allocated: tuple[ResourceOffer, ...] = ()) -> PriceRequest:
    return PriceRequest(owner=OWNER, group=group(*units), allocated=allocated)


def strategy(
    cpu: str = "0",
    memory: str = "0",
    storage: dict[str, str] | None = None,
    endpoint: str = "0",
    ip: str = "0",
    gpu: dict[str, str] | None = None,
) -> ScaleStrategy:
    return ScaleStrategy(
        cpu=Dec(cpu),
        memory=Dec(memory),
        storage={k: Dec(v) for k, v in (storage or {"ephemeral": "0"}).items()},
        endpoint=Dec(endpoint),
        ip=Dec(ip),
        gpu={k: Dec(v) for k, v in (gpu or {}).items()},
    )


def mib(size: int) -> Decimal:
    """bytes / 2^20 rounded to 16 places, half up (shopspring ``Div``)."""
    with localcontext() as ctx:
        ctx.prec = 100
        return (Decimal(size) / Decimal(MI)).quantize(Decimal("1e-16"), rounding=ROUND_HALF_UP)


def fixed18(value: Decimal) -> str:
    with localcontext() as ctx:
        ctx.prec = 100
        assert value == value.quantize(Decimal("1e-18")), "test expectation needs ≤ 18 places"
        return f"{value:.18f}"


def price_code(scale: ScaleStrategy, req: PriceRequest) -> str:
    with pytest.raises(PricingError) as info:
        scale.compute(req)
    return info.value.code


# --- Go's own vectors (bidengine/pricing_test.go) -------------------------------------------


def test_memory_of_one_byte_rounds_to_sixteen_places() -> None:
    price = strategy(memory="1").compute(request(unit(1, cpu=10, memory=1)))
    assert str(price.amount) == "0.000000953674316400"


def test_memory_just_under_two_mebibytes_rounds_half_up() -> None:
    price = strategy(memory="1").compute(request(unit(1, cpu=10, memory=2 * MI - 1)))
    assert str(price.amount) == "1.999999046325683600"


def test_cpu_scale_times_millicpu() -> None:
    price = strategy(cpu="22").compute(request(unit(1, cpu=13)))
    assert price == DecCoin(denom="uact", amount=Dec(22 * 13))


# --- multi-unit groups ------------------------------------------------------------------------


def test_multi_unit_group_with_counts_classes_endpoints_and_ips() -> None:
    ip1 = Endpoint(kind=EndpointKind.LEASED_IP, sequence_number=1)
    ip2 = Endpoint(kind=EndpointKind.LEASED_IP, sequence_number=2)
    web = unit(
        1,
        cpu=1500,
        memory=512 * MI + 3,
        storage=(
            volume("root", GI + 7),
            volume("data", 10 * GI + 1, persistent="true"),
        ),
        endpoints=(Endpoint(), Endpoint(kind=EndpointKind.RANDOM_PORT), ip1),
        count=3,
    )
    db = unit(
        2,
        cpu=250,
        memory=1_000_000_001,
        storage=(
            volume("root", 5 * MI + 9),
            volume("pg", 20 * GI + 5, persistent="true", **{"class": "beta2"}),
            volume("shm", 64 * MI + 1, persistent="false", **{"class": "ram"}),
        ),
        endpoints=(ip1, ip2),
        count=2,
    )
    scale = strategy(
        cpu="0.0071",
        memory="0.03",
        storage={"ephemeral": "0.11", "beta2": "0.05"},
        endpoint="1.5",
        ip="7",
    )
    price = scale.compute(request(web, db))

    cpu = Decimal(1500 * 3 + 250 * 2) * Decimal("0.0071")
    memory = mib((512 * MI + 3) * 3 + 1_000_000_001 * 2) * Decimal("0.03")
    # "data" is persistent without a class and "shm" is ram: both are priced as ephemeral.
    ephemeral = (GI + 7) * 3 + (10 * GI + 1) * 3 + (5 * MI + 9) * 2 + (64 * MI + 1) * 2
    storage = mib(ephemeral) * Decimal("0.11") + mib((20 * GI + 5) * 2) * Decimal("0.05")
    endpoints = Decimal(3 + 2) * Decimal("1.5")  # entries, not multiplied by count
    ips = Decimal(2) * 7  # distinct sequence numbers 1 and 2
    assert price.denom == "uact"
    assert str(price.amount) == fixed18(cpu + memory + storage + endpoints + ips)


def test_storage_rounds_each_class_total_not_each_volume() -> None:
    # 8 bytes over 5 MiB -> ...7.62939453125e-6 each; rounding each would add 1e-16.
    req = request(unit(1, cpu=10, storage=(volume("a", 5 * MI + 8), volume("b", 5 * MI + 8))))
    price = strategy(storage={"ephemeral": "1"}).compute(req)
    assert str(price.amount) == fixed18(mib(2 * (5 * MI + 8)))
    assert str(price.amount) == "10.000015258789062500"


def test_persistent_accepts_go_booleans() -> None:
    req = request(unit(1, storage=(volume("d", GI, persistent="True", **{"class": "beta3"}),)))
    price = strategy(storage={"ephemeral": "1", "beta3": "2"}).compute(req)
    assert str(price.amount) == fixed18(Decimal(1024) * 2)


def test_unpriced_storage_class_refuses() -> None:
    req = request(unit(1, storage=(volume("d", GI, persistent="true", **{"class": "beta3"}),)))
    with pytest.raises(PricingError, match="'beta3'") as info:
        strategy(cpu="1", storage={"ephemeral": "1"}).compute(req)
    assert info.value.code == "storage_class_unpriced"


def test_zero_price_refused() -> None:
    assert price_code(strategy(ip="5"), request(unit(1))) == "price_zero"


def test_more_than_eighteen_places_refused() -> None:
    # 1 byte = 0.0000009536743164 MiB (16 places) × 0.001 needs 19 places: Go cannot parse it.
    req = request(unit(1, cpu=10, memory=1))
    assert price_code(strategy(memory="0.001"), req) == "price_precision"
    # Akash's documented storage scale hits the same wall for a size not a multiple of 16.
    odd = request(unit(1, cpu=10, storage=(volume("v", 10**9 + 1),)))
    assert price_code(strategy(storage={"ephemeral": "0.00016"}), odd) == "price_precision"
    even = request(unit(1, cpu=10, storage=(volume("v", 10**9),)))
    price = strategy(storage={"ephemeral": "0.00016"}).compute(even)
    assert str(price.amount) == fixed18(mib(10**9) * Decimal("0.00016"))


def test_price_above_max_sortable_refused() -> None:
    req = request(unit(1, cpu=10_000))
    assert price_code(strategy(cpu="100000000000000.000000000000000001"), req) == (
        "price_out_of_range"
    )
    assert str(strategy(cpu="100000000000000").compute(req).amount) == fixed18(Decimal(10**18))


def test_group_without_units_is_invalid() -> None:
    req = PriceRequest(owner=OWNER, group=GroupSpec(name="x", resources=[]))
    assert price_code(strategy(cpu="1"), req) == "invalid_group"


# --- GPUs ---------------------------------------------------------------------------------------

GPU_MAP = {"a100.80Gi.sxm": "3", "a100.80Gi": "2", "a100": "1", "*": "0.5"}


@pytest.mark.parametrize(
    ("key", "dropped", "expected"),
    [
        ("vendor/nvidia/model/a100/ram/80Gi/interface/sxm", (), "3"),
        ("vendor/nvidia/model/a100/ram/80Gi/interface/sxm", ("a100.80Gi.sxm",), "2"),
        ("vendor/nvidia/model/a100/ram/80Gi", (), "2"),
        ("vendor/nvidia/model/a100/ram/80Gi", ("a100.80Gi",), "1"),
        ("vendor/nvidia/model/a100/ram/40Gi", (), "1"),
        ("vendor/nvidia/model/a100", ("a100",), "0.5"),
        ("vendor/nvidia/model/h100", (), "0.5"),
        ("vendor/nvidia/model/*", (), "0.5"),
    ],
)
def test_gpu_model_lookup_order(key: str, dropped: tuple[str, ...], expected: str) -> None:
    prices = {k: v for k, v in GPU_MAP.items() if k not in dropped}
    req = request(unit(1, gpu=2, gpu_keys=(key,), count=3))
    price = strategy(cpu="1", gpu=prices).compute(req)
    assert str(price.amount) == fixed18(Decimal(1000 * 3) + Decimal(2 * 3) * Decimal(expected))


def test_gpu_without_match_or_fallback_refused() -> None:
    req = request(unit(4, gpu=1, gpu_keys=("vendor/nvidia/model/h100",)))
    with pytest.raises(PricingError, match="resource unit 4.*h100") as info:
        strategy(cpu="1", gpu={"a100": "1"}).compute(req)
    assert info.value.code == "gpu_model_unpriced"


def test_gpus_unpriced_when_no_gpu_map() -> None:
    req = request(unit(1, gpu=4, gpu_keys=("vendor/nvidia/model/a100",)))
    assert str(strategy(cpu="1").compute(req).amount) == fixed18(Decimal(1000))


def test_gpu_priced_at_the_reserved_model() -> None:
    wanted = unit(1, gpu=1, gpu_keys=("vendor/nvidia/model/*",), count=2)
    reserved = unit(1, gpu=1, gpu_keys=("vendor/nvidia/model/a100/ram/80Gi",), count=2)
    offer = ResourceOffer(resources=reserved.resource, count=2)
    price = strategy(cpu="1", gpu=GPU_MAP).compute(request(wanted, allocated=(offer,)))
    assert str(price.amount) == fixed18(Decimal(2000) + 2 * 2)


def test_gpu_with_several_acceptable_models_priced_at_the_dearest() -> None:
    keys = ("vendor/nvidia/model/a100", "vendor/nvidia/model/a100/ram/80Gi")
    price = strategy(cpu="1", gpu=GPU_MAP).compute(request(unit(1, gpu=1, gpu_keys=keys)))
    assert str(price.amount) == fixed18(Decimal(1000) + 2)


# --- settings -------------------------------------------------------------------------------------


def test_from_settings_parses_go_flag_syntax() -> None:
    scale = ScaleStrategy.from_settings(
        cpu="0.0071",
        memory="1e-3",
        storage="0.00016,beta2=0.00032",
        endpoint="+2",
        ip="5",
        gpu="a100=120, *=100",
    )
    assert scale.cpu == Dec("0.0071")
    assert scale.memory == Dec("0.001")
    assert scale.storage == {"ephemeral": Dec("0.00016"), "beta2": Dec("0.00032")}
    assert scale.endpoint == Dec(2)
    assert scale.gpu == {"a100": Dec(120), "*": Dec(100)}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cpu": "-1"}, "negative"),
        ({"cpu": "abc"}, "not a decimal number"),
        ({"memory": ""}, "not a decimal number"),
        ({"storage": "beta2=-0.1"}, "negative"),
        ({"storage": "1,beta2=2,beta2=3"}, "twice"),
        ({"storage": "a=b=c"}, "name=value"),
        ({"gpu": "a100"}, "name=value"),
        ({"gpu": "=5"}, "name=value"),
        ({"ip": "0.0000000000000000001"}, "18 decimal places"),
        ({"cpu": "0", "storage": "0"}, "non-zero"),
        ({"cpu": "0", "storage": "5,beta2=0"}, "non-zero"),  # any zero class counts as zero
    ],
)
def test_from_settings_refuses(fields: dict[str, str], message: str) -> None:
    values = {"cpu": "1", "memory": "0", "storage": "0", "endpoint": "0", "ip": "0", "gpu": ""}
    values |= fields
    with pytest.raises(ValueError, match=message):
        ScaleStrategy.from_settings(**values)


async def test_price_is_the_computation() -> None:
    req = request(unit(1, cpu=100))
    scale = strategy(cpu="0.5")
    assert await scale.price(req) == scale.compute(req) == DecCoin(denom="uact", amount=Dec(50))


# --- script input ---------------------------------------------------------------------------------


def test_script_input_matches_go_data_for_script() -> None:
    web = unit(
        1,
        cpu=500,
        memory=256 * MI,
        storage=(
            volume("root", GI, persistent="false"),
            volume("shm", MI * 64, persistent="false", **{"class": "ram"}),
            volume("db", 2 * GI, persistent="true", **{"class": "beta2"}),
        ),
        gpu=2,
        gpu_keys=("vendor/nvidia/model/a100/ram/80Gi/interface/sxm", "vendor/amd/model/mi300"),
        endpoints=(
            Endpoint(),
            Endpoint(kind=EndpointKind.LEASED_IP, sequence_number=1),
            Endpoint(kind=EndpointKind.LEASED_IP, sequence_number=1),
        ),
        count=2,
        price="12.5",
    )
    data = script_stdin(PriceRequest(owner=OWNER, group=group(web, unit(2, price="0.25"))))
    assert data.endswith(b"}\n") and b" " not in data
    assert json.loads(data) == {
        "resources": [
            {
                "memory": 256 * MI,
                "cpu": 500,
                "gpu": {
                    "units": 2,
                    "attributes": {
                        "vendor": {
                            "amd": {"model": "mi300"},
                            "nvidia": {"model": "a100", "ram": "80Gi", "interface": "sxm"},
                        }
                    },
                },
                "storage": [
                    {"class": "ephemeral", "size": GI},
                    {"class": "ram", "size": 64 * MI},
                    {"class": "beta2", "size": 2 * GI},
                ],
                "count": 2,
                "endpoint_quantity": 3,
                "ip_lease_quantity": 1,
            },
            {
                "memory": GI,
                "cpu": 1000,
                "gpu": {"units": 0, "attributes": {}},
                "storage": [],
                "count": 1,
                "endpoint_quantity": 0,
                "ip_lease_quantity": 0,
            },
        ],
        "price": {"denom": "uact", "amount": "25.250000000000000000"},
        "price_precision": 6,
    }
    # Go's field order, its sorted map keys and compact separators, byte for byte.
    assert data.startswith(b'{"resources":[{"memory":268435456,"cpu":500,"gpu":{"units":2,')
    assert b'"vendor":{"amd":{"model":"mi300"},"nvidia":' in data
    tail = b'"price":{"denom":"uact","amount":"25.250000000000000000"},"price_precision":6}\n'
    assert data.endswith(tail)


def test_script_input_uses_reserved_resources_by_id() -> None:
    wanted = (unit(1, gpu=1, gpu_keys=("vendor/nvidia/model/*",)), unit(2, cpu=300))
    reserved = unit(1, gpu=1, gpu_keys=("vendor/nvidia/model/h100/ram/80Gi",), count=1)
    req = request(*wanted, allocated=(ResourceOffer(resources=reserved.resource, count=1),))
    resources = script_input(req)["resources"]
    assert resources[0]["gpu"]["attributes"] == {
        "vendor": {"nvidia": {"model": "h100", "ram": "80Gi"}}
    }
    assert resources[1]["cpu"] == 300


def test_script_input_last_attribute_of_a_vendor_wins_and_malformed_keys_skip() -> None:
    keys = ("vendor/nvidia/model/a100", "vendor/nvidia", "vendor/nvidia/model/h100/ram")
    data = script_input(request(unit(1, gpu=1, gpu_keys=keys)))
    assert data["resources"][0]["gpu"]["attributes"] == {"vendor": {"nvidia": {"model": "h100"}}}


def test_script_input_omits_precision_when_not_positive_and_escapes_like_go() -> None:
    req = PriceRequest(
        owner=OWNER,
        group=group(unit(1, gpu=1, gpu_keys=("vendor/a<b>&c/model/x",))),
        price_precision=0,
    )
    data = script_stdin(req)
    assert "price_precision" not in json.loads(data)
    assert b'"a\\u003cb\\u003e\\u0026c"' in data
