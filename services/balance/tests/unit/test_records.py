"""The forms the balance service stores, as Redis has held them since they were first written."""

from __future__ import annotations

import math

from akbalance.domain.records import Paid, Watched, deployment_of


def test_a_paid_total_is_stored_as_denom_colon_total() -> None:
    paid = Paid.parse("uact:450")
    assert paid == Paid(denom="uact", total=450)
    assert str(paid) == "uact:450"
    assert paid.amount("uact") == 450
    assert paid.amount("uakt") == 0  # counted in another denom: nothing of this one


def test_a_leases_deployment_is_its_owner_and_dseq() -> None:
    assert deployment_of("akash1owner/12/1/1/akash1provider") == "akash1owner/12"


def test_a_watched_lease_is_stored_as_json_with_the_fields_it_has() -> None:
    old = Watched.parse('{"added": 0, "next_periodic": Infinity}')  # as first written
    assert old == Watched(added=0.0, next_periodic=math.inf)
    assert old.due_by(0.0)  # no next check kept in it: the schedule says when
    checked = Watched.parse(
        '{"added": 1.0, "next_periodic": 7.5, "checked": 2.0, "unpaid": ["uact", 40]}'
    )
    assert checked.unpaid == ("uact", 40)
    later = checked.model_copy(update={"unpaid": None, "due": 9.0})
    assert str(later) == '{"added": 1.0, "next_periodic": 7.5, "checked": 2.0, "due": 9.0}'
    assert str(old) == '{"added": 0.0, "next_periodic": Infinity}'
    assert not later.due_by(8.0) and later.due_by(9.0)
