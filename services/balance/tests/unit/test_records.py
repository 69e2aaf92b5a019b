"""The forms the balance service stores, as Redis has held them since they were first written."""

from __future__ import annotations

from akbalance.domain.records import Paid, deployment_of


def test_a_paid_total_is_stored_as_denom_colon_total() -> None:
    paid = Paid.parse("uact:450")
    assert paid == Paid(denom="uact", total=450)
    assert str(paid) == "uact:450"
    assert paid.amount("uact") == 450
    assert paid.amount("uakt") == 0  # counted in another denom: nothing of this one


def test_a_leases_deployment_is_its_owner_and_dseq() -> None:
    assert deployment_of("akash1owner/12/1/1/akash1provider") == "akash1owner/12"
