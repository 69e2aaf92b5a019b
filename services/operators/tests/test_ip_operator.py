"""The IP operator as a real process against kubesim over HTTP: ProviderLeasedIPs become
MetalLB LoadBalancer Services with the owner's sharing key, the pool's use is served at
/v1/pool, a full pool holds new keys back until an address is free, teardown removes every
Service, and a killed operator converges without duplicates or stuck finalizers, or its
standby takes over."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest
from kubernetes import client, config

from akcluster.domain.objects import manifest_object, provider_leased_ip_objects
from akcluster.domain.objects.base import BuildSettings
from akcluster.domain.objects.custom import crds, sharing_key
from akoperators.testing import OperatorProcess
from akservice.testing import eventually_sync, http_status
from aktypes.ids import LeaseID
from aktypes.manifest import Group
from aktypes.namespace import lease_namespace
from aktypes.sdl import parse_sdl
from aktypes.testing import address
from kubesim.testing import KubeSimProcess

API = ("akash.network", "v2beta2")
SHARED_IP = "metallb.universe.tf/allow-shared-ip"
SDL = dedent(
    """\
    version: "2.0"
    services:
      web:
        image: nginx:1.27
        expose:
          - {port: 8080, as: 80, to: [{global: true, ip: myip}]}
          - {port: 53, proto: udp, to: [{global: true, ip: myip}]}
    profiles:
      compute:
        web: {resources: {cpu: {units: 0.5}, memory: {size: 512Mi}, storage: {size: 1Gi}}}
      placement:
        dc: {pricing: {web: {denom: uakt, amount: 100}}}
    deployment:
      web: {dc: {profile: web, count: 1}}
    endpoints:
      myip: {kind: ip}
    """
)
WEB: Group = parse_sdl(SDL).manifest.groups[0]
BUILD = BuildSettings()
Obj = dict[str, Any]
ENV = {
    "AP_IP_POOL": "203.0.113.10-203.0.113.11",
    "AP_IP_POOL_NAME": "leased",
    "AP_IP_RETRY": "500ms",
}


def lease(owner: int, dseq: int) -> LeaseID:
    return LeaseID(owner=address(owner), dseq=dseq, gseq=1, oseq=1, provider=address(99))


class Cluster:
    def __init__(self, kubeconfig: Path) -> None:
        self.api = config.new_client_from_config(str(kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        for crd in crds():
            client.ApiextensionsV1Api(self.api).create_custom_resource_definition(crd)
        self.core.create_namespace({"metadata": {"name": "lease"}})

    def deploy(self, lease_id: LeaseID) -> list[str]:
        """The lease's namespace, Manifest and ProviderLeasedIPs; their names."""
        self.core.create_namespace({"metadata": {"name": lease_namespace(lease_id)}})
        self.custom.create_namespaced_custom_object(
            *API, "lease", "manifests", manifest_object(lease_id, WEB, "1", settings=BUILD)
        )
        names = []
        for obj in provider_leased_ip_objects(lease_id, WEB, settings=BUILD):
            self.custom.create_namespaced_custom_object(*API, "lease", "providerleasedips", obj)
            names.append(obj["metadata"]["name"])
        return names

    def leased(self) -> dict[str, Obj]:
        items = self.custom.list_namespaced_custom_object(*API, "lease", "providerleasedips")
        return {i["metadata"]["name"]: i for i in items["items"]}

    def withdraw(self, name: str) -> None:
        self.custom.delete_namespaced_custom_object(*API, "lease", "providerleasedips", name)

    def balancers(self) -> dict[str, Obj]:
        """Every LoadBalancer Service, by ``namespace/name``."""
        items = self.api.sanitize_for_serialization(
            self.core.list_service_for_all_namespaces().items
        )
        return {
            f"{s['metadata']['namespace']}/{s['metadata']['name']}": s
            for s in items
            if s["spec"]["type"] == "LoadBalancer"
        }


@pytest.fixture
def cluster(kubesim_process: KubeSimProcess) -> Iterator[Cluster]:
    made = Cluster(kubesim_process.kubeconfig)
    try:
        yield made
    finally:
        made.api.close()


def pool(operator: OperatorProcess) -> dict[str, Any]:
    """The IP operator's ``/v1/pool``."""
    status, body = http_status(f"{operator.health_url}/v1/pool")
    assert status == 200 and isinstance(body, dict)
    return body


@pytest.fixture
def operator(
    kubesim_process: KubeSimProcess, cluster: Cluster, redis_url: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    running = OperatorProcess(
        "ip",
        redis_url=redis_url,
        log_path=tmp_path / "ip-operator.log",
        kubeconfig=kubesim_process.kubeconfig,
        env=ENV,
    )
    running.start()
    try:
        yield running
    finally:
        running.stop()


def wait(what: str, check: Any, operator: OperatorProcess, timeout: float = 20) -> Any:
    try:
        return eventually_sync(check, timeout, what, until=bool)
    except AssertionError as exc:
        pytest.fail(f"{exc}\noperator log:\n{operator.log()[-4000:]}")


def states(cluster: Cluster) -> dict[str, str]:
    return {n: o.get("status", {}).get("state", "") for n, o in cluster.leased().items()}


def test_leased_ips_become_load_balancers_sharing_one_address_per_owner_endpoint(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    first, second = lease(1, 10), lease(1, 11)
    cluster.deploy(first)
    ns = lease_namespace(first)
    found = wait("two Services", lambda: len(b := cluster.balancers()) == 2 and b, operator)
    assert set(found) == {f"{ns}/web-ip-80-tcp", f"{ns}/web-ip-53-udp"}
    web = found[f"{ns}/web-ip-80-tcp"]
    key = sharing_key(first.owner, "myip")
    assert web["metadata"]["annotations"][SHARED_IP] == key
    assert web["metadata"]["annotations"]["metallb.universe.tf/address-pool"] == "leased"
    assert web["metadata"]["labels"]["akash.network/service-target"] == "metal-lb"
    assert web["spec"]["selector"]["akash.network/manifest-service"] == "web"
    port = web["spec"]["ports"][0]
    assert (port["port"], port["targetPort"], port["protocol"]) == (80, 8080, "TCP")
    udp = found[f"{ns}/web-ip-53-udp"]["spec"]["ports"][0]
    assert (udp["port"], udp["protocol"]) == (53, "UDP")
    wait("exposed", lambda: set(states(cluster).values()) == {"exposed"}, operator)
    assert pool(operator) == {"capacity": 2, "in_use": 1, "available": 1, "sharing_keys": [key]}

    # the same owner's second lease on the same endpoint name shares the address
    cluster.deploy(second)
    wait("four Services", lambda: len(cluster.balancers()) == 4, operator)
    assert pool(operator)["in_use"] == 1

    # two other owners: one takes the last address, the other waits for one
    third, fourth = lease(2, 12), lease(3, 13)
    cluster.deploy(third)
    wait("the third owner's Services", lambda: len(cluster.balancers()) == 6, operator)
    waiting = cluster.deploy(fourth)
    pending = wait(
        "the fourth owner pending",
        lambda: (
            all(states(cluster)[n] == "pending" for n in waiting)
            and cluster.leased()[waiting[0]]["status"]
        ),
        operator,
    )
    assert "every address of the pool (2) is in use" in pending["message"]
    assert len(cluster.balancers()) == 6 and pool(operator)["available"] == 0

    # the third owner's lease closes: its address goes to the fourth
    third_names = [
        n for n, o in cluster.leased().items() if o["spec"]["lease_id"]["owner"] == third.owner
    ]
    for name in third_names:
        cluster.withdraw(name)
    wait("the fourth owner exposed", lambda: all(states(cluster).get(n) == "exposed" for n in waiting),
         operator)  # fmt: skip
    assert sharing_key(fourth.owner, "myip") in pool(operator)["sharing_keys"]
    assert not any(k.startswith(lease_namespace(third)) for k in cluster.balancers())

    # teardown, with a kill in the middle: every Service gone, every finalizer released
    names = sorted(cluster.leased())
    for name in names[:3]:
        cluster.withdraw(name)
    operator.restart(signal.SIGKILL)
    for name in names[3:]:
        cluster.withdraw(name)
    wait("no ProviderLeasedIP left", lambda: not cluster.leased(), operator, timeout=30)
    wait("no LoadBalancer left", lambda: not cluster.balancers(), operator)
    wait("the pool free", lambda: pool(operator)["in_use"] == 0, operator)


@pytest.mark.timeout(120)
def test_a_killed_leader_hands_over_to_its_standby_with_one_service_per_port(
    kubesim_process: KubeSimProcess,
    cluster: Cluster,
    operator: OperatorProcess,
    redis_url: str,
    tmp_path: Path,
) -> None:
    standby = OperatorProcess(
        "ip",
        redis_url=redis_url,
        log_path=tmp_path / "ip-standby.log",
        kubeconfig=kubesim_process.kubeconfig,
        env={**ENV, "AP_INSTANCE_ID": "standby"},
    )
    standby.start()
    try:
        role = standby.readiness()[1]
        assert isinstance(role, dict) and role["role"] == "standby"
        leases = [lease(5, 100 + n) for n in range(10)]
        for lease_id in leases[:8]:
            cluster.deploy(lease_id)
        wait("a first Service", cluster.balancers, operator)
        operator.kill()  # mid-way through the leases
        killed = time.monotonic()
        for lease_id in leases[8:]:
            cluster.deploy(lease_id)
        found = wait("20 Services", lambda: len(b := cluster.balancers()) == 20 and b, standby, 60)
        took = time.monotonic() - killed
        assert took < 10.0, f"the standby took {took:.1f}s"
        for lease_id in leases:
            ns = lease_namespace(lease_id)
            assert {f"{ns}/web-ip-80-tcp", f"{ns}/web-ip-53-udp"} <= set(found)
        wait("all exposed", lambda: set(states(cluster).values()) == {"exposed"}, standby)
        assert pool(standby)["in_use"] == 1  # one owner, one endpoint: one address
        assert len(cluster.balancers()) == 20  # none made twice
    finally:
        standby.stop()
