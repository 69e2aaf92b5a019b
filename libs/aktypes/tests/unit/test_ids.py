from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from aktypes.errors import InvalidIDError
from aktypes.ids import BidID, DeploymentID, GroupID, LeaseID, OrderID
from aktypes.testing import address, lease_ids


def test_string_forms(owner: str, provider: str) -> None:
    lease = LeaseID(owner=owner, dseq=42, gseq=1, oseq=3, provider=provider)
    assert str(lease) == f"{owner}/42/1/3/{provider}"
    assert str(lease.bid_id) == str(lease)
    assert str(lease.order_id) == f"{owner}/42/1/3"
    assert str(lease.group_id) == f"{owner}/42/1"
    assert str(lease.deployment_id) == f"{owner}/42"
    assert lease.order_id.bid(provider).lease_id == lease


@pytest.mark.parametrize(
    ("cls", "text", "reason"),
    [
        (DeploymentID, "{o}", "2 parts"),
        (DeploymentID, "{o}/0", "out of range"),
        (DeploymentID, "{o}/-1", "not an unsigned integer"),
        (DeploymentID, "{o}/1x", "not an unsigned integer"),
        (GroupID, "{o}/1/4294967296", "out of range"),
        (OrderID, "{o}/1/1", "4 parts"),
        (LeaseID, "{o}/1/1/1/{o}", "self-bid"),
        (LeaseID, "{o}/1/1/1/akash1bad", "bech32"),
        (BidID, "akash1bad/1/1/1/{p}", "bech32"),
    ],
)
def test_malformed_ids_are_refused(cls: type[DeploymentID], text: str, reason: str) -> None:
    text = text.format(o=address(1), p=address(2))
    with pytest.raises(InvalidIDError, match=reason):
        cls.parse(text)


def test_json_is_the_string_form_and_accepts_akash_objects(owner: str, provider: str) -> None:
    class Holder(BaseModel):
        lease: LeaseID

    lease = LeaseID(owner=owner, dseq=7, gseq=2, oseq=1, provider=provider)
    dumped = Holder(lease=lease).model_dump_json()
    assert json.loads(dumped) == {"lease": str(lease)}
    assert Holder.model_validate_json(dumped).lease == lease
    akash_form = {"owner": owner, "dseq": 7, "gseq": 2, "oseq": 1, "provider": provider}
    assert Holder.model_validate({"lease": akash_form}).lease == lease
    with pytest.raises(ValidationError):
        Holder.model_validate({"lease": {**akash_form, "dseq": 0}})


def test_ordering_follows_fields(owner: str) -> None:
    ids = [OrderID.parse(f"{owner}/{d}/{g}/1") for d, g in [(10, 2), (9, 5), (10, 1), (2, 7)]]
    assert [(i.dseq, i.gseq) for i in sorted(ids)] == [(2, 7), (9, 5), (10, 1), (10, 2)]
    with pytest.raises(TypeError):
        _ = ids[0] < ids[0].group_id  # type: ignore[operator]


def test_ids_are_hashable_and_frozen(owner: str) -> None:
    a = DeploymentID(owner=owner, dseq=1)
    assert {a, DeploymentID.parse(str(a))} == {a}
    with pytest.raises(ValidationError):
        a.dseq = 2  # type: ignore[misc]


@given(lease_ids())
def test_id_round_trips(lease: LeaseID) -> None:
    for value in (lease, lease.bid_id, lease.order_id, lease.group_id, lease.deployment_id):
        parsed = type(value).parse(str(value))
        assert parsed == value
        assert str(parsed) == str(value)
        assert type(value).model_validate_json(value.model_dump_json()) == value


@given(st.lists(lease_ids(), min_size=2, max_size=6))
def test_ordering_is_total_and_matches_tuples(leases: list[LeaseID]) -> None:
    def key(lease: LeaseID) -> tuple[str, int, int, int, str]:
        return (lease.owner, lease.dseq, lease.gseq, lease.oseq, lease.provider)

    assert [key(x) for x in sorted(leases)] == sorted(key(x) for x in leases)
