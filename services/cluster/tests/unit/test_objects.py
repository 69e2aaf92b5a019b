"""The builders of a lease's Kubernetes objects, one rule of Akash's at a time.

One SDL exercises them all: ``web`` (two replicas, HTTP ingress with proxy settings, DNS over
UDP and TCP, registry credentials, read permissions), ``db`` (a persistent volume and a ram
volume, a leased IP) and ``gpu`` (two GPUs of one of two models, TEE). The expected values
are Akash's, from the Go provider's ``cluster/kube/builder``.
"""

from __future__ import annotations

import base64
import json
import uuid
from decimal import Decimal
from textwrap import dedent
from typing import Any

import pytest

from akcluster.domain.objects import (
    BuildSettings,
    SchedulerParams,
    crds,
    group_from_manifest_object,
    lease_labels,
    lease_objects,
    manifest_object,
    provider_host_objects,
    scheduler_params,
    scheduler_params_from_manifest_object,
    stale_objects,
)
from akcluster.domain.objects.base import cpu_quantity, decimal_quantity
from akcluster.domain.placement import CommitLevels
from akoperators.domain.hosts import http_options, ingress, route_of
from aktypes.attributes import Attribute
from aktypes.events import ResourceOffer
from aktypes.ids import LeaseID
from aktypes.manifest import Group, HTTPOptions
from aktypes.namespace import lease_namespace
from aktypes.resources import GPU
from aktypes.sdl import parse_sdl
from aktypes.testing import address

SDL = dedent(
    """\
    version: "2.1"
    services:
      web:
        image: nginx:1.25
        env: [GREETING=hello, EMPTY, AKASH_CLUSTER_PUBLIC_HOSTNAME=mine.example.com]
        credentials: {host: registry.example.com, email: me@example.com, username: me, password: "p&ss"}
        params:
          permissions: {read: [logs, events]}
        expose:
          - port: 8080
            as: 80
            accept: [www.example.com, shop.example.com]
            http_options:
              read_timeout: 1500
              send_timeout: 30000
              next_timeout: 2001
              next_cases: ["error", "502"]
              proxy_buffer_size: 65536
            to: [{global: true}]
          - {port: 53, proto: udp, to: [{global: true}]}
          - {port: 53, proto: tcp, to: [{global: true}]}
          - {port: 9000, to: [{service: db}, {service: gpu}]}
      db:
        image: postgres:16
        params:
          storage:
            data: {mount: /var/lib/postgresql/data}
            shm: {mount: /run/cache}
        expose:
          - {port: 5432, to: [{service: web}]}
          - {port: 5432, as: 15432, to: [{global: true, ip: myip}]}
      gpu:
        image: vllm/vllm-openai:v0.6
        args: [--model, llama]
        params: {tee: cpu-gpu}
        expose:
          - {port: 8000, as: 80, accept: [llm.example.com], to: [{global: true}]}
    profiles:
      compute:
        web:
          resources: {cpu: {units: 1}, memory: {size: 1Gi}, storage: {size: 2Gi}}
        db:
          resources:
            cpu: {units: 0.5}
            memory: {size: 512Mi}
            storage:
              - size: 1Gi
              - {name: data, size: 10Gi, attributes: {persistent: true, class: beta2}}
              - {name: shm, size: 256Mi, attributes: {class: ram}}
        gpu:
          resources:
            cpu: {units: 4}
            memory: {size: 16Gi}
            storage: {size: 20Gi}
            gpu:
              units: 2
              attributes:
                vendor:
                  nvidia: [{model: a100, ram: 80Gi, interface: sxm}, {model: h100}]
      placement:
        dc:
          pricing:
            web: {denom: uakt, amount: 100}
            db: {denom: uakt, amount: 100}
            gpu: {denom: uakt, amount: 1000}
    deployment:
      web: {dc: {profile: web, count: 2}}
      db: {dc: {profile: db, count: 1}}
      gpu: {dc: {profile: gpu, count: 1}}
    endpoints:
      myip: {kind: ip}
    """
)
PARSED = parse_sdl(SDL)
GROUP = PARSED.manifest.groups[0]
SPEC = PARSED.groups[0]
LEASE = LeaseID(owner=address(1), dseq=77, gseq=2, oseq=3, provider=address(2))
NS = lease_namespace(LEASE)
SETTINGS = BuildSettings(
    public_hostname="provider.example.com",
    pull_secret="cluster-pull",
    runtime_class="gvisor",
    api_server_endpoints=(("10.0.0.1", 6443), ("fd00::1", 6443)),
)
LEVELS = CommitLevels(cpu=Decimal(100), memory=Decimal(100), storage=Decimal(100))
GPU_KEY = "vendor/nvidia/model/a100/ram/80Gi/interface/sxm"
Obj = dict[str, Any]


def allocated(key: str = GPU_KEY) -> list[ResourceOffer]:
    """The reservation: the GPU unit got a concrete model."""
    offers = []
    for unit in SPEC.resources:
        resources = unit.resource
        if resources.gpu is not None and resources.gpu_units:
            gpu = GPU(units=resources.gpu.units, attributes=[Attribute(key=key, value="true")])
            resources = resources.model_copy(update={"gpu": gpu})
        offers.append(ResourceOffer(resources=resources, count=unit.count))
    return offers


def build(
    group: Group = GROUP,
    settings: BuildSettings = SETTINGS,
    levels: CommitLevels = LEVELS,
    params: dict[str, SchedulerParams] | None = None,
    **kwargs: Any,
) -> list[Obj]:
    if params is None:
        params = scheduler_params(group, allocated())
    return lease_objects(
        LEASE, group, "f" * 64, settings=settings, levels=levels, params=params, **kwargs
    )


def ingresses(
    group: Group = GROUP,
    settings: BuildSettings = SETTINGS,
    withheld: tuple[str, ...] = (),
    ingress_class: str = "akash-ingress-class",
) -> list[Obj]:
    """The Ingresses the hostname operator makes of the lease's ProviderHosts, with the
    proxy settings of its Manifest resource (the cluster makes none itself)."""
    params = scheduler_params(group, allocated())
    manifest = manifest_object(LEASE, group, "f" * 64, settings=settings, params=params)
    found = []
    for host in provider_host_objects(LEASE, group, settings=settings, withheld=withheld):
        route = route_of(host["spec"], host["metadata"]["name"])
        found.append(
            ingress(
                route,
                http_options(manifest, route),
                ingress_class=ingress_class,
                lease_labels=host["metadata"]["labels"],
            )
        )
    return found


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def pod(objects: list[Obj], service: str) -> Obj:
    (found,) = [
        o
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet") and o["metadata"]["name"] == service
    ]
    spec: Obj = found["spec"]["template"]["spec"]
    return spec


def only_container(objects: list[Obj], service: str) -> Obj:
    (container,) = pod(objects, service)["containers"]
    return container


# -- namespace, labels, order ------------------------------------------------------------------
def test_namespace_is_akash_name_with_lease_labels() -> None:
    namespace = build(resource_version="4711")[0]
    assert namespace["kind"] == "Namespace"
    assert namespace["metadata"]["name"] == NS
    assert len(NS) == 45
    assert namespace["metadata"]["labels"] == {
        "akash.network": "true",
        "akash.network/namespace": NS,
        "akash.network/manifest.resource.version": "4711",
        "akash.network/lease.id.owner": address(1),
        "akash.network/lease.id.dseq": "77",
        "akash.network/lease.id.gseq": "2",
        "akash.network/lease.id.oseq": "3",
        "akash.network/lease.id.provider": address(2),
    }
    assert namespace["metadata"]["annotations"] == {"akash.network/manifest-version": "f" * 64}


def test_objects_come_in_akash_apply_order_and_carry_the_lease_labels() -> None:
    objects = build()
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Namespace", NS),
        ("NetworkPolicy", "akash-deployment-restrictions"),
        ("NetworkPolicy", "akash-db-np"),
        ("NetworkPolicy", "akash-db-ip"),
        ("NetworkPolicy", "akash-web-np"),
        ("NetworkPolicy", "akash-apiserver-web"),
        ("StatefulSet", "db"),
        ("Service", "db"),
        ("Service", "db-np"),
        ("Deployment", "gpu"),
        ("Service", "gpu"),
        ("ServiceAccount", "web"),
        ("Role", "web"),
        ("RoleBinding", "web"),
        ("Secret", "docker-creds-web"),
        ("Deployment", "web"),
        ("Service", "web"),
        ("Service", "web-np"),
    ]
    for obj in objects:
        assert obj["metadata"]["labels"].items() >= lease_labels(LEASE).items(), obj["kind"]
        assert obj["metadata"].get("namespace", NS) == NS
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet", "Service"):
            labels = obj["metadata"]["labels"]
            assert labels["akash.network/service-target"] == "true"
            assert labels["akash.network/manifest-service"] in ("web", "db", "gpu")


# -- workloads ---------------------------------------------------------------------------------
def test_persistent_volume_makes_a_statefulset_with_akash_claims() -> None:
    objects = build()
    db = find(objects, "StatefulSet", "db")["spec"]
    assert db["replicas"] == 1
    assert db["serviceName"] == ""
    assert db["revisionHistoryLimit"] == 1
    assert db["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0, "maxUnavailable": 1},
    }
    assert db["selector"] == {
        "matchLabels": {
            "akash.network": "true",
            "akash.network/namespace": NS,
            "akash.network/manifest-service": "db",
        }
    }
    assert db["volumeClaimTemplates"] == [
        {
            "metadata": {"name": "db-data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10737418240"}},
                "volumeMode": "Filesystem",
                "storageClassName": "beta2",
            },
        }
    ]
    spec = db["template"]["spec"]
    assert spec["volumes"] == [
        {"name": "db-shm", "emptyDir": {"medium": "Memory", "sizeLimit": "268435456"}}
    ]
    assert only_container(objects, "db")["volumeMounts"] == [
        {"name": "db-data", "mountPath": "/var/lib/postgresql/data"},
        {"name": "db-shm", "mountPath": "/run/cache"},
    ]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "akash.network", "operator": "In", "values": ["true"]},
        {
            "key": "akash.network/capabilities.storage.class.beta2",
            "operator": "Gt",
            "values": ["0"],
        },
    ]


def test_default_class_claims_name_no_storage_class() -> None:
    group = _edited(
        lambda g: g["services"][0]["resources"]["storage"][2]["attributes"][0].update(
            value="default"
        )
    )
    claim = find(build(group), "StatefulSet", "db")["spec"]["volumeClaimTemplates"][0]
    assert "storageClassName" not in claim["spec"]


def test_stateless_service_is_a_deployment_rolled_one_at_a_time() -> None:
    web = find(build(), "Deployment", "web")["spec"]
    assert web["replicas"] == 2
    assert web["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    }
    assert web["revisionHistoryLimit"] == 10
    assert web["template"]["metadata"]["labels"].items() >= web["selector"]["matchLabels"].items()


def test_requests_are_committed_and_limits_requested() -> None:
    objects = build()
    assert only_container(objects, "db")["resources"] == {
        "requests": {"cpu": "250m", "ephemeral-storage": "536870912", "memory": "268435456"},
        "limits": {
            "cpu": "500m",
            "ephemeral-storage": "1073741824",
            "memory": str(512 * 2**20 + 256 * 2**20),  # the ram volume is memory too
        },
    }
    gpu = only_container(objects, "gpu")["resources"]
    assert gpu["requests"]["nvidia.com/gpu"] == gpu["limits"]["nvidia.com/gpu"] == "2"
    assert (gpu["requests"]["cpu"], gpu["limits"]["cpu"]) == ("2", "4")
    plain = only_container(build(levels=CommitLevels()), "db")["resources"]
    assert plain["requests"] == {k: v for k, v in plain["limits"].items() if k != "memory"} | {
        "memory": "536870912"
    }


@pytest.mark.parametrize(
    ("value", "quantity"),
    [(0, "0"), (1500, "1500"), (2000, "2k"), (10**9, "1G"), (2**30, "1073741824")],
)
def test_quantities_are_canonical(value: int, quantity: str) -> None:
    assert decimal_quantity(value) == quantity


def test_cpu_quantities_are_canonical() -> None:
    assert [cpu_quantity(m) for m in (250, 1000, 1500, 16000)] == ["250m", "1", "1500m", "16"]


def test_gpu_pods_go_to_the_allocated_model_with_nvidia_runtime() -> None:
    spec = pod(build(), "gpu")
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    base = "akash.network/capabilities.gpu.vendor.nvidia.model.a100"
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "akash.network", "operator": "In", "values": ["true"]},
        {"key": base, "operator": "Gt", "values": ["0"]},
        {"key": f"{base}.ram.80Gi", "operator": "Gt", "values": ["0"]},
        {"key": f"{base}.interface.sxm", "operator": "Gt", "values": ["0"]},  # Go put 80Gi here
    ]
    assert spec["runtimeClassName"] == "nvidia"
    assert pod(build(), "web")["runtimeClassName"] == "gvisor"  # the configured one, elsewhere
    assert "runtimeClassName" not in pod(build(settings=BuildSettings(runtime_class="none")), "web")


def test_scheduler_params_come_from_the_allocation_else_the_sdl() -> None:
    assert scheduler_params(GROUP, allocated("vendor/nvidia/model/h100"))["gpu"] == SchedulerParams(
        runtime_class="nvidia", gpu_vendor="nvidia", gpu_model="h100"
    )
    assert scheduler_params(GROUP, allocated())["db"] == SchedulerParams()
    # two models allowed and no reservation: the vendor is known, the model is not
    unknown = scheduler_params(GROUP, [])["gpu"]
    assert unknown == SchedulerParams(runtime_class="nvidia", gpu_vendor="nvidia")
    expressions = pod(build(params={"gpu": unknown}), "gpu")["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"]
    assert [e["key"] for e in expressions] == ["akash.network"]
    amd = scheduler_params(GROUP, allocated("vendor/amd/model/mi210"))["gpu"]
    assert amd == SchedulerParams(gpu_vendor="amd", gpu_model="mi210")
    assert "amd.com/gpu" in only_container(build(params={"gpu": amd}), "gpu")["resources"]["limits"]


def test_container_env_adds_akash_variables_unless_the_sdl_sets_them() -> None:
    container = only_container(build(), "web")
    assert container["env"] == [
        {"name": "GREETING", "value": "hello"},
        {"name": "EMPTY"},
        {"name": "AKASH_CLUSTER_PUBLIC_HOSTNAME", "value": "mine.example.com"},
        {"name": "AKASH_GROUP_SEQUENCE", "value": "2"},
        {"name": "AKASH_DEPLOYMENT_SEQUENCE", "value": "77"},
        {"name": "AKASH_ORDER_SEQUENCE", "value": "3"},
        {"name": "AKASH_OWNER", "value": address(1)},
        {"name": "AKASH_PROVIDER", "value": address(2)},
    ]
    gpu_env = {e["name"]: e.get("value") for e in only_container(build(), "gpu")["env"]}
    assert gpu_env["AKASH_CLUSTER_PUBLIC_HOSTNAME"] == "provider.example.com"
    assert only_container(build(), "gpu")["args"] == ["--model", "llama"]


def test_containers_are_unprivileged_and_list_each_port_once() -> None:
    container = only_container(build(), "web")
    assert container["securityContext"] == {
        "runAsNonRoot": False,
        "privileged": False,
        "allowPrivilegeEscalation": False,
    }
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["ports"] == [
        {"containerPort": 53, "protocol": "TCP"},
        {"containerPort": 53, "protocol": "UDP"},
        {"containerPort": 8080, "protocol": "TCP"},
        {"containerPort": 9000, "protocol": "TCP"},
    ]
    assert pod(build(), "web")["securityContext"] == {"runAsNonRoot": False}


def test_credentials_become_a_docker_config_secret() -> None:
    objects = build()
    secret = find(objects, "Secret", "docker-creds-web")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    raw = base64.b64decode(secret["data"][".dockerconfigjson"])
    assert b"\\u0026" in raw  # Go's json.Marshal escapes '&'
    assert json.loads(raw) == {
        "auths": {
            "registry.example.com": {
                "username": "me",
                "password": "p&ss",
                "email": "me@example.com",
                "auth": base64.b64encode(b"me:p&ss").decode(),
            }
        }
    }
    assert pod(objects, "web")["imagePullSecrets"] == [{"name": "docker-creds-web"}]
    assert pod(objects, "db")["imagePullSecrets"] == [{"name": "cluster-pull"}]
    assert "imagePullSecrets" not in pod(build(settings=BuildSettings()), "db")


def test_read_permissions_get_a_service_account_role_and_binding() -> None:
    objects = build()
    role = find(objects, "Role", "web")
    assert [(r["apiGroups"], r["resources"], r["verbs"]) for r in role["rules"]] == [
        ([""], ["pods"], ["get", "list", "watch"]),
        ([""], ["pods/log"], ["get"]),
        (["apps"], ["deployments"], ["get", "list", "watch"]),
        ([""], ["events"], ["get", "list", "watch"]),
    ]
    binding = find(objects, "RoleBinding", "web")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "web",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "web", "namespace": NS}]
    assert (
        find(objects, "ServiceAccount", "web")["metadata"]["labels"][
            "akash.network/manifest-service"
        ]
        == "web"
    )
    web, db = pod(objects, "web"), pod(objects, "db")
    assert (web["automountServiceAccountToken"], web["serviceAccountName"]) == (True, "web")
    assert db["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in db


# -- network -----------------------------------------------------------------------------------
def test_global_ports_go_to_a_node_port_service_and_the_rest_to_cluster_ip() -> None:
    objects = build()
    web, web_np = find(objects, "Service", "web"), find(objects, "Service", "web-np")
    assert web["spec"]["type"] == "ClusterIP"
    assert web["spec"]["selector"] == {
        "akash.network": "true",
        "akash.network/namespace": NS,
        "akash.network/manifest-service": "web",
    }
    assert web["spec"]["ports"] == [  # the second 9000 (to gpu) is the same port
        {"name": "2-80", "port": 80, "targetPort": 8080, "protocol": "TCP"},
        {"name": "3-9000", "port": 9000, "targetPort": 9000, "protocol": "TCP"},
    ]
    assert web_np["spec"]["type"] == "NodePort"
    assert web_np["spec"]["ports"] == [  # Go kept only the first of these two
        {"name": "0-53", "port": 53, "targetPort": 53, "protocol": "TCP"},
        {"name": "1-53", "port": 53, "targetPort": 53, "protocol": "UDP"},
    ]
    assert find(objects, "Service", "db-np")["spec"]["ports"] == [
        {"name": "0-15432", "port": 15432, "targetPort": 5432, "protocol": "TCP"}
    ]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Service"].count("gpu-np") == 0


def test_network_policies_restrict_the_namespace_and_open_global_ports() -> None:
    objects = build()
    restrictions = find(objects, "NetworkPolicy", "akash-deployment-restrictions")["spec"]
    assert restrictions["policyTypes"] == ["Ingress", "Egress"]
    assert restrictions["egress"][-1] == {
        "to": [
            {
                "ipBlock": {
                    "cidr": "0.0.0.0/0",
                    "except": ["10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"],
                }
            }
        ]
    }
    assert find(objects, "NetworkPolicy", "akash-web-np")["spec"]["ingress"] == [
        {"ports": [{"protocol": "TCP", "port": 53}, {"protocol": "UDP", "port": 53}]}
    ]
    leased = find(objects, "NetworkPolicy", "akash-db-ip")["spec"]
    assert leased["ingress"] == [
        {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 5432}]}
    ]
    assert leased["podSelector"] == {"matchLabels": {"akash.network/manifest-service": "db"}}
    api = find(objects, "NetworkPolicy", "akash-apiserver-web")["spec"]
    assert api["egress"] == [
        {
            "to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}, {"ipBlock": {"cidr": "fd00::1/128"}}],
            "ports": [{"protocol": "TCP", "port": 6443}],
        }
    ]
    disabled = build(settings=BuildSettings(network_policies=False))
    assert [o for o in disabled if o["kind"] == "NetworkPolicy"] == []


def test_one_ingress_per_hostname_with_nginx_settings() -> None:
    objects = ingresses()
    www = find(objects, "Ingress", "www.example.com")
    assert www["spec"] == {
        "ingressClassName": "akash-ingress-class",
        "rules": [
            {
                "host": "www.example.com",
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": "web", "port": {"number": 80}}},
                        }
                    ]
                },
            }
        ],
    }
    nginx = "nginx.ingress.kubernetes.io"
    assert www["metadata"]["annotations"] == {
        f"{nginx}/proxy-read-timeout": "2",  # 1500 ms, rounded up
        f"{nginx}/proxy-send-timeout": "30",
        f"{nginx}/proxy-next-upstream-tries": "3",
        f"{nginx}/proxy-body-size": "1048576",
        f"{nginx}/proxy-next-upstream-timeout": "3",
        f"{nginx}/proxy-next-upstream": "error http_502",
        f"{nginx}/proxy-buffer-size": "65536",
    }
    assert (
        find(objects, "Ingress", "llm.example.com")["metadata"]["annotations"][
            f"{nginx}/proxy-next-upstream-timeout"
        ]
        == "0"
    )  # 0 turns it off
    withheld = ingresses(withheld=("WWW.example.com",), ingress_class="nginx")
    assert [o["metadata"]["name"] for o in withheld if o["kind"] == "Ingress"] == [
        "llm.example.com",
        "shop.example.com",
    ]
    assert find(withheld, "Ingress", "llm.example.com")["spec"]["ingressClassName"] == "nginx"


def test_exposes_without_options_get_the_hostname_operator_defaults() -> None:
    group = _edited(
        lambda g: g["services"][1]["expose"][0].update(httpOptions=HTTPOptions().go_dict())
    )
    annotations = find(ingresses(group), "Ingress", "llm.example.com")["metadata"]["annotations"]
    nginx = "nginx.ingress.kubernetes.io"
    assert annotations[f"{nginx}/proxy-read-timeout"] == "60"
    assert annotations[f"{nginx}/proxy-next-upstream-timeout"] == "60"
    assert annotations[f"{nginx}/proxy-body-size"] == "1048576"
    assert annotations[f"{nginx}/proxy-next-upstream"] == "error timeout"


def test_hostnames_are_lowercased() -> None:
    group = _edited(lambda g: g["services"][1]["expose"][0].update(hosts=["LLM.Example.com"]))
    (routed,) = [o for o in ingresses(group) if "llm" in o["metadata"]["name"]]
    assert routed["metadata"]["name"] == routed["spec"]["rules"][0]["host"] == "llm.example.com"
    hosts = provider_host_objects(LEASE, group, settings=SETTINGS)
    assert "llm.example.com" in [h["metadata"]["name"] for h in hosts]


def _generated(service: str, domain: str) -> str:
    """Go's ``IngressHost`` worked out here: UUIDv5 (DNS) of lease ID + service, base32hex."""
    uid = uuid.uuid5(uuid.NAMESPACE_DNS, f"{LEASE}{service}")
    return base64.b32hexencode(uid.bytes).decode().rstrip("=").lower() + "." + domain


def test_static_hosts_give_each_http_service_its_generated_host() -> None:
    static = BuildSettings(ingress_domain="ingress.example.net")
    web, gpu = _generated("web", "ingress.example.net"), _generated("gpu", "ingress.example.net")
    objects = ingresses(settings=static)
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "Ingress"]
    assert sorted(names) == sorted(
        [web, gpu, "www.example.com", "shop.example.com", "llm.example.com"]
    )
    rule = find(objects, "Ingress", web)["spec"]["rules"][0]
    assert rule["host"] == web
    assert rule["http"]["paths"][0]["backend"] == {
        "service": {"name": "web", "port": {"number": 80}}
    }
    annotations = find(objects, "Ingress", web)["metadata"]["annotations"]
    assert annotations == find(objects, "Ingress", "www.example.com")["metadata"]["annotations"]
    hosts = {
        h["metadata"]["name"]: h["spec"]
        for h in provider_host_objects(LEASE, GROUP, settings=static)
    }
    assert hosts[gpu]["service_name"] == "gpu" and hosts[gpu]["hostname"] == gpu
    assert hosts[gpu]["external_port"] == 80
    assert web in hosts and "db" not in {h["service_name"] for h in hosts.values()}  # no HTTP
    withheld = ingresses(settings=static, withheld=(gpu,))
    assert gpu not in [o["metadata"]["name"] for o in withheld if o["kind"] == "Ingress"]
    assert not [n for n in (o["metadata"]["name"] for o in ingresses()) if n in (web, gpu)]  # off


def _edited(change: Any) -> Group:
    data = GROUP.go_dict()
    change(data)
    return Group.model_validate_json(json.dumps(data))


# -- custom resources --------------------------------------------------------------------------
def test_manifest_resource_is_akash_shaped() -> None:
    params = scheduler_params(GROUP, allocated())
    obj = manifest_object(LEASE, GROUP, "ab" * 32, settings=SETTINGS, params=params)
    assert obj["apiVersion"] == "akash.network/v2beta2"
    assert obj["kind"] == "Manifest"
    assert obj["metadata"]["name"] == NS
    assert obj["metadata"]["namespace"] == "lease"
    assert obj["metadata"]["labels"] == lease_labels(LEASE)
    assert obj["metadata"]["annotations"]["akash.network/manifest-version"] == "ab" * 32
    assert obj["spec"]["lease_id"] == {
        "owner": address(1),
        "dseq": "77",
        "gseq": 2,
        "oseq": 3,
        "provider": address(2),
    }
    db, gpu, web = obj["spec"]["group"]["services"]
    assert db["resources"] == {
        "id": 1,
        "cpu": {"units": 500},
        "gpu": {"units": 0},
        "memory": {"size": "536870912"},
        "storage": [
            {
                "name": "shm",
                "size": "268435456",
                "attributes": [
                    {"key": "class", "value": "ram"},
                    {"key": "persistent", "value": "false"},
                ],
            },
            {"name": "default", "size": "1073741824"},
            {
                "name": "data",
                "size": "10737418240",
                "attributes": [
                    {"key": "class", "value": "beta2"},
                    {"key": "persistent", "value": "true"},
                ],
            },
        ],
    }
    assert db["expose"][0] == {
        "port": 5432,
        "external_port": 15432,
        "proto": "TCP",
        "global": True,
        "http_options": {
            "max_body_size": 1048576,
            "read_timeout": 60000,
            "send_timeout": 60000,
            "next_tries": 3,
            "next_cases": ["error", "timeout"],
        },
        "ip": "myip",
        "endpoint_sequence_number": db["expose"][0]["endpoint_sequence_number"],
    }
    assert db["scheduler_params"] == {"runtime_class": ""}
    assert gpu["scheduler_params"] == {
        "runtime_class": "nvidia",
        "resources": {
            "gpu": {"vendor": "nvidia", "model": "a100", "memory_size": "80Gi", "interface": "sxm"}
        },
    }
    assert web["params"] == {"permissions": {"read": ["logs", "events"]}}
    assert web["credentials"] == {
        "host": "registry.example.com",
        "email": "me@example.com",
        "username": "me",
        "password": "p&ss",
    }
    assert scheduler_params_from_manifest_object(obj) == params


def test_manifest_resource_round_trips_losslessly() -> None:
    _db, gpu, web = GROUP.services or []
    assert (web.expose or [])[2].http_options.proxy_buffer_size == 65536
    assert gpu.params is not None and gpu.params.tee is not None  # what Akash's CRD cannot hold
    obj = manifest_object(LEASE, GROUP, "ab" * 32, settings=SETTINGS)
    assert group_from_manifest_object(obj) == (LEASE, GROUP, "ab" * 32)
    assert group_from_manifest_object(json.loads(json.dumps(obj))) == (LEASE, GROUP, "ab" * 32)


def test_spec_alone_gives_the_group_less_what_akash_cannot_store() -> None:
    obj = manifest_object(LEASE, GROUP, "ab" * 32, settings=SETTINGS)
    del obj["metadata"]["annotations"]
    lease, group, version = group_from_manifest_object(obj)
    assert (lease, version) == (LEASE, "")
    expected = _edited(_drop_what_akash_loses)
    assert group == expected
    assert group != GROUP


def _drop_what_akash_loses(data: Any) -> None:
    for service in data["services"]:
        for expose in service["expose"]:
            expose["httpOptions"]["proxyBufferSize"] = 0
        if service["params"]:
            service["params"]["tee"] = None


def test_a_spec_rewritten_by_the_go_provider_wins_over_our_annotation() -> None:
    obj = manifest_object(LEASE, GROUP, "ab" * 32, settings=SETTINGS)
    obj["spec"]["group"]["services"][0]["image"] = "postgres:17"
    _, group, version = group_from_manifest_object(obj)
    assert (group.services or [])[0].image == "postgres:17"
    assert version == ""


def test_an_unreadable_annotation_falls_back_to_the_spec() -> None:
    obj = manifest_object(LEASE, GROUP, "ab" * 32, settings=SETTINGS)
    obj["metadata"]["annotations"]["akash.network/manifest-group"] = "{not json"
    _, group, version = group_from_manifest_object(obj)
    assert (group, version) == (_edited(_drop_what_akash_loses), "")


GO_WRITTEN = {
    "apiVersion": "akash.network/v2beta2",
    "kind": "Manifest",
    "metadata": {"name": NS, "namespace": "lease", "resourceVersion": "12"},
    "spec": {
        "lease_id": {
            "owner": address(1),
            "dseq": "77",
            "gseq": 2,
            "oseq": 3,
            "provider": address(2),
        },
        "group": {
            "name": "dc",
            "services": [
                {
                    "name": "app",
                    "image": "nginx",
                    "env": ["A=1"],
                    "resources": {
                        "id": 1,
                        "cpu": {"units": 100},
                        "gpu": {
                            "units": 1,
                            "attributes": [{"key": "vendor/nvidia/model/t4", "value": "true"}],
                        },
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
                            "hosts": ["a.example.com"],
                            "http_options": {
                                "max_body_size": 1048576,
                                "read_timeout": 60000,
                                "send_timeout": 60000,
                                "next_tries": 3,
                                "next_cases": ["error", "timeout"],
                            },
                            "endpoint_sequence_number": 0,
                        }
                    ],
                    "scheduler_params": {
                        "runtime_class": "nvidia",
                        "resources": {
                            "gpu": {
                                "vendor": "nvidia",
                                "model": "t4",
                                "memory_size": "",
                                "interface": "",
                            }
                        },
                    },
                }
            ],
        },
    },
}


def test_reads_a_manifest_resource_written_by_the_go_provider() -> None:
    lease, group, version = group_from_manifest_object(GO_WRITTEN)
    assert (lease, version) == (LEASE, "")
    (service,) = group.services or []
    assert (group.name, service.name, service.image, service.env) == ("dc", "app", "nginx", ["A=1"])
    assert (service.resources.cpu_millis, service.resources.memory_bytes) == (100, 2**27)
    assert service.resources.gpu_units == 1
    (expose,) = service.expose or []
    assert (expose.effective_external_port, expose.hosts, expose.is_ingress) == (
        80,
        ["a.example.com"],
        True,
    )
    assert expose.http_options.next_cases == ["error", "timeout"]
    assert [e.kind for e in service.resources.endpoints or ()] == [0]
    assert service.params is None and service.credentials is None
    assert scheduler_params_from_manifest_object(GO_WRITTEN) == {
        "app": SchedulerParams(runtime_class="nvidia", gpu_vendor="nvidia", gpu_model="t4")
    }
    # and it builds: the stored params place the pods
    objects = build(group, params=scheduler_params_from_manifest_object(GO_WRITTEN))
    assert pod(objects, "app")["runtimeClassName"] == "nvidia"


def test_a_manifest_resource_without_a_lease_is_refused() -> None:
    with pytest.raises(ValueError, match="owner"):
        group_from_manifest_object(
            {
                "spec": {
                    "lease_id": {
                        "owner": "nobody",
                        "dseq": "1",
                        "gseq": 1,
                        "oseq": 1,
                        "provider": address(2),
                    }
                }
            }
        )


def test_provider_hosts_name_each_hostname_and_its_service() -> None:
    hosts = provider_host_objects(LEASE, GROUP, settings=SETTINGS, withheld=["shop.example.com"])
    assert [h["metadata"]["name"] for h in hosts] == ["llm.example.com", "www.example.com"]
    (www,) = [h for h in hosts if h["metadata"]["name"] == "www.example.com"]
    assert www["apiVersion"] == "akash.network/v2beta2"
    assert www["kind"] == "ProviderHost"
    assert www["metadata"]["namespace"] == "lease"
    assert www["metadata"]["labels"] == lease_labels(LEASE)
    assert www["spec"] == {
        "owner": address(1),
        "provider": address(2),
        "hostname": "www.example.com",
        "dseq": 77,
        "gseq": 2,
        "oseq": 3,
        "service_name": "web",
        "external_port": 80,
    }


def test_crds_are_akash_ones() -> None:
    by_name = {c["metadata"]["name"]: c for c in crds()}
    assert set(by_name) == {
        "manifests.akash.network",
        "providerhosts.akash.network",
        "providerleasedips.akash.network",
    }
    manifest = by_name["manifests.akash.network"]["spec"]
    assert (manifest["scope"], manifest["names"]["kind"], manifest["names"]["shortNames"]) == (
        "Namespaced",
        "Manifest",
        ["mani"],
    )
    leased = by_name["providerleasedips.akash.network"]["spec"]["versions"][0]
    spec = leased["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert set(spec) == {
        "lease_id",
        "service_name",
        "port",
        "external_port",
        "protocol",
        "sharing_key",
    }


# -- stale objects -----------------------------------------------------------------------------
def _existing(kind: str, name: str, service: str, **labels: str) -> Obj:
    return {
        "kind": kind,
        "metadata": {
            "name": name,
            "labels": lease_labels(LEASE) | {"akash.network/manifest-service": service} | labels,
        },
    }


def test_stale_objects_are_what_the_group_no_longer_asks_for() -> None:
    current = build()
    existing = [
        *current,
        _existing("Deployment", "old", "old"),  # a service gone (written by Go: no target label)
        _existing("Service", "old-np", "old", **{"akash.network/service-target": "true"}),
        _existing("Deployment", "db", "db"),  # db needs a StatefulSet now
        _existing("Service", "gpu-np", "gpu"),  # gpu has no global non-HTTP port
        _existing("Role", "db", "db"),  # db has no permissions
        _existing("Secret", "docker-creds-db", "db"),
        _existing(
            "Service", "db-ip-15432-tcp", "db", **{"akash.network/service-target": "metal-lb"}
        ),
        {"kind": "Deployment", "metadata": {"name": "unmanaged", "labels": {}}},
        {"kind": "ConfigMap", "metadata": {"name": "x", "labels": lease_labels(LEASE)}},
    ]
    assert stale_objects(existing, GROUP) == [
        ("Service", "gpu-np"),
        ("Service", "old-np"),
        ("Deployment", "db"),
        ("Deployment", "old"),
        ("Secret", "docker-creds-db"),
        ("Role", "db"),
    ]
    assert stale_objects(current, GROUP) == []
