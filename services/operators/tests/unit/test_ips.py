"""The IP operator's reading of an existing LoadBalancer Service: one Akash's operator made
(a lease taken over from the Go provider) already exposes its port and counts in the pool;
one that exposes something else is written again."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from akoperators.domain.ips import exposure_of, load_balancer, serves, sharing_key_of
from akoperators.ip.handlers import Pool
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace
from aktypes.testing import address

LEASE = LeaseID(owner=address(1), dseq=7, gseq=1, oseq=1, provider=address(2))
KEY = f"{LEASE.owner}-ip-myip"
SPEC = {
    "lease_id": {
        "owner": LEASE.owner,
        "dseq": "7",
        "gseq": 1,
        "oseq": 1,
        "provider": LEASE.provider,
    },
    "service_name": "vpn",
    "port": 8443,
    "external_port": 443,
    "protocol": "TCP",
    "sharing_key": KEY,
}
EXPOSURE = exposure_of(SPEC)


def go_made() -> dict[str, Any]:
    """Akash's ``CreateIPPassthrough``, as the API server returns it."""
    return {
        "metadata": {
            "name": "vpn-ip-443-tcp",
            "namespace": lease_namespace(LEASE),
            "labels": {"akash.network": "true", "akash.network/service-target": "metal-lb"},
            "annotations": {"metallb.universe.tf/allow-shared-ip": KEY},
        },
        "spec": {
            "type": "LoadBalancer",
            "selector": {"akash.network": "true", "akash.network/manifest-service": "vpn"},
            "ports": [
                {
                    "name": "vpn-ip-443-tcp",
                    "port": 443,
                    "targetPort": 8443,
                    "protocol": "TCP",
                    "nodePort": 31000,
                }
            ],
            "clusterIP": "10.96.0.9",
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.20"}]}},
    }


def test_a_service_akash_made_already_exposes_the_port() -> None:
    assert EXPOSURE.name == go_made()["metadata"]["name"]
    assert serves(go_made(), EXPOSURE)
    assert serves(load_balancer(EXPOSURE, lease_labels={}), EXPOSURE)  # and ours
    assert not serves(None, EXPOSURE)


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s["spec"].update(type="NodePort"),
        lambda s: s["spec"]["ports"][0].update(targetPort=8080),
        lambda s: s["spec"]["ports"][0].update(port=8443),
        lambda s: s["spec"]["ports"][0].update(protocol="UDP"),
        lambda s: s["spec"]["ports"].append({"port": 80}),
        lambda s: s["spec"]["selector"].update({"akash.network/manifest-service": "web"}),
        lambda s: s["spec"]["selector"].update(app="other"),
        lambda s: s["metadata"]["annotations"].update(
            {"metallb.universe.tf/allow-shared-ip": "another"}
        ),
    ],
    ids=["type", "target", "port", "protocol", "ports", "service", "selector", "key"],
)
def test_a_service_exposing_something_else_does_not(change: Any) -> None:
    service = copy.deepcopy(go_made())
    change(service)
    assert not serves(service, EXPOSURE)


def test_the_pool_counts_a_service_akash_made_by_its_annotation() -> None:
    assert sharing_key_of(go_made()) == KEY
    pool = Pool(capacity=1)
    pool.observe("ADDED", go_made())
    assert pool.usage()["sharing_keys"] == [KEY]
    assert pool.admits(KEY) and not pool.admits("another")
    pool.observe("DELETED", go_made())
    assert pool.usage()["in_use"] == 0
