"""Reservations over real Redis: durable, idempotent, and never over-committed by replicas."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from akbus import Bus, RedisSettings
from akbus.testing import FAST_SETTINGS, running
from akcluster.domain.inventory import Capacity, Inventory, Node
from akcluster.domain.placement import CommitLevels
from akcluster.reservations import RESERVATIONS_KEY, Reservations
from aktypes.coin import DecCoin
from aktypes.events import (
    GroupScreened,
    LookupReservation,
    ReservationFailed,
    ReservationFound,
    ReserveResources,
    ResourcesReserved,
    ResourcesUnreserved,
    ScreenGroup,
    UnreserveResources,
)
from aktypes.events.streams import CLUSTER_COMMANDS
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.ids import OrderID
from aktypes.resources import CPU, Memory, Resources, Storage, rv
from aktypes.testing import address

OWNER = address(7)
TEN_CPUS = Inventory(
    nodes=(Node("n", Capacity(cpu=10_000, memory=100 * 2**30, ephemeral=100 * 2**30)),)
)


def one_cpu() -> GroupSpec:
    resources = Resources(
        id=1,
        cpu=CPU(units=rv(1000)),
        memory=Memory(size=rv(2**30)),
        storage=[Storage(name="default", size=rv(2**30))],
    )
    return GroupSpec(
        name="g",
        resources=[
            ResourceUnit(resource=resources, count=1, price=DecCoin(denom="uakt", amount="1"))
        ],
    )


def order(dseq: int) -> OrderID:
    return OrderID.parse(f"{OWNER}/{dseq}/1/1")


@pytest.fixture
async def buses(redis_url: str) -> AsyncIterator[list[Bus]]:
    made = [
        Bus.connect(RedisSettings(url=redis_url), producer=f"p{i}", settings=FAST_SETTINGS)
        for i in range(3)
    ]
    try:
        yield made
    finally:
        for bus in made:
            await bus.close()


def replica(bus: Bus, name: str, inventory: Inventory = TEN_CPUS) -> tuple[Reservations, object]:
    res = Reservations(bus, lambda: inventory, levels=CommitLevels(), node_ports=100, ips=0)
    sub = bus.subscriber(CLUSTER_COMMANDS, group="cluster", consumer=name)
    sub.add(ReserveResources, res.reserve)
    sub.add(UnreserveResources, res.unreserve)
    sub.add(LookupReservation, res.lookup)
    sub.add(ScreenGroup, res.screen)
    return res, sub


async def test_two_replicas_grant_exactly_the_capacity(buses: list[Bus]) -> None:
    client, one, two = buses
    (_, sub1), (_, sub2) = replica(one, "cluster-a"), replica(two, "cluster-b")
    async with running(sub1, sub2):  # type: ignore[arg-type]
        replies = await asyncio.gather(
            *(
                client.request(
                    CLUSTER_COMMANDS,
                    ReserveResources(order_id=order(d), group=one_cpu()),
                    (ResourcesReserved, ReservationFailed),
                    timeout_s=20,
                )
                for d in range(1, 51)
            )
        )
    granted = [r for r in replies if isinstance(r, ResourcesReserved)]
    refused = [r for r in replies if isinstance(r, ReservationFailed)]
    assert len(granted) == 10
    assert len(refused) == 40
    assert {r.code for r in refused} == {"insufficient_capacity"}
    stored = await client.backend.hgetall(RESERVATIONS_KEY)
    assert sorted(stored) == sorted(str(r.order_id) for r in granted)


async def test_reserve_is_idempotent_and_unreserve_frees(buses: list[Bus]) -> None:
    client, one, _ = buses
    res, sub = replica(
        one, "cluster-a", Inventory(nodes=(Node("n", Capacity(1000, 2**31, 2**31)),))
    )
    async with running(sub):  # type: ignore[arg-type]
        first = await client.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=order(1), group=one_cpu()),
            ResourcesReserved,
        )
        again = await client.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=order(1), group=one_cpu()),
            ResourcesReserved,
        )
        assert again.allocated == first.allocated
        other = await client.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=order(2), group=one_cpu()),
            (ResourcesReserved, ReservationFailed),
        )
        assert isinstance(other, ReservationFailed)
        screened = await client.request(
            CLUSTER_COMMANDS, ScreenGroup(group=one_cpu()), GroupScreened
        )
        assert not screened.passed
        assert screened.reasons[0].startswith("insufficient_capacity: resource unit 1")
        found = await client.request(
            CLUSTER_COMMANDS, LookupReservation(order_id=order(1)), ReservationFound
        )
        assert found.found
        assert found.allocated == first.allocated
        gone = await client.request(
            CLUSTER_COMMANDS, UnreserveResources(order_id=order(1)), ResourcesUnreserved
        )
        assert gone.found
        twice = await client.request(
            CLUSTER_COMMANDS, UnreserveResources(order_id=order(1)), ResourcesUnreserved
        )
        assert not twice.found
        now = await client.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=order(2), group=one_cpu()),
            ResourcesReserved,
        )
        assert now.order_id == order(2)
    assert list(res.ledger.reservations) == [str(order(2))]


async def test_a_new_replica_sees_the_reservations_of_another(buses: list[Bus]) -> None:
    client, one, two = buses
    small = Inventory(nodes=(Node("n", Capacity(1000, 2**31, 2**31)),))
    _, sub1 = replica(one, "cluster-a", small)
    async with running(sub1):  # type: ignore[arg-type]
        await client.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=order(1), group=one_cpu()),
            ResourcesReserved,
        )
    _, sub2 = replica(two, "cluster-b", small)
    async with running(sub2):  # type: ignore[arg-type]
        refused = await client.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=order(2), group=one_cpu()),
            (ResourcesReserved, ReservationFailed),
        )
    assert isinstance(refused, ReservationFailed)


async def test_an_order_released_is_never_reserved_again_by_any_replica(buses: list[Bus]) -> None:
    """The bid engine gave up an order while the cluster was down: its unreserve may be
    handled before the reserve still queued from earlier, by another replica too."""
    client, one, two = buses
    res1, sub1 = replica(one, "cluster-a")
    res2, sub2 = replica(two, "cluster-b")
    async with running(sub1):  # type: ignore[arg-type]
        early = await client.request(
            CLUSTER_COMMANDS, UnreserveResources(order_id=order(5)), ResourcesUnreserved
        )
        assert not early.found
        await client.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=order(6), group=one_cpu()),
            ResourcesReserved,
        )
        held = await client.request(
            CLUSTER_COMMANDS, UnreserveResources(order_id=order(6)), ResourcesUnreserved
        )
        assert held.found
    async with running(sub2):  # type: ignore[arg-type]
        for dseq in (5, 6):
            late = await client.request(
                CLUSTER_COMMANDS,
                ReserveResources(order_id=order(dseq), group=one_cpu()),
                (ResourcesReserved, ReservationFailed),
            )
            assert isinstance(late, ReservationFailed), late
            assert late.code == "order_finished"
        fresh = await client.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=order(7), group=one_cpu()),
            ResourcesReserved,
        )
        assert fresh.order_id == order(7)
    assert list(res2.ledger.reservations) == [str(order(7))]
    assert set(res2.ledger.released) == {str(order(5)), str(order(6))}
    assert res1.ledger.reservations == {}
    stored = await client.backend.hgetall(RESERVATIONS_KEY)
    assert set(stored) == {str(order(7))}
