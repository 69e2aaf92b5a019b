"""Leases the Go provider runs, taken over in place: kubesim holding two leases built as Go's
``cluster/kube/builder`` builds them, the cluster's deployment managers started over it with
an empty Redis.

The objects below are written out by hand from Go's builders (``builder.go``,
``deployment.go``, ``statefulset.go``, ``workload.go``, ``service.go``, ``manifest.go``,
``client_hostname_connections.go``, ``client_ingress.go``) and the Manifest CRD's types
(``pkg/apis/akash.network/v2beta2``), not from this provider's builders, so a difference
between the two shows here:

- the Manifest resource in ``lease``, named after the lease namespace, labelled with the
  lease and ``akash.network/manifest.resource.version: ""``, its spec without
  ``scheduler_params`` (no GPU: Go's inventory gives none);
- the namespace, labelled with the lease and the Manifest's ``resourceVersion``;
- the workloads and Services labelled ``akash.network``, ``akash.network/namespace``,
  ``akash.network/manifest-service`` and that ``resourceVersion`` (no lease labels, no
  ``service-target``), container ports without a protocol;
- a ProviderHost per hostname (the generated one too), with the lease's labels and
  ``akash.network/lease.updated_at``, and the hostname operator's Ingress of each.

Go's provider ran with static ingress hosts on another domain than this cluster is set up
with; the generated hostname stays as Go named it. A third lease exposes two ports on a
leased IP: Go's ProviderLeasedIPs (``DeclareIP``, named after Go's sharing key) and the
LoadBalancer Services Go's IP operator made of them (``metallb/client.go``), with the address
MetalLB gave them; with our IP operator running too, the lease keeps that address and those
Services. Once adopted, no pod was replaced (names,
UIDs, workload generations), the lease status and manifest answer over the bus as the
gateway asks for them, the gateway's Kubernetes adapter reads logs and opens a shell, a
closed lease is torn down, and a second start writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api, CustomObjectsApi, NetworkingV1Api

from akbus import Bus, RedisSettings, Subscriber
from akbus.testing import FAST_SETTINGS
from akcluster.adapters.kube_deploy import KubeDeployments
from akcluster.deployments import Deployments, MonitorPolicy
from akcluster.domain.objects import BuildSettings, crds
from akcluster.domain.placement import CommitLevels
from akcluster.reservations import Reservations
from akgateway.adapters.kube import LeaseCluster
from akoperators.testing import OperatorProcess
from akservice.testing import eventually, http_status
from aktypes.events import (
    GetLeaseManifest,
    GetLeaseStatus,
    LeaseClosed,
    LeaseClosedReason,
    LeaseManifestReport,
    LeaseStatusReport,
)
from aktypes.events.streams import CHAIN_EVENTS, CLUSTER_COMMANDS
from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host
from aktypes.namespace import lease_namespace
from aktypes.testing import address

Obj = dict[str, Any]

PUBLIC = "provider.example.com"
GO_DOMAIN = "ingress.go.example.net"  # Go's --deployment-ingress-domain; ours has none
WEB = LeaseID(owner=address(31), dseq=101, gseq=1, oseq=1, provider=address(30))
DB = LeaseID(owner=address(32), dseq=102, gseq=1, oseq=1, provider=address(30))
SHOP = "shop.example.org"  # accepted by the web lease's SDL
GENERATED = ingress_host(WEB, "web", GO_DOMAIN)
HTTP_OPTIONS = {
    "max_body_size": 1048576,
    "read_timeout": 60000,
    "send_timeout": 60000,
    "next_tries": 3,
    "next_cases": ["error", "timeout"],
}


# -- the objects, as Go's builders make them ---------------------------------------------------
def go_lease_labels(lease: LeaseID) -> dict[str, str]:
    """``AppendLeaseLabels`` over ``{akash.network: true}``."""
    return {
        "akash.network": "true",
        "akash.network/lease.id.owner": lease.owner,
        "akash.network/lease.id.dseq": str(lease.dseq),
        "akash.network/lease.id.gseq": str(lease.gseq),
        "akash.network/lease.id.oseq": str(lease.oseq),
        "akash.network/lease.id.provider": lease.provider,
    }


def go_labels(lease: LeaseID, version: str) -> dict[str, str]:
    """``builder.labels()``: managed, namespace, the Manifest's resourceVersion."""
    return {
        "akash.network": "true",
        "akash.network/namespace": lease_namespace(lease),
        "akash.network/manifest.resource.version": version,
    }


def go_selector(lease: LeaseID, service: str) -> dict[str, str]:
    return {
        "akash.network": "true",
        "akash.network/namespace": lease_namespace(lease),
        "akash.network/manifest-service": service,
    }


def go_manifest(lease: LeaseID, services: list[Obj]) -> Obj:
    """``crd.NewManifest`` with ``manifest.labels()`` (at creation: resource version "")."""
    return {
        "apiVersion": "akash.network/v2beta2",
        "kind": "Manifest",
        "metadata": {
            "name": lease_namespace(lease),
            "namespace": "lease",
            "labels": go_labels(lease, "") | go_lease_labels(lease),
        },
        "spec": {
            "lease_id": {
                "owner": lease.owner,
                "dseq": str(lease.dseq),
                "gseq": lease.gseq,
                "oseq": lease.oseq,
                "provider": lease.provider,
            },
            "group": {"name": "dcloud", "services": services},
        },
    }


WEB_SERVICE: Obj = {
    "name": "web",
    "image": "nginx:1.27",
    "env": ["GREETING=hello"],
    "resources": {
        "id": 1,
        "cpu": {"units": 100},
        "gpu": {"units": 0},
        "memory": {"size": "134217728"},
        "storage": [{"name": "default", "size": "536870912"}],
    },
    "count": 1,
    "expose": [
        {
            "port": 80,
            "external_port": 80,
            "proto": "TCP",
            "global": True,
            "hosts": [SHOP],
            "http_options": HTTP_OPTIONS,
            "endpoint_sequence_number": 0,
        },
        {
            "port": 22,
            "external_port": 2222,
            "proto": "TCP",
            "global": True,
            "http_options": HTTP_OPTIONS,
            "endpoint_sequence_number": 0,
        },
        {
            "port": 53,
            "external_port": 53,
            "proto": "UDP",
            "global": True,
            "http_options": HTTP_OPTIONS,
            "endpoint_sequence_number": 0,
        },
    ],
}
DB_SERVICE: Obj = {
    "name": "db",
    "image": "postgres:16",
    "command": ["docker-entrypoint.sh"],
    "args": ["postgres"],
    "env": ["POSTGRES_PASSWORD=secret"],
    "resources": {
        "id": 1,
        "cpu": {"units": 500},
        "gpu": {"units": 0},
        "memory": {"size": "536870912"},
        "storage": [
            {"name": "default", "size": "1073741824"},
            {
                "name": "data",
                "size": "2147483648",
                "attributes": [
                    {"key": "class", "value": "beta2"},
                    {"key": "persistent", "value": "true"},
                ],
            },
        ],
    },
    "count": 1,
    "expose": [
        {
            "port": 5432,
            "proto": "TCP",
            "http_options": HTTP_OPTIONS,
            "endpoint_sequence_number": 0,
        }
    ],
    "params": {
        "storage": [{"name": "data", "mount": "/var/lib/postgresql/data", "readOnly": False}]
    },
}


def go_env(lease: LeaseID, sdl: list[tuple[str, str]]) -> list[Obj]:
    """The SDL's variables, then ``addEnvVarsForDeployment``'s."""
    return [{"name": k, "value": v} for k, v in sdl] + [
        {"name": "AKASH_GROUP_SEQUENCE", "value": str(lease.gseq)},
        {"name": "AKASH_DEPLOYMENT_SEQUENCE", "value": str(lease.dseq)},
        {"name": "AKASH_ORDER_SEQUENCE", "value": str(lease.oseq)},
        {"name": "AKASH_OWNER", "value": lease.owner},
        {"name": "AKASH_PROVIDER", "value": lease.provider},
        {"name": "AKASH_CLUSTER_PUBLIC_HOSTNAME", "value": PUBLIC},
    ]


FALSE_CONTEXT = {"runAsNonRoot": False, "privileged": False, "allowPrivilegeEscalation": False}


def go_pod(lease: LeaseID, version: str, container: Obj, storage_classes: list[str]) -> Obj:
    """The pod template of ``deployment.Create`` / ``statefulSet.Create``."""
    expressions = [{"key": "akash.network", "operator": "In", "values": ["true"]}]
    expressions += [
        {"key": f"akash.network/capabilities.storage.class.{c}", "operator": "Gt", "values": ["0"]}
        for c in storage_classes
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": expressions}]
            }
        }
    }
    labels = go_labels(lease, version) | {"akash.network/manifest-service": container["name"]}
    return {
        "metadata": {"labels": labels},
        "spec": {
            "affinity": affinity,
            "securityContext": {"runAsNonRoot": False},
            "automountServiceAccountToken": False,
            "containers": [container],
        },
    }


def go_web_deployment(version: str) -> Obj:
    container = {
        "name": "web",
        "image": "nginx:1.27",
        "ports": [{"containerPort": 80}, {"containerPort": 22}, {"containerPort": 53}],
        "env": go_env(WEB, [("GREETING", "hello")]),
        "resources": {
            "limits": {"cpu": "100m", "ephemeral-storage": "536870912", "memory": "134217728"},
            "requests": {"cpu": "100m", "ephemeral-storage": "536870912", "memory": "134217728"},
        },
        "imagePullPolicy": "IfNotPresent",
        "securityContext": FALSE_CONTEXT,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "labels": go_labels(WEB, version) | {"akash.network/manifest-service": "web"},
        },
        "spec": {
            "selector": {"matchLabels": go_selector(WEB, "web")},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
            },
            "revisionHistoryLimit": 10,
            "replicas": 1,
            "template": go_pod(WEB, version, container, []),
        },
    }


def go_db_statefulset(version: str) -> Obj:
    container = {
        "name": "db",
        "image": "postgres:16",
        "command": ["docker-entrypoint.sh"],
        "args": ["postgres"],
        "ports": [{"containerPort": 5432}],
        "env": go_env(DB, [("POSTGRES_PASSWORD", "secret")]),
        "resources": {
            "limits": {"cpu": "500m", "ephemeral-storage": "1073741824", "memory": "536870912"},
            "requests": {"cpu": "500m", "ephemeral-storage": "1073741824", "memory": "536870912"},
        },
        "volumeMounts": [{"name": "db-data", "mountPath": "/var/lib/postgresql/data"}],
        "imagePullPolicy": "IfNotPresent",
        "securityContext": FALSE_CONTEXT,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": "db",
            "labels": go_labels(DB, version) | {"akash.network/manifest-service": "db"},
        },
        "spec": {
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"partition": 0, "maxUnavailable": 1},
            },
            "selector": {"matchLabels": go_selector(DB, "db")},
            "serviceName": "",  # Go sets none: its client sends the empty string
            "revisionHistoryLimit": 1,
            "replicas": 1,
            "template": go_pod(DB, version, container, ["beta2"]),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "db-data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "2147483648"}},
                        "volumeMode": "Filesystem",
                        "storageClassName": "beta2",
                    },
                }
            ],
        },
    }


def go_service(lease: LeaseID, version: str, name: str, service: str, ports: list[Obj]) -> Obj:
    """``service.Create``: ``<svc>`` (ClusterIP) or ``<svc>-np`` (NodePort)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "labels": go_labels(lease, version) | {"akash.network/manifest-service": service},
        },
        "spec": {
            "type": "NodePort" if name.endswith("-np") else "ClusterIP",
            "selector": go_selector(lease, service),
            "ports": ports,
        },
    }


def go_provider_host(lease: LeaseID, host: str, service: str, port: int) -> Obj:
    """``DeclareHostname``."""
    return {
        "apiVersion": "akash.network/v2beta2",
        "kind": "ProviderHost",
        "metadata": {
            "name": host,
            "labels": go_lease_labels(lease),
            "annotations": {"akash.network/lease.updated_at": "2026-11-20T08:00:00Z"},
        },
        "spec": {
            "owner": lease.owner,
            "provider": lease.provider,
            "hostname": host,
            "dseq": lease.dseq,
            "gseq": lease.gseq,
            "oseq": lease.oseq,
            "service_name": service,
            "external_port": port,
        },
    }


def go_ingress(lease: LeaseID, host: str, service: str, port: int) -> Obj:
    """The Go hostname operator's ``ConnectHostnameToDeployment`` (ingress mode)."""
    root = "nginx.ingress.kubernetes.io"
    backend = {"service": {"name": service, "port": {"number": port}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": host,
            "labels": go_lease_labels(lease),
            "annotations": {
                f"{root}/proxy-read-timeout": "60",
                f"{root}/proxy-send-timeout": "60",
                f"{root}/proxy-next-upstream-tries": "3",
                f"{root}/proxy-body-size": "1048576",
                f"{root}/proxy-next-upstream-timeout": "0",
                f"{root}/proxy-next-upstream": "error timeout",
            },
        },
        "spec": {
            "ingressClassName": "akash-ingress-class",
            "rules": [
                {
                    "host": host,
                    "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
                }
            ],
        },
    }


def run_go_provider(api: ApiClient) -> None:
    """What the Go provider's deploy and hostname operator leave in the cluster."""
    core, apps, custom = CoreV1Api(api), AppsV1Api(api), CustomObjectsApi(api)
    net = NetworkingV1Api(api)
    for lease, service in ((WEB, WEB_SERVICE), (DB, DB_SERVICE)):
        ns = lease_namespace(lease)
        made = custom.create_namespaced_custom_object(
            "akash.network", "v2beta2", "lease", "manifests", go_manifest(lease, [service])
        )
        version = made["metadata"]["resourceVersion"]  # Deploy: SetResourceVersion
        namespace = {"metadata": {"name": ns, "labels": go_labels(lease, version)}}
        namespace["metadata"]["labels"] |= go_lease_labels(lease)
        core.create_namespace(namespace)
        if lease == WEB:
            apps.create_namespaced_deployment(ns, go_web_deployment(version))
            port = {"name": "0-80", "port": 80, "targetPort": 80, "protocol": "TCP"}
            core.create_namespaced_service(ns, go_service(WEB, version, "web", "web", [port]))
            node_ports = [
                {"name": "1-2222", "port": 2222, "targetPort": 22, "protocol": "TCP"},
                {"name": "2-53", "port": 53, "targetPort": 53, "protocol": "UDP"},
            ]
            core.create_namespaced_service(
                ns, go_service(WEB, version, "web-np", "web", node_ports)
            )
            for host in (SHOP, GENERATED):
                custom.create_namespaced_custom_object(
                    "akash.network",
                    "v2beta2",
                    "lease",
                    "providerhosts",
                    go_provider_host(WEB, host, "web", 80),
                )
                net.create_namespaced_ingress(ns, go_ingress(WEB, host, "web", 80))
        else:
            apps.create_namespaced_stateful_set(ns, go_db_statefulset(version))
            port = {"name": "0-5432", "port": 5432, "targetPort": 5432, "protocol": "TCP"}
            core.create_namespaced_service(ns, go_service(DB, version, "db", "db", [port]))


# -- looking at the cluster --------------------------------------------------------------------
def pods(api: ApiClient) -> dict[str, str]:
    """Every lease pod's name → uid."""
    found = {}
    for lease in (WEB, DB):
        for pod in CoreV1Api(api).list_namespaced_pod(lease_namespace(lease)).items:
            found[pod.metadata.name] = pod.metadata.uid
    return found


def ready(api: ApiClient) -> bool:
    items = [
        pod
        for lease in (WEB, DB)
        for pod in CoreV1Api(api).list_namespaced_pod(lease_namespace(lease)).items
    ]
    return len(items) == 2 and all(
        all(c.ready for c in pod.status.container_statuses or [False]) for pod in items
    )


def workload(api: ApiClient, lease: LeaseID) -> Obj:
    apps, ns = AppsV1Api(api), lease_namespace(lease)
    if lease == WEB:
        response = apps.read_namespaced_deployment("web", ns, _preload_content=False)
    else:
        response = apps.read_namespaced_stateful_set("db", ns, _preload_content=False)
    body: Obj = json.loads(response.data)
    return body


def provider_hosts(api: ApiClient) -> set[str]:
    found = CustomObjectsApi(api).list_namespaced_custom_object(
        "akash.network", "v2beta2", "lease", "providerhosts"
    )
    return {item["metadata"]["name"] for item in found["items"]}


# -- the cluster's side ------------------------------------------------------------------------
@pytest.fixture
def api(kubesim_kubeconfig: Path) -> Iterator[ApiClient]:
    client: ApiClient = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubesim_kubeconfig)
    )
    yield client
    client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
async def kube(kubesim_kubeconfig: Path) -> AsyncIterator[KubeDeployments]:
    backend = KubeDeployments.from_kubeconfig(kubesim_kubeconfig, request_timeout_s=5.0)
    await backend.install(crds())  # Akash's CRDs, as the Go provider's chart installs them
    yield backend
    backend.close()


@pytest.fixture
async def bus(redis_url: str) -> AsyncIterator[Bus]:
    made = Bus.connect(RedisSettings(url=redis_url), producer="cluster", settings=FAST_SETTINGS)
    yield made
    await made.close()


class Cluster:
    """The cluster's deployment managers in this process: recovery, the worker, and the
    handlers of lease status, manifest and closing (as ``akcluster.service`` wires them)."""

    def __init__(self, bus: Bus, kube: KubeDeployments) -> None:
        self.bus = bus
        reservations = Reservations(bus, lambda: None, levels=CommitLevels(), node_ports=100, ips=0)
        self.deployments = Deployments(
            bus,
            kube,
            reservations,
            build=BuildSettings(public_hostname=PUBLIC, manifest_namespace="lease"),
            levels=CommitLevels(),
            monitor=MonitorPolicy(retry_period=0.2, healthcheck_period=0.2),
        )
        self.stopping = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []
        self.subscribers: list[Subscriber] = []

    async def start(self) -> dict[str, int]:
        counts = await self.deployments.recover()
        commands = self.bus.subscriber(CLUSTER_COMMANDS, group="cluster", consumer="c0")
        commands.add(GetLeaseStatus, self.deployments.lease_status)
        commands.add(GetLeaseManifest, self.deployments.lease_manifest)
        chain = self.bus.subscriber(CHAIN_EVENTS, group="cluster", consumer="c0")
        chain.add(LeaseClosed, self.deployments.on_lease_closed)
        self.subscribers = [commands, chain]
        self.tasks = [asyncio.create_task(s.run()) for s in self.subscribers]
        self.tasks.append(asyncio.create_task(self.deployments.run(self.stopping, poll_s=0.05)))
        return counts

    async def stop(self) -> None:
        self.stopping.set()
        for subscriber in self.subscribers:
            await subscriber.stop()
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def deployed(self, lease: LeaseID) -> bool:
        record = await self.deployments.record(lease)
        return record is not None and record.state == "deployed"


async def test_go_leases_are_adopted_in_place_and_then_run_as_ours(
    api: ApiClient, kube: KubeDeployments, bus: Bus, exec_sandbox: None
) -> None:
    await asyncio.to_thread(run_go_provider, api)
    await eventually(lambda: asyncio.to_thread(ready, api), what="Go's pods running")
    before = await asyncio.to_thread(pods, api)
    generations = {
        lease: (await asyncio.to_thread(workload, api, lease))["metadata"]["generation"]
        for lease in (WEB, DB)
    }
    assert await bus.backend.get(f"akcluster:lease:{WEB}") is None  # an empty Redis

    cluster = Cluster(bus, kube)
    counts = await cluster.start()
    try:
        assert counts["adopted"] == 2
        for lease in (WEB, DB):
            await eventually(lambda lease=lease: cluster.deployed(lease), what=f"{lease} adopted")

        # no pod was replaced: the templates were not written
        assert await asyncio.to_thread(pods, api) == before
        for lease in (WEB, DB):
            taken = await asyncio.to_thread(workload, api, lease)
            assert taken["metadata"]["generation"] == generations[lease]
            labels = taken["metadata"]["labels"]  # taken over: ours beside the selector
            assert labels["akash.network/service-target"] == "true"
            assert labels["akash.network/lease.id.dseq"] == str(lease.dseq)

        # the records: Go's generated hostname kept as Go named it, the accepted one too
        web = await cluster.deployments.record(WEB)
        assert web is not None
        assert web.adopted_hosts == {GENERATED: "web"}
        assert sorted(web.hosts) == sorted([SHOP, GENERATED])
        assert await asyncio.to_thread(provider_hosts, api) == {SHOP, GENERATED}

        # status and manifest, as the gateway asks for them
        status = await bus.request(
            CLUSTER_COMMANDS, GetLeaseStatus(lease_id=WEB), LeaseStatusReport
        )
        assert status.services["web"].available == 1
        assert sorted(status.services["web"].uris or []) == sorted([SHOP, GENERATED])
        assert sorted(p.port for p in status.forwarded_ports["web"]) == [22, 53]
        db_status = await bus.request(
            CLUSTER_COMMANDS, GetLeaseStatus(lease_id=DB), LeaseStatusReport
        )
        assert db_status.services["db"].available == 1
        manifest = await bus.request(
            CLUSTER_COMMANDS, GetLeaseManifest(lease_id=DB), LeaseManifestReport
        )
        assert [s.name for s in manifest.group.services or ()] == ["db"]

        # the gateway finds the pods of each service, reads their logs, opens a shell
        async with LeaseCluster(api) as gateway_side:
            (pod,) = await gateway_side.pods(DB, ["db"])
            assert pod.name in before
            lines = [line async for line in gateway_side.logs(pod, follow=False, tail=5)]
            assert lines
            (web_pod,) = await gateway_side.pods(WEB, ["web"])
            session = await gateway_side.execute(
                web_pod, ["echo", "adopted"], tty=False, stdin=False
            )
            out = b"".join([data async for channel, data in session.output() if channel == 1])
            await session.close()
            assert (out.strip(), session.exit_code) == (b"adopted", 0)

        # teardown of an adopted lease
        closed = LeaseClosed(lease_id=DB, reason=LeaseClosedReason.OWNER, height=500, event_index=0)
        await bus.publish(CHAIN_EVENTS, closed)

        async def gone() -> bool:
            record = await cluster.deployments.record(DB)
            return record is not None and record.state == "closed"

        await eventually(gone, what="the adopted db lease torn down")
        namespaces = await asyncio.to_thread(CoreV1Api(api).list_namespace)
        live = {n.metadata.name for n in namespaces.items if n.metadata.deletion_timestamp is None}
        assert lease_namespace(DB) not in live and lease_namespace(WEB) in live
        assert await kube.manifest(DB) is None
    finally:
        await cluster.stop()

    # started again: nothing to write, the adopted lease stays as it is
    again = Cluster(bus, kube)
    counts = await again.start()
    try:
        assert counts["unchanged"] == 1 and counts["reapplied"] == 0 and counts["adopted"] == 0
        web_pods = {k: v for k, v in before.items() if k.startswith("web-")}
        now = await asyncio.to_thread(pods, api)
        assert {k: v for k, v in now.items() if k.startswith("web-")} == web_pods
    finally:
        await again.stop()


# -- a lease with a leased IP ------------------------------------------------------------------
VPN = LeaseID(owner=address(33), dseq=103, gseq=1, oseq=1, provider=address(30))
GO_KEY = f"{VPN.owner}-ip-myip"  # clusterutil.MakeIPSharingKey: <owner>-ip-<endpoint>
ADDRESS = "203.0.113.20"  # what MetalLB gave Go's Services
VPN_SERVICE: Obj = {
    "name": "vpn",
    "image": "kylemanna/openvpn:2.4",
    "resources": {
        "id": 1,
        "cpu": {"units": 100},
        "gpu": {"units": 0},
        "memory": {"size": "134217728"},
        "storage": [{"name": "default", "size": "536870912"}],
    },  # no endpoints: Go's CRD derives them from the exposes
    "count": 1,
    "expose": [
        {
            "port": 8443,
            "external_port": 443,
            "proto": "TCP",
            "global": True,
            "ip": "myip",
            "http_options": HTTP_OPTIONS,
            "endpoint_sequence_number": 1,
        },
        {
            "port": 1194,
            "proto": "UDP",
            "global": True,
            "ip": "myip",
            "http_options": HTTP_OPTIONS,
            "endpoint_sequence_number": 1,
        },
    ],
}
GO_IPS = {f"{GO_KEY}-tcp-443": (8443, 443, "TCP"), f"{GO_KEY}-udp-1194": (1194, 1194, "UDP")}
GO_BALANCERS = {"vpn-ip-443-tcp", "vpn-ip-1194-udp"}


def go_vpn_deployment(version: str) -> Obj:
    deployment = go_web_deployment(version)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container.update(
        name="vpn",
        image="kylemanna/openvpn:2.4",
        ports=[{"containerPort": 8443}, {"containerPort": 1194}],
        env=go_env(VPN, []),
    )
    deployment["metadata"].update(
        name="vpn", labels=go_labels(VPN, version) | {"akash.network/manifest-service": "vpn"}
    )
    deployment["spec"]["selector"] = {"matchLabels": go_selector(VPN, "vpn")}
    template = deployment["spec"]["template"]
    template["metadata"]["labels"] = deployment["metadata"]["labels"]
    return deployment


def go_leased_ip(name: str, port: int, external: int, proto: str) -> Obj:
    """``DeclareIP``: named ``<sharing key>-<proto>-<external port>``, lower-cased."""
    labels = go_lease_labels(VPN) | {
        "service-name": "vpn",
        "external-port": str(external),
        "proto": proto,
    }
    return {
        "apiVersion": "akash.network/v2beta2",
        "kind": "ProviderLeasedIP",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "lease_id": {
                "owner": VPN.owner,
                "dseq": str(VPN.dseq),
                "gseq": VPN.gseq,
                "oseq": VPN.oseq,
                "provider": VPN.provider,
            },
            "service_name": "vpn",
            "port": port,
            "external_port": external,
            "sharing_key": GO_KEY,
            "protocol": proto,
        },
    }


def go_balancer(port: int, external: int, proto: str) -> Obj:
    """Go's IP operator's ``CreateIPPassthrough``: ``<svc>-ip-<external port>-<proto>``, the
    port named as the Service; ``--metal-lb-pool`` unset, as Akash's chart runs it, which
    writes an empty pool annotation."""
    name = f"vpn-ip-{external}-{proto.lower()}"
    labels = go_lease_labels(VPN) | {"akash.network/service-target": "metal-lb"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "metallb.universe.tf/allow-shared-ip": GO_KEY,
                "metallb.universe.tf/address-pool": "",
            },
        },
        "spec": {
            "type": "LoadBalancer",
            "selector": {"akash.network": "true", "akash.network/manifest-service": "vpn"},
            "ports": [{"name": name, "port": external, "targetPort": port, "protocol": proto}],
        },
    }


def run_go_vpn(api: ApiClient) -> None:
    """The leased-IP lease as Go's deploy, Go's IP operator and MetalLB leave it."""
    core, apps, custom = CoreV1Api(api), AppsV1Api(api), CustomObjectsApi(api)
    ns = lease_namespace(VPN)
    made = custom.create_namespaced_custom_object(
        "akash.network", "v2beta2", "lease", "manifests", go_manifest(VPN, [VPN_SERVICE])
    )
    version = made["metadata"]["resourceVersion"]
    labels = go_labels(VPN, version) | go_lease_labels(VPN)
    core.create_namespace({"metadata": {"name": ns, "labels": labels}})
    apps.create_namespaced_deployment(ns, go_vpn_deployment(version))
    node_ports = [  # every global expose that is not HTTP: the leased-IP ones too
        {"name": "0-443", "port": 443, "targetPort": 8443, "protocol": "TCP"},
        {"name": "1-1194", "port": 1194, "targetPort": 1194, "protocol": "UDP"},
    ]
    core.create_namespaced_service(ns, go_service(VPN, version, "vpn-np", "vpn", node_ports))
    for name, (port, external, proto) in GO_IPS.items():
        custom.create_namespaced_custom_object(
            "akash.network", "v2beta2", "lease", "providerleasedips",
            go_leased_ip(name, port, external, proto),
        )  # fmt: skip
        balancer = core.create_namespaced_service(ns, go_balancer(port, external, proto))
        balancer.status = {"loadBalancer": {"ingress": [{"ip": ADDRESS}]}}  # MetalLB's
        core.replace_namespaced_service_status(balancer.metadata.name, ns, balancer)


def balancers(api: ApiClient) -> dict[str, Obj]:
    """The LoadBalancer Services of every namespace, by name."""
    items = CoreV1Api(api).list_service_for_all_namespaces().items
    found = api.sanitize_for_serialization(items)
    return {s["metadata"]["name"]: s for s in found if s["spec"]["type"] == "LoadBalancer"}


def leased_ips(api: ApiClient) -> dict[str, Obj]:
    found = CustomObjectsApi(api).list_namespaced_custom_object(
        "akash.network", "v2beta2", "lease", "providerleasedips"
    )
    return {item["metadata"]["name"]: item for item in found["items"]}


@pytest.fixture
def ip_operator(
    kubesim_kubeconfig: Path, redis_url: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """Our IP operator, started by the test once Go's objects are there."""
    process = OperatorProcess(
        "ip",
        redis_url=redis_url,
        log_path=tmp_path / "ip-operator.log",
        kubeconfig=kubesim_kubeconfig,
        env={"AP_IP_POOL": "203.0.113.20-203.0.113.21", "AP_IP_RETRY": "500ms"},
    )
    yield process
    process.stop()


async def test_a_go_lease_keeps_its_leased_ip_services_and_address(
    api: ApiClient, kube: KubeDeployments, bus: Bus, ip_operator: OperatorProcess
) -> None:
    await asyncio.to_thread(run_go_vpn, api)
    before = await asyncio.to_thread(balancers, api)
    assert set(before) == GO_BALANCERS

    await asyncio.to_thread(ip_operator.start)
    cluster = Cluster(bus, kube)
    counts = await cluster.start()
    try:
        assert counts["adopted"] == 1
        await eventually(lambda: cluster.deployed(VPN), what="the vpn lease adopted")
        record = await cluster.deployments.record(VPN)
        assert record is not None and record.adopted_endpoints == ["myip"]

        def exposed() -> bool:
            found = leased_ips(api)
            states = {n: o.get("status", {}).get("state") for n, o in found.items()}
            return states == dict.fromkeys(GO_IPS, "exposed")

        await eventually(lambda: asyncio.to_thread(exposed), what="Go's leased IPs exposed")
        # Go's ProviderLeasedIPs are the lease's own: kept, none of ours beside them
        for name, obj in (await asyncio.to_thread(leased_ips, api)).items():
            assert obj["spec"]["sharing_key"] == GO_KEY
            spec = obj["spec"]
            assert (spec["port"], spec["external_port"], spec["protocol"]) == GO_IPS[name]
            assert obj["metadata"]["labels"]["service-name"] == "vpn"  # Go's labels stay

        # Go's Services, the same objects with the same spec and address, and no other
        after = await asyncio.to_thread(balancers, api)
        assert set(after) == GO_BALANCERS
        for name, service in after.items():
            was = before[name]
            assert service["metadata"]["uid"] == was["metadata"]["uid"]
            assert service["spec"]["ports"] == was["spec"]["ports"]
            assert service["spec"]["selector"] == was["spec"]["selector"]
            assert service["status"]["loadBalancer"]["ingress"] == [{"ip": ADDRESS}]
            annotations = service["metadata"]["annotations"]
            assert annotations["metallb.universe.tf/allow-shared-ip"] == GO_KEY
            assert annotations["metallb.universe.tf/address-pool"] == ""

        # the pool counts the address Go's Services hold
        status, pool = http_status(f"{ip_operator.health_url}/v1/pool")
        assert status == 200 and isinstance(pool, dict)
        assert (pool["in_use"], pool["sharing_keys"]) == (1, [GO_KEY])

        # the lease status reports the address on both ports
        report = await bus.request(
            CLUSTER_COMMANDS, GetLeaseStatus(lease_id=VPN), LeaseStatusReport
        )
        ips = {(i.port, i.external_port, i.protocol, i.ip) for i in report.ips["vpn"]}
        assert ips == {(8443, 443, "TCP", ADDRESS), (1194, 1194, "UDP", ADDRESS)}

        # started again: Go's names are the lease's own, nothing to write
        await cluster.stop()
        cluster = Cluster(bus, kube)
        counts = await cluster.start()
        assert (counts["unchanged"], counts["reapplied"], counts["adopted"]) == (1, 0, 0)
        assert set(await asyncio.to_thread(leased_ips, api)) == set(GO_IPS)

        # teardown removes Go's ProviderLeasedIPs and Services, and frees the address
        closed = LeaseClosed(
            lease_id=VPN, reason=LeaseClosedReason.OWNER, height=600, event_index=0
        )
        await bus.publish(CHAIN_EVENTS, closed)

        async def gone() -> bool:
            record = await cluster.deployments.record(VPN)
            if record is None or record.state != "closed":
                return False
            left = await asyncio.to_thread(leased_ips, api)
            return not left and not await asyncio.to_thread(balancers, api)

        await eventually(gone, what="the vpn lease torn down, its leased IPs gone")

        def freed() -> bool:
            status, pool = http_status(f"{ip_operator.health_url}/v1/pool")
            return status == 200 and isinstance(pool, dict) and pool["in_use"] == 0

        await eventually(lambda: asyncio.to_thread(freed), what="the address free again")
    finally:
        await cluster.stop()
