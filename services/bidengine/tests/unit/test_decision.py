"""The bid decision: filters, then capacity, then price, stopping at the first no."""

from __future__ import annotations

from akbidengine.domain.decision import Bid, Capacity, Decline, Need, decide
from akbidengine.domain.filtering import ProviderFacts, TenantPolicy
from akbidengine.domain.pricing import PricingError
from aktypes.coin import DecCoin
from aktypes.events import DeclineReason, ResourceOffer
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.resources import CPU, GPU, Endpoint, EndpointKind, Memory, Resources, Storage, rv

OWNER, BANNED = "akash1tenant", "akash1banned"
FACTS = ProviderFacts(address="akash1provider", attributes=())
TENANTS = TenantPolicy(deny=frozenset({BANNED}))


def group(max_price: str = "100") -> GroupSpec:
    resources = Resources(
        id=1, cpu=CPU(units=rv(1000)), memory=Memory(size=rv(2**30)),
        storage=[Storage(name="default", size=rv(2**30))], gpu=GPU(units=rv(0)),
        endpoints=[Endpoint(kind=EndpointKind.SHARED_HTTP)],
    )  # fmt: skip
    unit = ResourceUnit(resource=resources, count=1, price=DecCoin(denom="uact", amount=max_price))
    return GroupSpec(name="dc", resources=[unit])


OFFER = (ResourceOffer(resources=group().resources[0].resource, count=1),)


def price(amount: str, denom: str = "uact") -> DecCoin:
    return DecCoin(denom=denom, amount=amount)


def test_the_filters_come_first_and_a_passing_group_asks_for_capacity() -> None:
    declined = decide(group(), BANNED, FACTS, TENANTS)
    assert isinstance(declined, Decline)
    assert declined.at == "filters"
    assert [r.code for r in declined.reasons] == ["tenant_denied"]
    assert (declined.offer, declined.price) == ((), None)
    assert decide(group(), OWNER, FACTS, TENANTS) is Need.CAPACITY


def test_no_capacity_declines_with_the_clusters_reasons() -> None:
    full = Capacity(reasons=(DeclineReason(code="insufficient_capacity", message="no cpu"),))
    assert decide(group(), OWNER, FACTS, TENANTS, capacity=full) == Decline(
        list(full.reasons), "capacity"
    )


def test_with_capacity_the_price_is_asked_for_and_judged() -> None:
    offered = Capacity(offer=OFFER)
    assert decide(group(), OWNER, FACTS, TENANTS, capacity=offered) is Need.PRICE

    def verdict(found: DecCoin | PricingError) -> Bid | Decline | Need:
        return decide(group("100"), OWNER, FACTS, TENANTS, capacity=offered, price=found)

    assert verdict(price("99.5")) == Bid(OFFER, price("99.5"))
    assert verdict(price("100")) == Bid(OFFER, price("100"))
    for found, code in (
        (price("100.1"), "price_above_max"),
        (price("0"), "price_zero"),
        (price("5", "uakt"), "price_denom_mismatch"),
    ):
        declined = verdict(found)
        assert isinstance(declined, Decline)
        assert ([r.code for r in declined.reasons], declined.at) == ([code], "price")
        assert (declined.offer, declined.price) == (OFFER, found)  # what the bid would carry
    failed = verdict(PricingError("no_storage_price", "no price for class beta3"))
    assert failed == Decline(
        [DeclineReason(code="no_storage_price", message="no price for class beta3")],
        "price",
        OFFER,
    )


def test_a_dry_runs_refusal_keeps_its_codes() -> None:
    refused = Capacity.refused(["insufficient_capacity: 2 cpu short", "no node has a GPU"])
    assert refused.reasons == (
        DeclineReason(code="insufficient_capacity", message="2 cpu short"),
        DeclineReason(code="insufficient_capacity", message="no node has a GPU"),
    )
    assert Capacity.refused([]).reasons == (
        DeclineReason(code="insufficient_capacity", message="the cluster cannot run this group"),
    )
