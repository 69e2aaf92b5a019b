"""The hostname operator as a real process against kubesim over HTTP: ProviderHosts become
Ingresses with the manifest's proxy settings, move with a migration, report conflicts and
invalid names on their status, go away with their ProviderHost, and a killed operator
converges to the same Ingresses without duplicates or stuck finalizers."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest
from kubernetes import client, config

from akcluster.domain.objects import manifest_object, provider_host_objects
from akcluster.domain.objects.base import BuildSettings
from akcluster.domain.objects.custom import crds
from akoperators.domain.hosts import http_options, route_of
from akoperators.testing import OperatorProcess
from akservice.testing import eventually_sync
from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host
from aktypes.manifest import Group, HTTPOptions
from aktypes.namespace import lease_namespace
from aktypes.sdl import parse_sdl
from aktypes.testing import address
from kubesim.testing import KubeSimProcess

GROUP_NAME, VERSION = "akash.network", "v2beta2"
NGINX = "nginx.ingress.kubernetes.io"
FINALIZER = "akash.network/hostname-operator"
SDL = dedent(
    """\
    version: "2.0"
    services:
      web:
        image: nginx:1.27
        expose:
          - port: 8080
            as: 80
            accept: [shop.example.com, www.example.com]
            http_options: {read_timeout: 1500, max_body_size: 2097152, next_cases: ["error", "502"]}
            to: [{global: true}]
    profiles:
      compute:
        web: {resources: {cpu: {units: 0.5}, memory: {size: 512Mi}, storage: {size: 1Gi}}}
      placement:
        dc: {pricing: {web: {denom: uakt, amount: 100}}}
    deployment:
      web: {dc: {profile: web, count: 1}}
    """
)
WEB: Group = parse_sdl(SDL).manifest.groups[0]
BUILD = BuildSettings()
Obj = dict[str, Any]


def lease(owner: int, dseq: int) -> LeaseID:
    return LeaseID(owner=address(owner), dseq=dseq, gseq=1, oseq=1, provider=address(99))


class Cluster:
    """The kubesim cluster as the tests drive it (the official client, as admin)."""

    def __init__(self, kubeconfig: Path) -> None:
        self.api = config.new_client_from_config(str(kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.net = client.NetworkingV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        ext = client.ApiextensionsV1Api(self.api)
        for crd in crds():
            ext.create_custom_resource_definition(crd)
        self.core.create_namespace({"metadata": {"name": "lease"}})

    def deploy(self, lease_id: LeaseID, group: Group = WEB, *, hosts: bool = True) -> None:
        """What the cluster service writes for a lease in operator mode: its namespace, its
        Manifest and (unless ``hosts`` is False) its ProviderHosts."""
        self.core.create_namespace({"metadata": {"name": lease_namespace(lease_id)}})
        self.custom.create_namespaced_custom_object(
            GROUP_NAME, VERSION, "lease", "manifests",
            manifest_object(lease_id, group, "1", settings=BUILD),
        )  # fmt: skip
        if hosts:
            for host in provider_host_objects(lease_id, group, settings=BUILD):
                self.declare(host)

    def declare(self, host: Obj) -> None:
        """Create or replace a ProviderHost (the cluster's apply)."""
        name = host["metadata"]["name"]
        if name not in {h["metadata"]["name"] for h in self.hosts()}:
            self.custom.create_namespaced_custom_object(
                GROUP_NAME, VERSION, "lease", "providerhosts", host
            )
            return
        current = self.host(name)
        current["spec"] = host["spec"]
        current["metadata"]["labels"] = host["metadata"]["labels"]
        self.custom.replace_namespaced_custom_object(
            GROUP_NAME, VERSION, "lease", "providerhosts", name, current
        )

    def host(self, name: str) -> Obj:
        found: Obj = self.custom.get_namespaced_custom_object(
            GROUP_NAME, VERSION, "lease", "providerhosts", name
        )
        return found

    def hosts(self) -> list[Obj]:
        found: list[Obj] = self.custom.list_namespaced_custom_object(
            GROUP_NAME, VERSION, "lease", "providerhosts"
        )["items"]
        return found

    def withdraw(self, name: str) -> None:
        self.custom.delete_namespaced_custom_object(
            GROUP_NAME, VERSION, "lease", "providerhosts", name
        )

    def ingresses(self) -> dict[str, Obj]:
        """Every Ingress, by ``namespace/name``."""
        items = self.api.sanitize_for_serialization(
            self.net.list_ingress_for_all_namespaces().items
        )
        return {f"{i['metadata']['namespace']}/{i['metadata']['name']}": i for i in items}


@pytest.fixture
def cluster(kubesim_process: KubeSimProcess) -> Iterator[Cluster]:
    made = Cluster(kubesim_process.kubeconfig)
    try:
        yield made
    finally:
        made.api.close()


def hostname_operator(
    kubeconfig: Path, redis_url: str, workdir: Path, **env: str
) -> OperatorProcess:
    process = OperatorProcess(
        "hostname",
        redis_url=redis_url,
        log_path=workdir / "hostname-operator.log",
        kubeconfig=kubeconfig,
        env={"AP_HOSTNAME_RETRY": "500ms", **env},
    )
    process.start()
    return process


@pytest.fixture
def operator(
    kubesim_process: KubeSimProcess, cluster: Cluster, redis_url: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    running = hostname_operator(kubesim_process.kubeconfig, redis_url, tmp_path)
    try:
        yield running
    finally:
        running.stop()


def wait(what: str, check: Any, operator: OperatorProcess, timeout: float = 20) -> Any:
    try:
        return eventually_sync(check, timeout, what, until=bool)
    except AssertionError as exc:
        pytest.fail(f"{exc}\noperator log:\n{operator.log()[-4000:]}")


def test_two_hostnames_get_two_ingresses_that_move_with_a_migration_and_go_with_teardown(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    first, second, stranger = lease(1, 10), lease(1, 11), lease(2, 12)
    cluster.deploy(first)
    ns = lease_namespace(first)
    found = wait(
        "two Ingresses",
        lambda: (i := cluster.ingresses()) and len(i) == 2 and i,
        operator,
    )
    assert set(found) == {f"{ns}/shop.example.com", f"{ns}/www.example.com"}
    shop = found[f"{ns}/shop.example.com"]
    assert shop["spec"]["ingressClassName"] == "akash-ingress-class"
    rule = shop["spec"]["rules"][0]
    assert rule["host"] == "shop.example.com"
    assert rule["http"]["paths"][0]["backend"]["service"] == {"name": "web", "port": {"number": 80}}
    annotations = shop["metadata"]["annotations"]
    assert annotations[f"{NGINX}/proxy-read-timeout"] == "2"  # 1500 ms, rounded up
    assert annotations[f"{NGINX}/proxy-body-size"] == "2097152"
    assert annotations[f"{NGINX}/proxy-next-upstream"] == "error http_502"
    status = wait(
        "the routed status",
        lambda: (
            cluster.host("shop.example.com").get("status", {}).get("state") == "routed"
            and cluster.host("shop.example.com")["status"]
        ),
        operator,
    )
    assert status["namespace"] == ns and status["service"] == "web:80"
    assert FINALIZER in cluster.host("shop.example.com")["metadata"]["finalizers"]

    # another owner's lease asks for a hostname the first one routes: a conflict, no Ingress
    cluster.deploy(stranger, hosts=False)
    other_ns = lease_namespace(stranger)
    taken = provider_host_objects(stranger, WEB, settings=BUILD)[0]
    taken["metadata"]["name"] = taken["spec"]["hostname"] = "taken.example.com"
    cluster.declare(taken)
    cluster.withdraw("www.example.com")  # the first lease gives www up...
    wait("www's Ingress gone", lambda: f"{ns}/www.example.com" not in cluster.ingresses(), operator)
    www = provider_host_objects(stranger, WEB, settings=BUILD)[1]
    wait("www's ProviderHost gone", lambda: "www.example.com" not in names(cluster), operator)
    cluster.declare(www)  # ...and the stranger takes it: no conflict any more
    wait(
        "the stranger's www", lambda: f"{other_ns}/www.example.com" in cluster.ingresses(), operator
    )
    shop_for_stranger = provider_host_objects(stranger, WEB, settings=BUILD)[0]
    cluster.declare(shop_for_stranger)  # shop is still the first owner's: refused
    conflict = wait(
        "the conflict on the status",
        lambda: (
            (s := cluster.host("shop.example.com").get("status", {})).get("state") == "conflict"
            and s
        ),
        operator,
    )
    assert ns in conflict["message"]
    assert f"{other_ns}/shop.example.com" not in cluster.ingresses()
    assert f"{ns}/shop.example.com" in cluster.ingresses()

    # the first owner migrates shop to its second lease: the Ingress moves
    cluster.deploy(second, hosts=False)
    cluster.declare(provider_host_objects(first, WEB, settings=BUILD)[0])  # back to the first
    wait("shop routed again", lambda: state(cluster, "shop.example.com") == "routed", operator)
    cluster.declare(provider_host_objects(second, WEB, settings=BUILD)[0])
    moved = lease_namespace(second)
    wait(
        "shop's Ingress in the second lease only",
        lambda: (
            (i := cluster.ingresses())
            and f"{moved}/shop.example.com" in i
            and f"{ns}/shop.example.com" not in i
        ),
        operator,
    )

    # teardown: every ProviderHost deleted → every Ingress gone, every finalizer released
    for name in names(cluster):
        cluster.withdraw(name)
    wait("no ProviderHost left", lambda: not names(cluster), operator, timeout=30)
    assert not {k for k in cluster.ingresses() if not k.endswith("taken.example.com")}
    assert "Traceback" not in operator.log()


def test_a_generated_hostname_takes_the_proxy_settings_of_its_services_http_expose() -> None:
    static = BuildSettings(ingress_domain="ingress.example.net")
    first = lease(1, 10)
    generated = ingress_host(first, "web", "ingress.example.net")
    hosts = {h["metadata"]["name"]: h for h in provider_host_objects(first, WEB, settings=static)}
    assert set(hosts) == {"shop.example.com", "www.example.com", generated}
    route = route_of(hosts[generated]["spec"], generated)
    manifest = manifest_object(first, WEB, "1", settings=static)
    options = http_options(manifest, route)
    assert options == http_options(manifest, route_of(hosts["shop.example.com"]["spec"], "shop"))
    assert (options.read_timeout, options.max_body_size) == (1500, 2097152)
    assert http_options(None, route) == HTTPOptions()  # no Manifest yet: Akash's defaults


def test_an_invalid_hostname_is_reported_and_never_written(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    first = lease(3, 20)
    cluster.deploy(first, hosts=False)
    host = provider_host_objects(first, WEB, settings=BUILD)[0]
    host["metadata"]["name"] = "bad-host"
    host["spec"]["hostname"] = "under_score.example.com"
    cluster.declare(host)
    status = wait(
        "the invalid status",
        lambda: (s := cluster.host("bad-host").get("status", {})).get("state") == "invalid" and s,
        operator,
    )
    assert "under_score" in status["message"]
    assert not cluster.ingresses()


def names(cluster: Cluster) -> set[str]:
    return {h["metadata"]["name"] for h in cluster.hosts()}


def state(cluster: Cluster, name: str) -> str:
    return str(cluster.host(name).get("status", {}).get("state", ""))


@pytest.mark.timeout(180)
def test_a_killed_operator_converges_without_duplicates_or_stuck_finalizers(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    leases = [lease(4, 100 + n) for n in range(12)]
    groups = []
    for n, lease_id in enumerate(leases):
        text = SDL.replace("shop.example.com", f"shop{n}.example.com").replace(
            "www.example.com", f"www{n}.example.com"
        )
        groups.append(parse_sdl(text).manifest.groups[0])
        cluster.deploy(lease_id, groups[-1])
    wait("the first Ingress", lambda: len(cluster.ingresses()) >= 1, operator)
    operator.restart(signal.SIGKILL)
    done = wait(
        "24 Ingresses after the restart",
        lambda: (i := cluster.ingresses()) and len(i) == 24 and i,
        operator,
        timeout=60,
    )
    for n, lease_id in enumerate(leases):
        ns = lease_namespace(lease_id)
        assert {f"{ns}/shop{n}.example.com", f"{ns}/www{n}.example.com"} <= set(done)
    wait("every host routed", lambda: all(state(cluster, h) == "routed" for h in names(cluster)),
         operator)  # fmt: skip
    # deletions half-way, then another kill: the rest is finished by the next operator
    for host in sorted(names(cluster))[:12]:
        cluster.withdraw(host)
    operator.restart(signal.SIGKILL)
    for host in sorted(names(cluster)):
        cluster.withdraw(host)
    wait("every ProviderHost released", lambda: not names(cluster), operator, timeout=60)
    wait("every Ingress gone", lambda: not cluster.ingresses(), operator)


def test_a_host_refused_again_and_again_is_ignored_until_its_spec_changes(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    first = lease(6, 30)
    cluster.deploy(first, hosts=False)
    host = provider_host_objects(first, WEB, settings=BUILD)[0]
    host["spec"]["service_name"] = "Not_A_Service"  # the API server refuses the Ingress
    cluster.declare(host)
    ignored = wait(
        "the host on the ignore list",
        lambda: (
            (s := cluster.host("shop.example.com").get("status", {})).get("state") == "ignored"
            and s
        ),
        operator,
    )
    assert ignored["failures"] == 3 and "service.name" in ignored["message"]
    assert ignored["ignored_until"] > time.time() + 3600
    assert operator.log().count('"ignoring shop.example.com') == 1
    time.sleep(2)  # four retry periods: nothing more is tried while it is ignored
    assert cluster.host("shop.example.com")["status"] == ignored
    host["spec"]["service_name"] = "web"  # a new spec is tried at once
    cluster.declare(host)
    wait("routed after the fix", lambda: state(cluster, "shop.example.com") == "routed", operator)
    assert f"{lease_namespace(first)}/shop.example.com" in cluster.ingresses()


HTTPROUTE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "httproutes.gateway.networking.k8s.io"},
    "spec": {
        "group": "gateway.networking.k8s.io",
        "scope": "Namespaced",
        "names": {"plural": "httproutes", "singular": "httproute", "kind": "HTTPRoute"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                        },
                    }
                },
            }
        ],
    },
}


def test_gateway_api_mode_routes_with_httproutes(
    kubesim_process: KubeSimProcess, cluster: Cluster, redis_url: str, tmp_path: Path
) -> None:
    client.ApiextensionsV1Api(cluster.api).create_custom_resource_definition(HTTPROUTE_CRD)
    operator = hostname_operator(
        kubesim_process.kubeconfig, redis_url, tmp_path, AP_INGRESS_MODE="gateway-api",
        AP_GATEWAY_NAME="edge", AP_GATEWAY_NAMESPACE="gateways",
    )  # fmt: skip
    try:
        first = lease(7, 40)
        cluster.deploy(first)
        ns = lease_namespace(first)

        def routes() -> dict[str, Obj]:
            items = cluster.custom.list_cluster_custom_object(
                "gateway.networking.k8s.io", "v1", "httproutes"
            )["items"]
            return {f"{r['metadata']['namespace']}/{r['metadata']['name']}": r for r in items}

        found = wait("two HTTPRoutes", lambda: len(r := routes()) == 2 and r, operator)
        shop = found[f"{ns}/shop.example.com"]["spec"]
        assert shop["parentRefs"] == [{"name": "edge", "namespace": "gateways"}]
        assert shop["hostnames"] == ["shop.example.com"]
        assert shop["rules"][0]["backendRefs"] == [{"name": "web", "port": 80}]
        assert not cluster.ingresses()
        for name in names(cluster):
            cluster.withdraw(name)
        wait("no HTTPRoute left", lambda: not routes() and not names(cluster), operator)
    finally:
        operator.stop()
