"""The deployment backends: ``kube`` against kubesim over real HTTP with the official
client (nothing of it mocked), and ``null`` in memory.

The objects are small hand-made ones of the kinds the builders produce — a Manifest
resource, the namespace, a NetworkPolicy, a Deployment ``web`` with its ClusterIP and
NodePort Services, a StatefulSet ``db`` with its Service, a ProviderHost — so these tests
do not depend on the builders; the Ingress the hostname operator makes of the ProviderHost
is applied beside them where a test needs it. The contract tests run on both backends;
the rest is what only a cluster does (server defaults, node ports, pods, outages).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import kubernetes
import pytest
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api, CustomObjectsApi, NetworkingV1Api

from akcluster.adapters import kube_scan
from akcluster.adapters.kube_deploy import KubeDeployments
from akcluster.adapters.kube_rules import APPLIED, fingerprint, merged, up_to_date
from akcluster.adapters.null_deploy import NullDeployments
from akcluster.errors import LeaseNotFound, Rejected, Unavailable
from akservice.testing import eventually
from aktypes.events import ForwardedPort, LeasedIPStatus
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace
from aktypes.testing import address
from kubesim.controllers import ControllerSettings
from kubesim.testing import ThreadedKubeSim

T = TypeVar("T")
Obj = dict[str, Any]
Backend = KubeDeployments | NullDeployments

LEASE = LeaseID(owner=address(1), dseq=77, gseq=1, oseq=1, provider=address(2))
OTHER = LeaseID(owner=address(3), dseq=78, gseq=2, oseq=1, provider=address(2))
NS = lease_namespace(LEASE)
HOST = "web.example.com"
PUBLIC = "provider.example.com"
SERVICES = [("web", 2), ("db", 1)]
# slow enough to see a lease before its pods are ready; crash loops restart quickly
SETTINGS = ControllerSettings(pod_start_delay=0.8, crash_interval=0.2)


# -- hand-made objects ------------------------------------------------------------------------
def crd(plural: str, kind: str) -> Obj:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.akash.network"},
        "spec": {
            "group": "akash.network",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v2beta2",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


CRDS = [crd("manifests", "Manifest"), crd("providerhosts", "ProviderHost")]


def lease_labels(lease: LeaseID) -> dict[str, str]:
    return {
        "akash.network": "true",
        "akash.network/namespace": lease_namespace(lease),
        "akash.network/lease.id.owner": str(lease.owner),
        "akash.network/lease.id.dseq": str(lease.dseq),
        "akash.network/lease.id.gseq": str(lease.gseq),
        "akash.network/lease.id.oseq": str(lease.oseq),
        "akash.network/lease.id.provider": str(lease.provider),
    }


def meta(lease: LeaseID, name: str, labels: dict[str, str], ns: str | None = None) -> Obj:
    return {"name": name, "namespace": ns or lease_namespace(lease), "labels": labels}


def service_labels(lease: LeaseID, service: str) -> dict[str, str]:
    return lease_labels(lease) | {
        "akash.network/manifest-service": service,
        "akash.network/service-target": "true",
    }


def pod_template(lease: LeaseID, service: str, image: str, port: int) -> Obj:
    container = {
        "name": service,
        "image": image,
        "command": ["/bin/server"],
        "ports": [{"containerPort": port}],
        "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "128Mi"},
        },
    }
    return {
        "metadata": {"labels": service_labels(lease, service)},
        "spec": {"containers": [container], "automountServiceAccountToken": False},
    }


def selector(lease: LeaseID, service: str) -> Obj:
    return {
        "matchLabels": {
            "akash.network": "true",
            "akash.network/namespace": lease_namespace(lease),
            "akash.network/manifest-service": service,
        }
    }


def kube_service(lease: LeaseID, service: str, ports: list[Obj], *, node_port: bool) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(
            lease, service + ("-np" if node_port else ""), service_labels(lease, service)
        ),
        "spec": {
            "type": "NodePort" if node_port else "ClusterIP",
            "selector": selector(lease, service)["matchLabels"],
            "ports": ports,
        },
    }


def objects(lease: LeaseID = LEASE, *, image: str = "nginx:1.25", db: bool = True) -> list[Obj]:
    """A lease's objects in apply order (``db=False``: the group without ``db``)."""
    labels, ns = lease_labels(lease), lease_namespace(lease)
    services = [{"name": "web", "count": 2}]  # no image: a new one changes only the Deployment
    if db:
        services.append({"name": "db", "count": 1})
    found: list[Obj] = [
        {
            "apiVersion": "akash.network/v2beta2",
            "kind": "Manifest",
            "metadata": meta(lease, ns, labels, "lease"),
            "spec": {
                "lease_id": {
                    "owner": str(lease.owner),
                    "dseq": str(lease.dseq),
                    "gseq": lease.gseq,
                    "oseq": lease.oseq,
                    "provider": str(lease.provider),
                },
                "group": {"name": "westcoast", "services": services},
            },
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}},
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": meta(lease, "akash-deployment-restrictions", labels),
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [
                            {"namespaceSelector": {"matchLabels": {"akash.network/namespace": ns}}}
                        ]
                    }
                ],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(lease, "web", service_labels(lease, "web")),
            "spec": {
                "replicas": 2,
                "selector": selector(lease, "web"),
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                },
                "revisionHistoryLimit": 10,
                "template": pod_template(lease, "web", image, 80),
            },
        },
        kube_service(
            lease,
            "web",
            [{"name": "0-80", "port": 80, "targetPort": 80, "protocol": "TCP"}],
            node_port=False,
        ),
        kube_service(
            lease,
            "web",
            [
                {"name": "1-8080", "port": 8080, "targetPort": 8081, "protocol": "TCP"},
                {"name": "2-5353", "port": 5353, "targetPort": 53, "protocol": "UDP"},
            ],
            node_port=True,
        ),
    ]
    found.append(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta(
                lease, "web-env", lease_labels(lease) | {"akash.network/manifest-service": "web"}
            ),
            "type": "Opaque",
            "stringData": {"GREETING": "hello"},  # the server keeps it base64 in ``data``
        }
    )
    if db:
        found += [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": meta(lease, "db", service_labels(lease, "db")),
                "spec": {
                    "replicas": 1,
                    "serviceName": "db",
                    "selector": selector(lease, "db"),
                    "template": pod_template(lease, "db", "postgres:16", 5432),
                },
            },
            kube_service(
                lease,
                "db",
                [{"name": "0-5432", "port": 5432, "targetPort": 5432, "protocol": "TCP"}],
                node_port=False,
            ),
        ]
    found.append(
        {
            "apiVersion": "akash.network/v2beta2",
            "kind": "ProviderHost",
            "metadata": meta(lease, f"{lease.dseq}.{HOST}", labels, "lease"),
            "spec": {"hostname": HOST, "service_name": "web", "external_port": 80},
        }
    )
    return found


def operator_ingress(lease: LeaseID = LEASE) -> Obj:
    """The Ingress the hostname operator makes of the lease's ProviderHost: the kube
    backend reads the lease's URIs from it and never removes it."""
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": meta(lease, HOST, lease_labels(lease))
        | {"annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "1048576"}},
        "spec": {
            "ingressClassName": "akash-ingress-class",
            "rules": [
                {
                    "host": HOST,
                    "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
                }
            ],
        },
    }


def refs(objs: list[Obj]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objs}


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture
def kubesim_thread() -> Iterator[ThreadedKubeSim]:
    """The plugin's fixture, with pods slow enough to be seen starting."""
    with ThreadedKubeSim(controllers=SETTINGS) as sim:
        yield sim


@pytest.fixture
async def kube(kubesim_kubeconfig: Path) -> AsyncIterator[KubeDeployments]:
    backend = KubeDeployments.from_kubeconfig(kubesim_kubeconfig, request_timeout_s=2.0)
    await backend.install(CRDS)
    yield backend
    backend.close()


@pytest.fixture(params=["null", "kube"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "null":
        return NullDeployments()
    kube: KubeDeployments = request.getfixturevalue("kube")
    return kube


@pytest.fixture
def api(kubesim_kubeconfig: Path) -> Iterator[ApiClient]:
    """The test's own client, to look at the cluster as kubectl would."""
    client: ApiClient = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubesim_kubeconfig)
    )
    yield client
    client.close()  # type: ignore[no-untyped-call]


async def read(call: Any, *args: Any, **kwargs: Any) -> Obj:
    """A typed client call (off the loop) as the JSON the server sent."""
    response = await asyncio.to_thread(call, *args, _preload_content=False, **kwargs)
    try:
        body: Obj = json.loads(response.data)
    finally:
        response.release_conn()
    return body


async def names(call: Any, *args: Any, **kwargs: Any) -> set[str]:
    return {item["metadata"]["name"] for item in (await read(call, *args, **kwargs))["items"]}


async def node_ports(api: ApiClient) -> dict[str, int]:
    service = await read(CoreV1Api(api).read_namespaced_service, "web-np", NS)
    return {p["name"]: p["nodePort"] for p in service["spec"]["ports"]}


async def settle(
    check: Callable[[], Awaitable[T]], what: str, until: Callable[[T], object] = bool
) -> T:
    """:func:`eventually` for a coroutine function, with its type."""
    value: T = await eventually(check, what=what, until=until)
    return value


async def unclaimed(backend: Backend) -> tuple[list[LeaseID], list[LeaseID]]:
    """The leases of every Manifest resource and of every lease namespace (a scan that
    asks for none)."""
    async with backend.scan() as scan:
        return await scan.unclaimed()


def in_listing_order(*leases: LeaseID) -> list[LeaseID]:
    """Leases in the order a scan takes them: their namespaces' names."""
    return sorted(leases, key=lease_namespace)


async def answers(backend: KubeDeployments) -> bool:
    try:
        await backend.server_version()
    except Unavailable:
        return False
    return True


# -- the contract: both backends --------------------------------------------------------------
async def test_apply_writes_each_object_once_then_nothing(backend: Backend) -> None:
    assert await backend.apply(objects()) == len(objects())
    assert await backend.apply(objects()) == 0
    changed = objects(image="nginx:1.27")
    assert await backend.apply(changed) == 1  # the Deployment; the Manifest names no image
    assert await backend.apply(changed) == 0


async def test_prune_removes_what_the_group_no_longer_has(backend: Backend) -> None:
    await backend.apply(objects())
    await backend.apply(objects(OTHER))
    smaller = objects(db=False)
    assert await backend.apply(smaller) == 1  # the Manifest
    assert await backend.prune(LEASE, refs(smaller)) == 2  # StatefulSet db, Service db
    assert await backend.prune(LEASE, refs(smaller)) == 0
    assert await backend.apply(objects(OTHER)) == 0  # the other lease is untouched
    assert await backend.apply(smaller) == 0


async def test_teardown_removes_the_lease_and_is_idempotent(backend: Backend) -> None:
    await backend.apply(objects())
    await backend.apply(objects(OTHER))
    await backend.teardown(LEASE)
    await backend.teardown(LEASE)
    assert await settle(
        lambda: unclaimed(backend), what="the namespace gone", until=lambda u: u[1] == [OTHER]
    ) == ([OTHER], [OTHER])
    assert await backend.manifest(LEASE) is None
    await backend.teardown(OTHER)
    assert (await unclaimed(backend))[0] == []


async def test_a_scan_finds_each_lease_as_applied_and_what_no_lease_asked_for(
    backend: Backend,
) -> None:
    assert await unclaimed(backend) == ([], [])
    await backend.apply(objects())
    await backend.apply(objects(OTHER))
    async with backend.scan() as scan:
        for lease in in_listing_order(LEASE, OTHER):
            assert await scan.unchanged(objects(lease))
        assert await scan.unclaimed() == ([], [])
    async with backend.scan() as scan:
        assert await scan.unchanged(objects(OTHER))
        assert await scan.unclaimed() == ([LEASE], [LEASE])
    assert sorted((await unclaimed(backend))[0]) == sorted([LEASE, OTHER])
    manifest = await backend.manifest(LEASE)
    assert manifest is not None
    assert manifest["kind"] == "Manifest"
    assert manifest["spec"]["group"]["name"] == "westcoast"


async def test_a_scan_tells_a_lease_with_an_object_changed_or_missing(backend: Backend) -> None:
    await backend.apply(objects())
    await backend.apply(objects(OTHER, image="nginx:1.27"))
    async with backend.scan() as scan:
        found = {
            lease: await scan.unchanged(objects(lease)) for lease in in_listing_order(LEASE, OTHER)
        }
    assert found == {LEASE: True, OTHER: False}
    async with backend.scan() as scan:
        more = [*objects(), kube_service(LEASE, "cache", [{"port": 6379}], node_port=False)]
        assert not await scan.unchanged(more)


async def test_every_service_becomes_available(backend: Backend) -> None:
    await backend.apply([*objects(), operator_ingress()])
    status = await settle(
        lambda: backend.lease_status(LEASE, SERVICES, PUBLIC),
        what="every service available",
        until=lambda s: all(s.services[n].available == c for n, c in SERVICES),
    )
    assert status.lease_id == LEASE
    assert status.services["web"].uris == [HOST]
    assert status.services["db"].uris is None
    assert await backend.pods_failing(LEASE) == {}


# -- kube: what only a cluster does -----------------------------------------------------------
async def test_server_defaults_and_foreign_metadata_cause_no_writes(
    kube: KubeDeployments, api: ApiClient
) -> None:
    await kube.apply(objects())
    apps = AppsV1Api(api)
    web = await read(apps.read_namespaced_deployment, "web", NS)
    assert web["spec"]["template"]["spec"]["restartPolicy"] == "Always"  # a default
    assert web["metadata"]["annotations"][APPLIED]
    patch = {"metadata": {"annotations": {"example.com/owner": "ops"}, "labels": {"team": "a"}}}
    await asyncio.to_thread(apps.patch_namespaced_deployment, "web", NS, patch)
    assert await kube.apply(objects()) == 0
    # a label of ours that the desired object no longer has goes; the foreign ones stay
    await asyncio.to_thread(
        apps.patch_namespaced_deployment,
        "web",
        NS,
        {"metadata": {"labels": {"akash.network/x": "1"}}},
    )
    assert await kube.apply(objects()) == 1
    web = await read(apps.read_namespaced_deployment, "web", NS)
    assert "akash.network/x" not in web["metadata"]["labels"]
    assert web["metadata"]["labels"]["team"] == "a"
    assert web["metadata"]["annotations"]["example.com/owner"] == "ops"


async def test_a_removed_field_and_drift_are_written(kube: KubeDeployments, api: ApiClient) -> None:
    await kube.apply(objects())
    apps = AppsV1Api(api)
    without = objects()
    del without[3]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert await kube.apply(without) == 1
    web = await read(apps.read_namespaced_deployment, "web", NS)
    assert "command" not in web["spec"]["template"]["spec"]["containers"][0]
    await asyncio.to_thread(
        apps.patch_namespaced_deployment_scale, "web", NS, {"spec": {"replicas": 5}}
    )
    assert await kube.apply(without) == 1  # someone scaled it: back to the manifest's count
    assert (await read(apps.read_namespaced_deployment, "web", NS))["spec"]["replicas"] == 2


async def test_a_scan_reads_page_by_page_and_tells_drift_from_server_defaults(
    kube: KubeDeployments, api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five leases, listed two objects a page: one scaled by hand, one missing its Service,
    one whose namespace is being deleted; foreign labels and server defaults are no drift."""
    leases = in_listing_order(
        *(
            LeaseID(owner=address(1), dseq=dseq, gseq=1, oseq=1, provider=address(2))
            for dseq in range(90, 95)
        )
    )
    for lease in leases:
        await kube.apply(objects(lease))
    scaled, missing, deleting, labelled, _ = leases
    apps, core = AppsV1Api(api), CoreV1Api(api)
    await asyncio.to_thread(
        apps.patch_namespaced_deployment_scale,
        "web",
        lease_namespace(scaled),
        {"spec": {"replicas": 5}},
    )
    await asyncio.to_thread(core.delete_namespaced_service, "db", lease_namespace(missing))
    await asyncio.to_thread(
        core.patch_namespace,
        lease_namespace(deleting),
        {"metadata": {"finalizers": ["example.com/hold"]}},
    )
    await asyncio.to_thread(core.delete_namespace, lease_namespace(deleting))
    await asyncio.to_thread(
        apps.patch_namespaced_deployment,
        "web",
        lease_namespace(labelled),
        {"metadata": {"labels": {"example.com/team": "a"}}},
    )
    monkeypatch.setattr(kube_scan, "PAGE", 2)
    async with kube.scan() as scan:
        found = [await scan.unchanged(objects(lease)) for lease in leases]
        assert await scan.unclaimed() == ([], [])
    assert found == [False, False, False, True, True]


async def test_a_new_image_is_one_write_and_the_pods_roll(
    kube: KubeDeployments, api: ApiClient
) -> None:
    await kube.apply(objects())
    core = CoreV1Api(api)

    async def images() -> list[str]:
        pods = await read(
            core.list_namespaced_pod, NS, label_selector="akash.network/manifest-service=web"
        )
        return sorted(p["spec"]["containers"][0]["image"] for p in pods["items"])

    await settle(images, what="web's pods", until=lambda i: i == ["nginx:1.25"] * 2)
    assert await kube.apply(objects(image="nginx:1.27")) == 1
    await settle(images, what="web's pods rolled", until=lambda i: i == ["nginx:1.27"] * 2)
    await settle(
        lambda: kube.lease_status(LEASE, SERVICES, PUBLIC),
        what="web available again",
        until=lambda s: (
            s.services["web"].available == 2 and s.services["web"].updated_replicas == 2
        ),
    )


async def test_node_ports_survive_re_apply(kube: KubeDeployments, api: ApiClient) -> None:
    await kube.apply(objects())
    before = await node_ports(api)
    assert set(before) == {"1-8080", "2-5353"}
    assert all(30000 <= port <= 32767 for port in before.values())
    assert await kube.apply(objects()) == 0
    changed = objects()
    changed[5]["metadata"]["labels"]["akash.network/manifest.resource.version"] = "42"
    changed[5]["spec"]["ports"].append({"name": "3-9000", "port": 9000, "targetPort": 9000})
    assert await kube.apply(changed) == 1
    after = await node_ports(api)
    assert {k: after[k] for k in before} == before
    assert after["3-9000"] not in before.values()
    assert await kube.apply(changed) == 0
    assert await node_ports(api) == after


async def test_prune_leaves_the_rest_of_the_lease(kube: KubeDeployments, api: ApiClient) -> None:
    await kube.apply([*objects(), operator_ingress()])
    smaller = objects(db=False)
    await kube.apply(smaller)
    assert await kube.prune(LEASE, refs(smaller)) == 2
    apps, core = AppsV1Api(api), CoreV1Api(api)
    assert await names(apps.list_namespaced_stateful_set, NS) == set()
    assert await names(apps.list_namespaced_deployment, NS) == {"web"}
    assert await names(core.list_namespaced_service, NS) == {"web", "web-np"}
    # without its ProviderHost in ``keep``, the hostname goes too (its Ingress is the
    # hostname operator's, which removes it when the ProviderHost goes)
    assert await kube.prune(LEASE, refs(smaller[:-1])) == 1
    assert (
        await names(
            CustomObjectsApi(api).list_namespaced_custom_object,
            "akash.network",
            "v2beta2",
            "lease",
            "providerhosts",
        )
        == set()
    )
    assert await names(NetworkingV1Api(api).list_namespaced_ingress, NS) == {HOST}


async def test_teardown_deletes_namespace_and_resources(
    kube: KubeDeployments, api: ApiClient
) -> None:
    await kube.apply(objects())
    await kube.apply(objects(OTHER))
    await kube.teardown(LEASE)
    with pytest.raises(LeaseNotFound):
        await kube.lease_status(LEASE, SERVICES, PUBLIC)
    core, custom = CoreV1Api(api), CustomObjectsApi(api)
    await settle(
        lambda: names(core.list_namespace), what="namespace gone", until=lambda n: NS not in n
    )
    crs = ("akash.network", "v2beta2", "lease")
    assert await names(custom.list_namespaced_custom_object, *crs, "manifests") == {
        lease_namespace(OTHER)
    }
    assert await names(custom.list_namespaced_custom_object, *crs, "providerhosts") == {
        f"{OTHER.dseq}.{HOST}"
    }
    await kube.teardown(LEASE)  # gone already: done


async def test_lease_status_before_and_after_the_pods_are_ready(
    kube: KubeDeployments, api: ApiClient
) -> None:
    with pytest.raises(LeaseNotFound):
        await kube.lease_status(LEASE, SERVICES, PUBLIC)
    await kube.apply(objects()[1:])  # the namespace without its Manifest resource
    with pytest.raises(LeaseNotFound, match="Manifest"):
        await kube.lease_status(LEASE, SERVICES, PUBLIC)
    await kube.apply([*objects(), operator_ingress()])
    early = await kube.lease_status(LEASE, [*SERVICES, ("cache", 1)], PUBLIC)
    assert early.services["web"].available == 0
    assert early.services["db"].available == 0
    assert early.services["cache"].model_dump() == {  # no workload: zeros
        "name": "cache",
        "available": 0,
        "total": 0,
        "uris": None,
        "observed_generation": 0,
        "replicas": 0,
        "updated_replicas": 0,
        "ready_replicas": 0,
        "available_replicas": 0,
        "restarts": 0,
        "last_termination": None,
    }
    ready = await settle(
        lambda: kube.lease_status(LEASE, SERVICES, PUBLIC),
        what="every service ready",
        until=lambda s: s.services["web"].available == 2 and s.services["db"].available == 1,
    )
    web = ready.services["web"]
    assert (web.total, web.replicas, web.ready_replicas, web.available_replicas) == (2, 2, 2, 2)
    assert web.observed_generation >= 1
    assert web.uris == [HOST]
    ports = await node_ports(api)
    assert ready.forwarded_ports == {
        "web": [
            ForwardedPort(
                host=PUBLIC, port=8081, external_port=ports["1-8080"], proto="TCP", name="web"
            ),
            ForwardedPort(
                host=PUBLIC, port=53, external_port=ports["2-5353"], proto="UDP", name="web"
            ),
        ]
    }
    assert ready.ips == {}


async def test_lease_status_reports_the_leased_ip_ports_of_the_ip_operator(
    kube: KubeDeployments, api: ApiClient
) -> None:
    """The IP operator's LoadBalancer Service (one port each): reported as Akash's operator
    reads it, with an empty address until MetalLB gives one (Akash fails the whole status)."""
    await kube.apply(objects())
    balancer = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(
            LEASE,
            "web-ip-5432-tcp",
            {**service_labels(LEASE, "web"), "akash.network/service-target": "metal-lb"},
        ),
        "spec": {
            "type": "LoadBalancer",
            "selector": selector(LEASE, "web")["matchLabels"],
            "ports": [{"name": "5432-tcp", "port": 5432, "targetPort": 5000, "protocol": "TCP"}],
        },
    }
    core = CoreV1Api(api)
    await asyncio.to_thread(core.create_namespaced_service, NS, balancer)
    pending = await kube.lease_status(LEASE, SERVICES, PUBLIC)
    unassigned = LeasedIPStatus(port=5000, external_port=5432, protocol="TCP", ip="")
    assert pending.ips == {"web": [unassigned]}
    assert pending.forwarded_ports["web"]  # the leased-IP Service is no forwarded port
    assert all(p.external_port != 5432 for p in pending.forwarded_ports["web"])
    status = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}  # what MetalLB writes
    await asyncio.to_thread(
        core.patch_namespaced_service_status, "web-ip-5432-tcp", NS, {"status": status}
    )
    assigned = await kube.lease_status(LEASE, SERVICES, PUBLIC)
    assert assigned.ips == {"web": [unassigned.model_copy(update={"ip": "203.0.113.7"})]}
    assert [i.go_dict() for i in assigned.ips["web"]] == [
        {"Port": 5000, "ExternalPort": 5432, "Protocol": "TCP", "IP": "203.0.113.7"}
    ]


async def test_pods_failing_tells_a_crash_loop_from_starting(
    kube: KubeDeployments, kubesim_thread: ThreadedKubeSim
) -> None:
    await kube.apply(objects())
    assert await kube.pods_failing(LEASE) == {}  # starting is not failing
    kubesim_thread.call(
        lambda: kubesim_thread.faults.crashloop(NS, "akash.network/manifest-service=web")
    )
    failing = await settle(
        lambda: kube.pods_failing(LEASE), what="web failing", until=lambda f: "web" in f
    )
    assert set(failing) == {"web"}
    assert "CrashLoopBackOff" in failing["web"]
    assert failing["web"].startswith("pod web-")
    status = await kube.lease_status(LEASE, SERVICES, PUBLIC)
    assert status.services["web"].available == 0
    kubesim_thread.call(kubesim_thread.faults.heal)
    await settle(lambda: kube.pods_failing(LEASE), what="healed", until=lambda f: f == {})


async def test_an_invalid_object_is_rejected_naming_it(kube: KubeDeployments) -> None:
    await kube.apply(objects()[:2])
    bad = copy.deepcopy(objects()[3])
    bad["metadata"]["name"] = "bad"
    del bad["spec"]["template"]["spec"]["containers"][0]["image"]
    with pytest.raises(Rejected, match=rf"Deployment {NS}/bad: 422 Invalid: .*image"):
        await kube.apply([bad])
    with pytest.raises(Unavailable, match="does not serve"):
        await kube.apply(
            [{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}]
        )


@pytest.mark.parametrize("refuse", [False, True], ids=["503", "refused"])
async def test_an_unavailable_api_server_is_unavailable(
    kube: KubeDeployments,
    kubesim_thread: ThreadedKubeSim,
    kubesim_kubeconfig: Path,
    refuse: bool,
) -> None:
    await kube.apply(objects())
    # a refusal ends only when its time is up (``available()`` does not reopen the port);
    # connections open before it are still answered (503): a new client finds the port shut
    seconds = 2.0 if refuse else 30.0
    kubesim_thread.call(lambda: kubesim_thread.faults.unavailable(seconds, refuse=refuse))
    backend = KubeDeployments.from_kubeconfig(kubesim_kubeconfig) if refuse else kube
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: backend.apply(objects()),
        lambda: backend.prune(LEASE, refs(objects())),
        lambda: backend.teardown(LEASE),
        lambda: backend.lease_status(LEASE, SERVICES, PUBLIC),
        lambda: backend.pods_failing(LEASE),
        lambda: unclaimed(backend),
        lambda: backend.manifest(LEASE),
        backend.server_version,
    ]
    try:
        for call in calls:
            started = time.monotonic()
            with pytest.raises(Unavailable, match="Connection" if refuse else "503"):
                await call()
            assert time.monotonic() - started < 1.0
        kubesim_thread.call(kubesim_thread.faults.available)
        await settle(lambda: answers(backend), what="the API server back")
        assert await backend.apply(objects()) == 0
    finally:
        backend.close()


async def test_a_hung_api_server_is_unavailable_within_the_timeout(
    kubesim_kubeconfig: Path, kubesim_thread: ThreadedKubeSim
) -> None:
    kube = KubeDeployments.from_kubeconfig(kubesim_kubeconfig, request_timeout_s=0.3)
    try:
        await kube.install(CRDS)
        kubesim_thread.call(lambda: kubesim_thread.faults.slow(2.0, 30))
        started = time.monotonic()
        with pytest.raises(Unavailable, match="no answer within 0.3s|timed out"):
            await kube.lease_status(LEASE, SERVICES, PUBLIC)
        assert time.monotonic() - started < 1.3
    finally:
        kubesim_thread.call(lambda: kubesim_thread.faults.slow(0.0, 0))
        kube.close()


async def test_install_is_idempotent_and_server_version(
    kube: KubeDeployments, api: ApiClient
) -> None:
    await kube.install(CRDS)
    assert await kube.apply(CRDS) == 0
    assert "lease" in await names(CoreV1Api(api).list_namespace)
    version = await kube.server_version()
    assert version["major"] == "1"
    assert version["gitVersion"].startswith("v1.")


async def test_a_scan_leaves_out_namespaces_that_are_no_lease(
    kube: KubeDeployments,
) -> None:
    orphan = objects()[1]  # a lease's namespace without a Manifest: found, to be torn down
    odd = copy.deepcopy(orphan)
    odd["metadata"]["name"] = "not-the-lease-namespace"
    labels = {"akash.network": "true"}  # not all of a lease's labels
    partial = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "p", "labels": labels}}
    assert await kube.apply([orphan, odd, partial]) == 3
    assert await unclaimed(kube) == ([], [LEASE])


async def test_a_conflict_is_read_again_and_written_once(
    kubesim_kubeconfig: Path, api: ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    apps = AppsV1Api(api)

    class Racing(KubeDeployments):
        """Someone else changes the Deployment between our read and our write, once."""

        raced = False

        async def _get(self, resource: Any, name: str, namespace: str | None = None) -> Any:
            current = await super()._get(resource, name, namespace)
            if current is not None and resource.kind == "Deployment" and not self.raced:
                self.raced = True
                patch = {"metadata": {"annotations": {"example.com/by": "someone"}}}
                await asyncio.to_thread(apps.patch_namespaced_deployment, name, NS, patch)
            return current

    kube = Racing.from_kubeconfig(kubesim_kubeconfig)
    try:
        await kube.install(CRDS)
        await kube.apply(objects())  # created: nothing to race
        with caplog.at_level(logging.DEBUG, "akcluster.kube_deploy"):
            assert await kube.apply(objects(image="nginx:1.27")) == 1
        assert isinstance(kube, Racing) and kube.raced
        assert f"Deployment {NS}/web changed meanwhile (409 Conflict" in caplog.text
        web = await read(apps.read_namespaced_deployment, "web", NS)
        assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
        assert web["metadata"]["annotations"]["example.com/by"] == "someone"
    finally:
        kube.close()


async def test_pods_failing_tells_unschedulable(kube: KubeDeployments) -> None:
    huge = objects()
    resources = huge[3]["spec"]["template"]["spec"]["containers"][0]["resources"]
    resources["requests"]["cpu"] = resources["limits"]["cpu"] = "64"
    await kube.apply(huge)
    failing = await settle(
        lambda: kube.pods_failing(LEASE), what="web unschedulable", until=lambda f: "web" in f
    )
    assert "unschedulable" in failing["web"]
    assert "db" not in failing


def test_an_update_keeps_what_the_server_assigned_a_service() -> None:
    """Even where the server would not (older ones allocate again on a PUT without them)."""
    desired = objects()[5]
    current = copy.deepcopy(desired)
    current["metadata"]["resourceVersion"] = "7"
    current["spec"] |= {"clusterIP": "10.96.0.12", "clusterIPs": ["10.96.0.12"]}
    for port, node_port in zip(current["spec"]["ports"], (31001, 31002), strict=True):
        port["nodePort"] = node_port
    desired["spec"]["ports"].insert(0, {"name": "0-22", "port": 22, "targetPort": 22})
    body = merged(current, desired, fingerprint(desired))
    assert body["metadata"]["resourceVersion"] == "7"
    assert body["spec"]["clusterIP"] == "10.96.0.12"
    assert [p.get("nodePort") for p in body["spec"]["ports"]] == [None, 31001, 31002]
    assert not up_to_date(current, desired, fingerprint(desired))
    assert up_to_date(body, desired, fingerprint(desired))
