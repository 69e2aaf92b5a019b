"""Lease records and the hostname rules (Akash's hostname service, durable and pure)."""

from __future__ import annotations

from akcluster.domain.leases import (
    LeaseRecord,
    blocked,
    claim_hostnames,
    hostname_refusals,
    lease_hostnames,
    manifest_hostnames,
    service_names,
)
from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host
from aktypes.manifest.models import Group, Service, ServiceExpose
from aktypes.testing import address

OWNER, OTHER, PROVIDER = address(1), address(2), address(3)


def lease(dseq: int, owner: str = OWNER, gseq: int = 1) -> LeaseID:
    return LeaseID.parse(f"{owner}/{dseq}/{gseq}/1/{PROVIDER}")


def group(*hosts: str, names: tuple[str, ...] = ("web",), image: str = "nginx") -> Group:
    services = [
        Service(
            name=name,
            image=image,
            count=1,
            expose=[ServiceExpose(port=80, proto="TCP", global_=True, hosts=list(hosts) or None)],
        )
        for name in names
    ]
    return Group(name="dcloud", services=services)


def test_blocked_list_exact_and_suffix_rules() -> None:
    rules = ["bad.example.com", ".evil.org"]
    assert blocked("BAD.example.com", rules) == "bad.example.com"
    assert blocked("x.bad.example.com", rules) is None  # exact entries block only themselves
    assert blocked("a.b.evil.org", rules) == ".evil.org"
    assert blocked("evil.org", rules) == ".evil.org"
    assert blocked("notevil.org", rules) is None
    for literal in ("10.0.0.1", "127.0.0.1", "::1", "[fe80::1]"):  # whatever the list
        assert blocked(literal, []) == "IP addresses"


def test_refusals_name_blocked_and_other_tenants_hostnames() -> None:
    holders = {"taken.com": str(lease(9, OTHER)), "mine.com": str(lease(8))}
    refused = hostname_refusals(
        lease(1), ["ok.com", "taken.com", "mine.com", "x.evil.org"], holders, [".evil.org"]
    )
    assert set(refused) == {"taken.com", "x.evil.org"}
    assert "another tenant" in refused["taken.com"]
    assert ".evil.org" in refused["x.evil.org"]


def test_same_tenant_hostnames_of_another_deployment_are_withheld() -> None:
    holders = {"a.com": str(lease(8)), "b.com": str(lease(1))}
    claimed, withheld = claim_hostnames(lease(1), ["a.com", "b.com", "c.com"], holders)
    assert claimed == ["b.com", "c.com"]
    assert withheld == ["a.com"]
    # another order of the same deployment group keeps them (Akash ignores oseq)
    claimed, withheld = claim_hostnames(
        LeaseID.parse(f"{OWNER}/1/1/2/{PROVIDER}"), ["b.com"], holders
    )
    assert (claimed, withheld) == (["b.com"], [])


def test_manifest_hostnames_are_lowercased_and_unique() -> None:
    assert manifest_hostnames(group("A.com", "b.com", "a.COM")) == ["a.com", "b.com"]


def test_static_hosts_add_each_http_services_generated_hostname() -> None:
    lid, both = lease(1), group("A.com", names=("web", "api"))
    internal = Service(
        name="db",
        image="postgres",
        count=1,
        expose=[ServiceExpose(port=5432, proto="TCP", global_=True)],  # not HTTP: no host
    )
    both = both.model_copy(update={"services": [*(both.services or ()), internal]})
    assert lease_hostnames(lid, both) == ["a.com"]  # static hosts off
    generated = [ingress_host(lid, name, "ingress.test") for name in ("web", "api")]
    assert lease_hostnames(lid, both, "ingress.test") == ["a.com", *generated]
    assert lease_hostnames(lease(2), both, "ingress.test")[1:] != generated  # the lease's own


def test_a_new_manifest_redeploys_and_the_same_one_is_a_no_op() -> None:
    record = LeaseRecord(lease_id=lease(1), group=group(), version="a" * 64)
    deployed = record.model_copy(update={"state": "deployed", "applied": "a" * 64, "failures": 3})
    assert deployed.with_manifest(group(), "a" * 64) is deployed
    updated = deployed.with_manifest(group(image="nginx:2"), "b" * 64)
    assert (updated.state, updated.version, updated.applied, updated.failures) == (
        "deploying",
        "b" * 64,
        "a" * 64,
        0,
    )
    assert service_names(group(names=("web", "db"))) == ["db", "web"]
