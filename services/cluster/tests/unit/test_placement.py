"""Placement: first fit per node, commit levels, GPU models, pools, ports and IPs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from akcluster.domain.inventory import Capacity, GPUModel, Inventory, Node, StoragePool
from akcluster.domain.ledger import Ledger, Reservation
from akcluster.domain.placement import CommitLevels, NoFit, Placement, committed, gpu_matches, place
from aktypes.attributes import Attribute
from aktypes.coin import DecCoin
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.resources import CPU, GPU, Endpoint, EndpointKind, Memory, Resources, Storage, rv

GI = 2**30
A100 = GPUModel("nvidia", "a100", "80Gi", "sxm")


def unit(
    uid: int = 1,
    *,
    cpu: int = 1000,
    memory: int = GI,
    count: int = 1,
    gpu: int = 0,
    gpu_keys: tuple[str, ...] = (),
    storage: tuple[Storage, ...] = (),
    endpoints: tuple[Endpoint, ...] = (),
) -> ResourceUnit:
    return ResourceUnit(
        resource=Resources(
            id=uid,
            cpu=CPU(units=rv(cpu)),
            memory=Memory(size=rv(memory)),
            storage=list(storage) or [Storage(name="default", size=rv(GI))],
            gpu=GPU(
                units=rv(gpu), attributes=[Attribute(key=k, value="true") for k in gpu_keys] or None
            ),
            endpoints=list(endpoints),
        ),
        count=count,
        price=DecCoin(denom="uakt", amount="100"),
    )


def group(*units: ResourceUnit) -> GroupSpec:
    return GroupSpec(name="g", resources=list(units))


def inventory(*nodes: Node, pools: dict[str, int] | None = None) -> Inventory:
    return Inventory(nodes=nodes, storage={c: StoragePool(s) for c, s in (pools or {}).items()})


def node(name: str, cpu: int = 4000, memory: int = 8 * GI, gpu: int = 0, **kw: object) -> Node:
    return Node(name, Capacity(cpu, memory, 100 * GI, gpu), **kw)  # type: ignore[arg-type]


def fit(
    g: GroupSpec, inv: Inventory, ledger: Ledger | None = None, **kw: object
) -> Placement | NoFit:
    free = (ledger or Ledger()).free(inv, node_ports=kw.pop("ports", 10), ips=kw.pop("ips", 0))  # type: ignore[arg-type]
    return place(g, free, kw.pop("levels", CommitLevels()))  # type: ignore[arg-type]


def test_first_fit_spreads_replicas_over_nodes_in_order() -> None:
    result = fit(group(unit(cpu=3000, count=3)), inventory(node("a"), node("b"), node("c")))
    assert isinstance(result, Placement)
    assert result.nodes == {n: Capacity(3000, GI, GI, 0) for n in ("a", "b", "c")}


def test_a_replica_never_splits_across_nodes() -> None:
    result = fit(group(unit(cpu=3000, count=3)), inventory(node("a"), node("b")))
    assert isinstance(result, NoFit)
    assert result.code == "insufficient_capacity"
    assert "replica 3" in result.reasons[0]
    assert "a: cpu" in result.reasons[0]


@pytest.mark.parametrize(
    ("value", "pct", "expected"),
    [
        (1000, "0", 1000),
        (1000, "50", 667),
        (1500, "50", 1000),
        (1, "900", 1),
        (3, "100", 2),
        (0, "50", 0),
    ],
)
def test_committed_values_use_fractional_commit_levels(value: int, pct: str, expected: int) -> None:
    assert committed(value, Decimal(pct)) == expected


def test_overcommitted_cpu_sells_more_than_the_node_has() -> None:
    g = group(unit(cpu=3000, count=2))
    inv = inventory(node("a", cpu=4000))
    assert isinstance(fit(g, inv), NoFit)
    result = fit(g, inv, levels=CommitLevels(cpu=Decimal(50)))
    assert isinstance(result, Placement)
    assert result.nodes["a"].cpu == 4000


def test_ram_volumes_take_node_memory() -> None:
    ram = Storage(
        name="shm",
        size=rv(4 * GI),
        attributes=[
            Attribute(key="class", value="ram"),
            Attribute(key="persistent", value="false"),
        ],
    )
    g = group(unit(memory=5 * GI, storage=(Storage(name="default", size=rv(GI)), ram)))
    result = fit(g, inventory(node("a", memory=8 * GI)))
    assert isinstance(result, NoFit)
    assert "memory" in result.reasons[0]


def test_persistent_volumes_need_a_node_class_and_the_cluster_pool() -> None:
    vol = Storage(
        name="data",
        size=rv(100 * GI),
        attributes=[
            Attribute(key="class", value="beta2"),
            Attribute(key="persistent", value="true"),
        ],
    )
    g = group(unit(storage=(Storage(name="default", size=rv(GI)), vol)))
    no_class = fit(g, inventory(node("a"), pools={"beta2": 500 * GI}))
    assert isinstance(no_class, NoFit)
    assert "storage class beta2" in no_class.reasons[0]
    small_pool = fit(
        g, inventory(node("a", storage_classes=frozenset({"beta2"})), pools={"beta2": 50 * GI})
    )
    assert isinstance(small_pool, NoFit)
    assert small_pool.code == "insufficient_storage"
    ok = fit(
        g, inventory(node("a", storage_classes=frozenset({"beta2"})), pools={"beta2": 500 * GI})
    )
    assert isinstance(ok, Placement)
    assert ok.storage == {"beta2": 100 * GI}


@pytest.mark.parametrize(
    ("requirement", "matches"),
    [
        ("vendor/nvidia/model/a100", True),
        ("vendor/nvidia/model/*", True),
        ("vendor/nvidia/model/a100/ram/80Gi", True),
        ("vendor/nvidia/model/a100/ram/40Gi", False),
        ("vendor/nvidia/model/a100/ram/80Gi/interface/sxm", True),
        ("vendor/nvidia/model/a100/interface/pcie", False),
        ("vendor/nvidia/model/h100", False),
        ("vendor/amd/model/a100", False),
    ],
)
def test_gpu_requirements_match_node_models(requirement: str, matches: bool) -> None:
    assert gpu_matches(requirement, A100) is matches


def test_gpu_units_go_to_a_node_of_an_accepted_model_and_the_offer_names_it() -> None:
    inv = inventory(
        node("cpu-only"),
        node("h100", gpu=8, gpu_model=GPUModel("nvidia", "h100", "80Gi")),
        node("a100", gpu=8, gpu_model=A100),
    )
    result = fit(group(unit(gpu=2, gpu_keys=("vendor/nvidia/model/a100",))), inv)
    assert isinstance(result, Placement)
    assert list(result.nodes) == ["a100"]
    offered = result.allocated[0].resources.gpu
    assert offered is not None
    assert [a.key for a in offered.attributes or ()] == [
        "vendor/nvidia/model/a100/ram/80Gi/interface/sxm"
    ]
    absent = fit(group(unit(gpu=1, gpu_keys=("vendor/nvidia/model/rtx4090",))), inv)
    assert isinstance(absent, NoFit)
    assert absent.code == "gpu_unavailable"


def test_replicas_on_different_gpu_models_do_not_fit() -> None:
    inv = inventory(
        node("x", gpu=1, gpu_model=GPUModel("nvidia", "h100")),
        node("y", gpu=1, gpu_model=A100),
    )
    result = fit(group(unit(gpu=1, count=2, gpu_keys=("vendor/nvidia/model/*",))), inv)
    assert isinstance(result, NoFit)
    assert "different GPU models" in result.reasons[0]


def test_node_ports_count_once_per_unit_and_ips_once_per_sequence() -> None:
    eps = (
        Endpoint(kind=EndpointKind.RANDOM_PORT),
        Endpoint(kind=EndpointKind.LEASED_IP, sequence_number=1),
    )
    g = group(
        unit(1, count=3, endpoints=eps),
        unit(2, endpoints=(Endpoint(kind=EndpointKind.LEASED_IP, sequence_number=1),)),
    )
    inv = inventory(node("a", cpu=16000, memory=64 * GI))
    result = fit(g, inv, ips=1, ports=1)
    assert isinstance(result, Placement)
    assert (result.node_ports, result.ips) == (1, 1)
    no_ip = fit(g, inv, ips=0)
    assert isinstance(no_ip, NoFit)
    assert no_ip.code == "insufficient_ips"


def test_pending_reservations_are_taken_out_of_every_fresh_inventory() -> None:
    g = group(unit(cpu=3000))
    inv = inventory(node("a"))
    first = fit(g, inv)
    assert isinstance(first, Placement)
    ledger = Ledger([Reservation.of("o/1/1/1", g, first, 0.0)])
    assert isinstance(fit(g, inv, ledger), NoFit)
    bigger = inventory(node("a", cpu=8000))
    second = fit(g, bigger, ledger)
    assert isinstance(second, Placement)
    ledger.remove("o/1/1/1")
    assert isinstance(fit(g, inv, ledger), Placement)


def test_units_without_cpu_or_memory_are_invalid() -> None:
    bad = ResourceUnit(resource=Resources(id=1), count=1, price=DecCoin(denom="uakt", amount="1"))
    result = fit(group(bad), inventory(node("a")))
    assert isinstance(result, NoFit)
    assert result.code == "invalid_resources"
