"""Which lease a namespace holds, and when an occurrence of an Event is new."""

from __future__ import annotations

from akcluster.domain.leaseevents import closed_key, is_new, lease_of, seen_key
from akcluster.domain.objects.base import lease_labels
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace
from aktypes.testing import address

LEASE = LeaseID(owner=address(1), dseq=9, gseq=2, oseq=1, provider=address(2))


def test_a_lease_namespace_names_its_lease() -> None:
    namespace = {"metadata": {"name": lease_namespace(LEASE), "labels": lease_labels(LEASE)}}
    assert lease_of(namespace) == LEASE
    assert lease_of({"metadata": {"name": "kube-system"}}) is None
    partial = dict(lease_labels(LEASE))
    del partial["akash.network/lease.id.provider"]
    assert lease_of({"metadata": {"labels": partial}}) is None
    bad = {**lease_labels(LEASE), "akash.network/lease.id.dseq": "x"}
    assert lease_of({"metadata": {"labels": bad}}) is None


def test_only_a_higher_count_is_new() -> None:
    assert is_new(None, 1)
    assert is_new("3", 4)
    assert not is_new("3", 3)
    assert not is_new("3", 2)
    assert is_new("garbage", 1)


def test_the_keys() -> None:
    assert seen_key("u-1") == "akcluster:lease-event:u-1"
    assert closed_key(LEASE) == f"akcluster:lease-events-closed:{LEASE}"
