"""API conformance of kubesim, driven only through the official synchronous `kubernetes` client.

Every test talks HTTP to a simulator running in a background thread (`kubesim_thread`) and
checks what a real API server would answer: objects and their metadata, the three patch
types, watches (replay, 410 Gone, bookmarks, selectors), finalizers and namespace
deletion, selectors, pagination, error bodies and discovery.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from kubesim.testing import ThreadedKubeSim, wait_until

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


# -- helpers -------------------------------------------------------------------------------


def api_error(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    """The status code and the decoded `Status` body of a call that must fail."""
    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    body = json.loads(info.value.body) if info.value.body else {}
    return int(info.value.status), body


def raw(response: Any) -> dict[str, Any]:
    """The JSON of a `_preload_content=False` response."""
    decoded: dict[str, Any] = json.loads(response.data)
    return decoded


def send(
    k8s: client.ApiClient, method: str, path: str, body: Any = None, content_type: str = ""
) -> Any:
    """A request through the client's own transport, for bodies its models would refuse."""
    request = k8s.param_serialize(
        method=method,
        resource_path=path,
        header_params={
            "Accept": "application/json",
            "Content-Type": content_type or "application/json",
        },
        body=body,
        auth_settings=["BearerToken"],
    )
    response = k8s.call_api(*request)
    response.read()
    return k8s.response_deserialize(response, {"2XX": "object"}).data


def gone(read: Callable[[], Any]) -> bool:
    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def deployment(name: str, replicas: int = 1, **pod_spec: Any) -> dict[str, Any]:
    spec = pod_spec or {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta, "data": data}


def collect(
    stream_from: Callable[..., Any], *args: Any, until: str | None = None, **kwargs: Any
) -> list[tuple[str, str, str]]:
    """(type, name, resourceVersion) of each event, up to the ADDED of `until` or the end."""
    seen = []
    w = watch.Watch()
    for event in w.stream(stream_from, *args, **kwargs):
        meta = event["raw_object"]["metadata"]
        seen.append((event["type"], meta.get("name", ""), meta.get("resourceVersion", "")))
        if until is not None and event["type"] == "ADDED" and meta.get("name") == until:
            w.stop()
    return seen


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
            "shortNames": ["wd"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                    "color": {"type": "string", "enum": ["red", "blue"]},
                                    "extra": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                    "template": {
                                        "type": "object",
                                        "x-kubernetes-embedded-resource": True,
                                        "properties": {
                                            "spec": {
                                                "type": "object",
                                                "properties": {"image": {"type": "string"}},
                                            }
                                        },
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


def widget(name: str, size: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size, **spec},
    }


def install_crd(k8s: client.ApiClient, crd: dict[str, Any] = CRD) -> None:
    ext = client.ApiextensionsV1Api(k8s)
    ext.create_custom_resource_definition(crd)

    def established(obj: Any) -> bool:
        conditions = (obj.status.conditions if obj.status else None) or []
        return any(c.type == "Established" and c.status == "True" for c in conditions)

    wait_until(lambda: ext.read_custom_resource_definition(crd["metadata"]["name"]), established)


# -- namespaces and metadata -----------------------------------------------------------------
def test_namespace_create_list_get_delete(k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    created = core.create_namespace({"metadata": {"name": "team-a", "labels": {"team": "a"}}})
    assert created.metadata.name == "team-a"
    assert created.status.phase == "Active"
    assert created.metadata.namespace is None

    names = {n.metadata.name for n in core.list_namespace().items}
    assert {"default", "kube-system", "team-a"} <= names
    assert [n.metadata.name for n in core.list_namespace(label_selector="team=a").items] == [
        "team-a"
    ]
    assert core.read_namespace("team-a").metadata.uid == created.metadata.uid

    deleted = raw(core.delete_namespace("team-a", _preload_content=False))
    assert deleted["status"]["phase"] == "Terminating"
    assert deleted["metadata"]["deletionTimestamp"]
    wait_until(lambda: gone(lambda: core.read_namespace("team-a")), bool)
    assert "team-a" not in {n.metadata.name for n in core.list_namespace().items}


def test_metadata_is_stamped_by_the_server(k8s: client.ApiClient, ns: str) -> None:
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    before = int(core.list_namespace().metadata.resource_version)
    objects = [
        core.create_namespaced_config_map(ns, configmap("one", x="1")),
        core.create_namespaced_secret(ns, {"metadata": {"name": "two"}}),
        apps.create_namespaced_deployment(ns, deployment("three")),
        core.create_namespaced_service_account(ns, {"metadata": {"name": "four"}}),
        core.create_namespace({"metadata": {"name": "five"}}),
        core.create_namespaced_config_map(ns, configmap("six")),
    ]
    versions = [int(o.metadata.resource_version) for o in objects]
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)  # one counter, strictly increasing across kinds
    assert versions[0] > before
    uids = {o.metadata.uid for o in objects}
    assert len(uids) == len(objects)
    for obj in objects:
        uuid.UUID(obj.metadata.uid)
        assert isinstance(obj.metadata.creation_timestamp, datetime)
    # the namespace comes from the URL; a cluster-scoped object has none
    assert [o.metadata.namespace for o in objects] == [ns, ns, ns, ns, None, ns]
    assert objects[2].metadata.generation == 1
    # server-owned fields sent by the client are replaced
    forged = core.create_namespaced_config_map(
        ns, {"metadata": {"name": "forged", "uid": "abc", "resourceVersion": "999999"}}
    )
    assert forged.metadata.uid != "abc"
    assert int(forged.metadata.resource_version) > versions[-1]
    # a body naming another namespace than the URL is refused
    code, body = api_error(
        core.create_namespaced_config_map, ns, {"metadata": {"name": "x", "namespace": "default"}}
    )
    assert code == 400
    assert body["reason"] == "BadRequest"
    code, body = api_error(
        core.replace_namespaced_config_map,
        "one",
        ns,
        {"metadata": {"name": "one", "namespace": "default"}},
    )
    assert (code, body["reason"]) == (400, "BadRequest")
    code, body = api_error(
        core.replace_namespaced_config_map, "one", ns, {"metadata": {"name": "two"}}
    )
    assert (code, body["reason"]) == (400, "BadRequest")
    # generateName
    generated = core.create_namespaced_config_map(ns, {"metadata": {"generateName": "gen-"}})
    assert generated.metadata.name.startswith("gen-")
    assert len(generated.metadata.name) > len("gen-")


def test_generation_follows_spec_changes_only(k8s: client.ApiClient, ns: str) -> None:
    apps = client.AppsV1Api(k8s)
    created = apps.create_namespaced_deployment(ns, deployment("web"))
    assert created.metadata.generation == 1

    labelled = apps.patch_namespaced_deployment("web", ns, {"metadata": {"labels": {"x": "y"}}})
    assert labelled.metadata.generation == 1
    assert int(labelled.metadata.resource_version) > int(created.metadata.resource_version)

    # the controllers write the status: the resourceVersion moves, the generation does not
    settled = wait_until(
        lambda: apps.read_namespaced_deployment("web", ns),
        lambda d: (d.status.ready_replicas or 0) == 1,
    )
    assert settled.metadata.generation == 1
    assert settled.status.observed_generation == 1

    scaled = apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 2}})
    assert scaled.metadata.generation == 2
    wait_until(
        lambda: apps.read_namespaced_deployment("web", ns),
        lambda d: d.status.observed_generation == 2 and (d.status.ready_replicas or 0) == 2,
    )
    # a write that changes nothing keeps the resourceVersion
    current = apps.read_namespaced_deployment("web", ns)
    again = apps.replace_namespaced_deployment("web", ns, current)
    assert again.metadata.resource_version == current.metadata.resource_version
    assert again.metadata.generation == 2
    # a write leaving out a field the server defaults changes no spec: no new generation
    body = raw(apps.read_namespaced_deployment("web", ns, _preload_content=False))
    del body["spec"]["progressDeadlineSeconds"]
    body["metadata"]["labels"]["z"] = "w"
    relabelled = apps.replace_namespaced_deployment("web", ns, body)
    assert relabelled.metadata.generation == 2
    assert relabelled.spec.progress_deadline_seconds == 600


def test_stale_resource_version_is_a_conflict(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    first = core.create_namespaced_config_map(ns, configmap("cm", v="1"))
    stale = raw(core.read_namespaced_config_map("cm", ns, _preload_content=False))
    stale["data"]["v"] = "2"
    updated = core.replace_namespaced_config_map("cm", ns, stale)
    assert updated.data == {"v": "2"}
    assert int(updated.metadata.resource_version) > int(first.metadata.resource_version)

    stale["data"]["v"] = "3"  # still carries the first resourceVersion
    code, body = api_error(core.replace_namespaced_config_map, "cm", ns, stale)
    assert code == 409
    assert body["kind"] == "Status"
    assert body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]
    assert core.read_namespaced_config_map("cm", ns).data == {"v": "2"}

    # a patch carrying a stale resourceVersion is refused the same way
    code, body = api_error(
        core.patch_namespaced_config_map,
        "cm",
        ns,
        {"metadata": {"resourceVersion": first.metadata.resource_version}, "data": {"v": "4"}},
        _content_type=MERGE,
    )
    assert (code, body["reason"]) == (409, "Conflict")
    # and an update without a resourceVersion is unconditional for built-in kinds
    forced = core.replace_namespaced_config_map(
        "cm", ns, {"metadata": {"name": "cm"}, "data": {"v": "5"}}
    )
    assert forced.data == {"v": "5"}


# -- workloads -----------------------------------------------------------------------------
def test_deployment_runs_its_pods(k8s: client.ApiClient, ns: str) -> None:
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    created = apps.create_namespaced_deployment(ns, deployment("web", replicas=2))
    assert created.spec.strategy.type == "RollingUpdate"  # defaulted
    assert created.spec.template.spec.containers[0].image_pull_policy == "IfNotPresent"

    ready = wait_until(
        lambda: apps.read_namespaced_deployment("web", ns),
        lambda d: d.status.available_replicas == 2,
    )
    assert ready.status.ready_replicas == 2
    pods = core.list_namespaced_pod(ns, label_selector="app=web").items
    assert len(pods) == 2
    assert {p.status.phase for p in pods} == {"Running"}
    assert all(p.spec.node_name in ("node-a", "node-b") for p in pods)
    (rs,) = apps.list_namespaced_replica_set(ns).items
    assert rs.metadata.owner_references[0].uid == created.metadata.uid
    assert all(p.metadata.owner_references[0].uid == rs.metadata.uid for p in pods)

    scale = apps.read_namespaced_deployment_scale("web", ns)
    assert scale.spec.replicas == 2
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
    wait_until(
        lambda: core.list_namespaced_pod(ns, label_selector="app=web").items,
        lambda items: len(items) == 3,
    )


def test_statefulset_gets_pods_and_bound_claims(k8s: client.ApiClient, ns: str) -> None:
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    body = deployment("db", replicas=2)
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = "db"
    body["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "beta2",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    ]
    created = apps.create_namespaced_stateful_set(ns, body)
    assert created.spec.pod_management_policy == "OrderedReady"
    wait_until(
        lambda: apps.read_namespaced_stateful_set("db", ns),
        lambda s: s.status.ready_replicas == 2,
    )
    pods = sorted(p.metadata.name for p in core.list_namespaced_pod(ns).items)
    assert pods == ["db-0", "db-1"]
    claims = core.list_namespaced_persistent_volume_claim(ns).items
    assert sorted(c.metadata.name for c in claims) == ["data-db-0", "data-db-1"]
    assert {c.status.phase for c in claims} == {"Bound"}
    pod = core.read_namespaced_pod("db-0", ns)
    assert pod.spec.hostname == "db-0"
    assert any(
        v.persistent_volume_claim and v.persistent_volume_claim.claim_name == "data-db-0"
        for v in pod.spec.volumes
    )


def test_services_get_addresses_and_node_ports(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)

    def service(name: str, kind: str = "ClusterIP", **port: Any) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {"type": kind, "selector": {"app": name}, "ports": [{"port": 80, **port}]},
        }

    plain = core.create_namespaced_service(ns, service("plain"))
    assert ipaddress.ip_address(plain.spec.cluster_ip) in ipaddress.ip_network("10.96.0.0/16")
    assert plain.spec.cluster_ips == [plain.spec.cluster_ip]
    assert plain.spec.ports[0].target_port == 80
    assert plain.spec.ports[0].protocol == "TCP"
    assert plain.spec.ports[0].node_port is None

    other = core.create_namespaced_service(ns, service("other"))
    assert other.spec.cluster_ip != plain.spec.cluster_ip

    exposed = core.create_namespaced_service(ns, service("exposed", "NodePort"))
    node_port = exposed.spec.ports[0].node_port
    assert 30000 <= node_port <= 32767

    code, body = api_error(
        core.create_namespaced_service, ns, service("thief", "NodePort", nodePort=node_port)
    )
    assert code == 422
    assert body["reason"] == "Invalid"
    assert "spec.ports[0].nodePort" in body["message"]
    assert "already allocated" in body["message"]
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.ports[0].nodePort"]

    code, body = api_error(
        core.create_namespaced_service, ns, service("out", "NodePort", nodePort=8080)
    )
    assert code == 422
    assert "30000-32767" in body["message"]

    chosen = core.create_namespaced_service(ns, service("chosen", "NodePort", nodePort=31234))
    assert chosen.spec.ports[0].node_port == 31234

    # a port the allocator would pick next, asked for by another port of the same service
    free = node_port + 1
    while free == 31234:
        free += 1
    both = core.create_namespaced_service(
        ns,
        {
            "metadata": {"name": "both"},
            "spec": {
                "type": "NodePort",
                "ports": [
                    {"name": "a", "port": 80},
                    {"name": "b", "port": 81, "nodePort": free},
                ],
            },
        },
    )
    ports = [p.node_port for p in both.spec.ports]
    assert ports[1] == free
    assert len(set(ports)) == 2

    headless = core.create_namespaced_service(
        ns, {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": []}}
    )
    assert headless.spec.cluster_ip == "None"

    # an update keeps what was allocated
    current = raw(core.read_namespaced_service("exposed", ns, _preload_content=False))
    current["spec"]["selector"] = {"app": "changed"}
    del current["spec"]["clusterIP"], current["spec"]["clusterIPs"]
    del current["spec"]["ports"][0]["nodePort"]
    updated = core.replace_namespaced_service("exposed", ns, current)
    assert updated.spec.cluster_ip == exposed.spec.cluster_ip
    assert updated.spec.ports[0].node_port == node_port

    # a deleted service frees its node port
    core.delete_namespaced_service("exposed", ns)
    again = core.create_namespaced_service(ns, service("again", "NodePort", nodePort=node_port))
    assert again.spec.ports[0].node_port == node_port


def test_ingress_and_network_policy(k8s: client.ApiClient, ns: str) -> None:
    net = client.NetworkingV1Api(k8s)
    ingress = net.create_namespaced_ingress(
        ns,
        {
            "metadata": {"name": "web", "annotations": {"kubernetes.io/ingress.class": "akash"}},
            "spec": {
                "ingressClassName": "akash-ingress-class",
                "rules": [
                    {
                        "host": "app.example.com",
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
            },
        },
    )
    assert ingress.spec.rules[0].host == "app.example.com"
    read = net.read_namespaced_ingress("web", ns)
    assert read.spec.rules[0].http.paths[0].backend.service.port.number == 80
    assert read.spec.ingress_class_name == "akash-ingress-class"
    assert [i.metadata.name for i in net.list_namespaced_ingress(ns).items] == ["web"]

    # the client's models refuse this body, so it goes out through the raw transport
    code, body = api_error(
        send,
        k8s,
        "POST",
        f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
        {"metadata": {"name": "bad"}, "spec": {"rules": [{"http": {"paths": [{"path": "/"}]}}]}},
    )
    assert code == 422
    assert "spec.rules[0].http.paths[0].backend" in body["message"]
    assert "spec.rules[0].http.paths[0].pathType" in body["message"]

    policy = net.create_namespaced_network_policy(
        ns,
        {
            "metadata": {"name": "isolate"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "web"}},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"podSelector": {}}]}],
                "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}]}],
            },
        },
    )
    assert policy.spec.policy_types == ["Ingress", "Egress"]
    assert net.read_namespaced_network_policy("isolate", ns).spec.egress[0].to[0].ip_block.cidr == (
        "0.0.0.0/0"
    )
    net.delete_namespaced_network_policy("isolate", ns)
    net.delete_namespaced_ingress("web", ns)
    assert net.list_namespaced_network_policy(ns).items == []
    assert gone(lambda: net.read_namespaced_ingress("web", ns))


def test_persistent_volume_claims_are_bound(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)

    def claim(name: str, cls: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": cls,
                "resources": {"requests": {"storage": "2Gi"}},
            },
        }

    core.create_namespaced_persistent_volume_claim(ns, claim("data", "beta2"))
    core.create_namespaced_persistent_volume_claim(ns, claim("lost", "no-such-class"))
    bound = wait_until(
        lambda: core.read_namespaced_persistent_volume_claim("data", ns),
        lambda c: c.status.phase == "Bound",
    )
    assert bound.status.capacity == {"storage": "2Gi"}
    volume = core.read_persistent_volume(bound.spec.volume_name)
    assert volume.spec.claim_ref.name == "data"
    assert volume.spec.claim_ref.uid == bound.metadata.uid
    assert volume.spec.storage_class_name == "beta2"
    lost = wait_until(
        lambda: core.read_namespaced_persistent_volume_claim("lost", ns),
        lambda c: c.status is not None and c.status.phase is not None,
    )
    assert lost.status.phase == "Pending"

    code, body = api_error(
        core.create_namespaced_persistent_volume_claim,
        ns,
        {"metadata": {"name": "nosize"}, "spec": {"accessModes": ["ReadWriteOnce"]}},
    )
    assert code == 422
    assert "spec.resources[storage]" in body["message"]

    core.delete_namespaced_persistent_volume_claim("data", ns)
    wait_until(lambda: gone(lambda: core.read_persistent_volume(bound.spec.volume_name)), bool)


def test_secrets_and_configmaps(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    encoded = base64.b64encode(b"hunter2").decode()
    secret = core.create_namespaced_secret(
        ns, {"metadata": {"name": "creds"}, "data": {"password": encoded}}
    )
    assert secret.type == "Opaque"
    assert secret.data == {"password": encoded}

    # stringData is write-only: the server folds it into data
    plain = core.create_namespaced_secret(
        ns,
        {
            "metadata": {"name": "plain"},
            "type": "kubernetes.io/basic-auth",
            "data": {"username": base64.b64encode(b"old").decode()},
            "stringData": {"username": "admin", "password": "s3cret"},
        },
    )
    assert plain.string_data is None
    assert {k: base64.b64decode(v).decode() for k, v in plain.data.items()} == {
        "username": "admin",
        "password": "s3cret",
    }
    assert core.read_namespaced_secret("plain", ns).string_data is None
    names = [
        s.metadata.name for s in core.list_namespaced_secret(ns, field_selector="type=Opaque").items
    ]
    assert names == ["creds"]

    created = core.create_namespaced_config_map(
        ns,
        {
            "metadata": {"name": "settings"},
            "data": {"mode": "fast"},
            "binaryData": {"blob": base64.b64encode(b"\x00\x01").decode()},
        },
    )
    assert created.metadata.generation is None
    patched = core.patch_namespaced_config_map("settings", ns, {"data": {"level": "3"}})
    assert patched.data == {"mode": "fast", "level": "3"}
    assert patched.binary_data == {"blob": base64.b64encode(b"\x00\x01").decode()}
    replaced = core.replace_namespaced_config_map(
        "settings", ns, {"metadata": {"name": "settings"}, "data": {"only": "this"}}
    )
    assert replaced.data == {"only": "this"}
    assert replaced.binary_data is None
    core.delete_namespaced_config_map("settings", ns)
    assert gone(lambda: core.read_namespaced_config_map("settings", ns))


def test_service_accounts_and_rbac(k8s: client.ApiClient, ns: str) -> None:
    core, rbac = client.CoreV1Api(k8s), client.RbacAuthorizationV1Api(k8s)
    account = core.create_namespaced_service_account(ns, {"metadata": {"name": "operator"}})
    assert account.metadata.namespace == ns
    role = rbac.create_namespaced_role(
        ns,
        {
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
        },
    )
    assert role.rules[0].verbs == ["get", "list"]
    binding = rbac.create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "operator-reads"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": ns}],
        },
    )
    assert binding.subjects[0].name == "operator"
    code, body = api_error(
        send,
        k8s,
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        {"metadata": {"name": "no-ref"}},
    )
    assert code == 422
    assert "roleRef" in body["message"]

    cluster_role = rbac.create_cluster_role(
        {
            "metadata": {"name": "akash:watcher"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["watch"]}],
        }
    )
    assert cluster_role.metadata.namespace is None
    assert "akash:watcher" in [r.metadata.name for r in rbac.list_cluster_role().items]
    assert [r.metadata.name for r in rbac.list_namespaced_role(ns).items] == ["reader"]
    assert [a.metadata.name for a in core.list_namespaced_service_account(ns).items] == ["operator"]
    rbac.delete_cluster_role("akash:watcher")
    assert gone(lambda: rbac.read_cluster_role("akash:watcher"))


def test_delete_answers_like_the_real_server(k8s: client.ApiClient, ns: str) -> None:
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    created = core.create_namespaced_config_map(ns, configmap("cm"))
    status = core.delete_namespaced_config_map("cm", ns)
    assert status["kind"] == "Status"
    assert status["status"] == "Success"
    assert status["details"] == {"name": "cm", "kind": "configmaps", "uid": created.metadata.uid}

    apps.create_namespaced_deployment(ns, deployment("web"))
    status = apps.delete_namespaced_deployment("web", ns)
    assert status["kind"] == "Status"
    assert (status["details"]["group"], status["details"]["kind"]) == ("apps", "deployments")
    # the garbage collector takes the ReplicaSet and the pods with it
    wait_until(lambda: apps.list_namespaced_replica_set(ns).items, lambda items: items == [])

    code, body = api_error(core.delete_namespaced_config_map, "cm", ns)
    assert (code, body["reason"]) == (404, "NotFound")

    # pods, services, service accounts and claims answer with the deleted object
    core.create_namespaced_pod(
        ns, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    )
    assert isinstance(core.delete_namespaced_pod("p", ns), client.V1Pod)
    core.create_namespaced_service(
        ns, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    )
    assert core.delete_namespaced_service("s", ns).metadata.name == "s"
    core.create_namespaced_service_account(ns, {"metadata": {"name": "sa"}})
    assert isinstance(core.delete_namespaced_service_account("sa", ns), client.V1ServiceAccount)


# -- custom resources --------------------------------------------------------------------------
def test_crd_serves_custom_objects(k8s: client.ApiClient, ns: str) -> None:
    install_crd(k8s)
    objects = client.CustomObjectsApi(k8s)
    args = ("example.com", "v1", ns, "widgets")

    # discovery shows the new resource and its status subresource
    resources = objects.get_api_resources("example.com", "v1").resources
    by_name = {r.name: r for r in resources}
    assert by_name["widgets"].kind == "Widget"
    assert by_name["widgets"].namespaced is True
    assert by_name["widgets"].short_names == ["wd"]
    assert "widgets/status" in by_name
    assert "example.com" in [g.name for g in client.ApisApi(k8s).get_api_versions().groups]

    created = objects.create_namespaced_custom_object(
        *args, {**widget("one", 2, color="red", bogus=1), "status": {"phase": "Forged"}}
    )
    assert created["metadata"]["namespace"] == ns
    assert created["metadata"]["generation"] == 1
    assert created["spec"] == {"size": 2, "color": "red"}  # unknown field pruned
    assert "status" not in created  # status is the status subresource's business
    assert objects.get_namespaced_custom_object(*args, "one")["spec"]["size"] == 2

    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "inner"},
        "spec": {"image": "nginx", "junk": 1},
    }
    kept = objects.create_namespaced_custom_object(
        *args, widget("two", 3, extra={"anything": {"goes": [1, 2]}}, template=template)
    )
    assert kept["spec"]["extra"] == {"anything": {"goes": [1, 2]}}  # preserve-unknown-fields
    # an embedded resource keeps its type and metadata; what it does not declare goes
    assert kept["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "inner"},
        "spec": {"image": "nginx"},
    }

    listed = objects.list_namespaced_custom_object(*args)
    assert listed["kind"] == "WidgetList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["one", "two"]

    patched = objects.patch_namespaced_custom_object(*args, "one", {"spec": {"size": 4}})
    assert patched["spec"] == {"size": 4, "color": "red"}
    assert patched["metadata"]["generation"] == 2

    current = objects.get_namespaced_custom_object(*args, "one")
    current["spec"]["color"] = "blue"
    replaced = objects.replace_namespaced_custom_object(*args, "one", current)
    assert replaced["spec"]["color"] == "blue"
    assert replaced["metadata"]["generation"] == 3
    current["spec"]["size"] = 5  # current still carries the old resourceVersion
    code, body = api_error(objects.replace_namespaced_custom_object, *args, "one", current)
    assert (code, body["reason"]) == (409, "Conflict")
    del current["metadata"]["resourceVersion"]
    code, body = api_error(objects.replace_namespaced_custom_object, *args, "one", current)
    assert code == 422
    assert "metadata.resourceVersion" in body["message"]

    # custom resources take merge and JSON patches, not strategic merge
    code, body = api_error(
        objects.patch_namespaced_custom_object,
        *args,
        "one",
        {"spec": {"size": 6}},
        _content_type="application/strategic-merge-patch+json",
    )
    assert code == 415
    jp = objects.patch_namespaced_custom_object(
        *args,
        "one",
        [{"op": "replace", "path": "/spec/size", "value": 7}],
        _content_type=JSON_PATCH,
    )
    assert jp["spec"]["size"] == 7

    objects.delete_namespaced_custom_object(*args, "two")
    assert [
        i["metadata"]["name"] for i in objects.list_namespaced_custom_object(*args)["items"]
    ] == ["one"]
    code, body = api_error(objects.get_namespaced_custom_object, *args, "two")
    assert (code, body["reason"]) == (404, "NotFound")
    assert body["details"] == {"name": "two", "group": "example.com", "kind": "widgets"}


def test_custom_object_status_subresource(k8s: client.ApiClient, ns: str) -> None:
    install_crd(k8s)
    objects = client.CustomObjectsApi(k8s)
    args = ("example.com", "v1", ns, "widgets")
    objects.create_namespaced_custom_object(*args, widget("w", 1))

    # /status takes the status and ignores spec changes
    current = objects.get_namespaced_custom_object(*args, "w")
    current["status"] = {"phase": "Ready"}
    current["spec"]["size"] = 9
    after = objects.replace_namespaced_custom_object_status(*args, "w", current)
    assert after["status"] == {"phase": "Ready"}
    assert after["spec"]["size"] == 1
    assert after["metadata"]["generation"] == 1
    patched = objects.patch_namespaced_custom_object_status(
        *args, "w", {"status": {"phase": "Busy"}, "spec": {"size": 8}}
    )
    assert patched["status"] == {"phase": "Busy"}
    assert patched["spec"]["size"] == 1

    # the main endpoint takes the spec and ignores status changes
    main = objects.patch_namespaced_custom_object(
        *args, "w", {"status": {"phase": "Hacked"}, "spec": {"size": 2}}
    )
    assert main["status"] == {"phase": "Busy"}
    assert main["spec"]["size"] == 2
    current = objects.get_namespaced_custom_object(*args, "w")
    current["status"] = {}
    replaced = objects.replace_namespaced_custom_object(*args, "w", current)
    assert replaced["status"] == {"phase": "Busy"}
    status = objects.get_namespaced_custom_object_status(*args, "w")
    assert status["status"] == {"phase": "Busy"}


def test_custom_objects_without_a_status_subresource(k8s: client.ApiClient) -> None:
    crd = json.loads(json.dumps(CRD))
    crd["spec"]["scope"] = "Cluster"
    del crd["spec"]["versions"][0]["subresources"]
    install_crd(k8s, crd)
    objects = client.CustomObjectsApi(k8s)
    args = ("example.com", "v1", "widgets")
    assert {r.name for r in objects.get_api_resources("example.com", "v1").resources} == {"widgets"}
    created = objects.create_cluster_custom_object(
        *args, {**widget("w", 1), "status": {"phase": "New"}}
    )
    assert created["status"] == {"phase": "New"}  # no subresource: status is plain data
    assert "namespace" not in created["metadata"]
    changed = objects.patch_cluster_custom_object(*args, "w", {"status": {"phase": "Old"}})
    assert changed["status"] == {"phase": "Old"}
    assert changed["metadata"]["generation"] == 2  # every change but metadata counts
    labelled = objects.patch_cluster_custom_object(*args, "w", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 2
    code, _ = api_error(objects.get_cluster_custom_object_status, *args, "w")
    assert code == 404


def test_custom_objects_are_validated_against_the_schema(k8s: client.ApiClient, ns: str) -> None:
    install_crd(k8s)
    objects = client.CustomObjectsApi(k8s)
    args = ("example.com", "v1", ns, "widgets")

    code, body = api_error(objects.create_namespaced_custom_object, *args, widget("big", 11))
    assert code == 422
    assert body["reason"] == "Invalid"
    assert "spec.size" in body["message"]
    assert body["details"]["kind"] == "Widget"
    code, body = api_error(
        objects.create_namespaced_custom_object, *args, widget("pink", 1, color="pink")
    )
    assert code == 422
    assert "spec.color" in body["message"]
    no_size = widget("nosize")
    del no_size["spec"]["size"]
    code, body = api_error(objects.create_namespaced_custom_object, *args, no_size)
    assert code == 422
    assert "spec.size" in body["message"]
    code, body = api_error(objects.create_namespaced_custom_object, *args, widget("Not_A_Name", 1))
    assert code == 422
    assert "metadata.name" in body["message"]

    objects.create_namespaced_custom_object(*args, widget("ok", 1))
    code, body = api_error(
        objects.patch_namespaced_custom_object, *args, "ok", {"spec": {"size": "three"}}
    )
    assert code == 422
    assert "spec.size" in body["message"]
    assert objects.get_namespaced_custom_object(*args, "ok")["spec"]["size"] == 1


def test_crd_schema_changes_take_effect(k8s: client.ApiClient, ns: str) -> None:
    install_crd(k8s)
    ext, objects = client.ApiextensionsV1Api(k8s), client.CustomObjectsApi(k8s)
    args = ("example.com", "v1", ns, "widgets")
    objects.create_namespaced_custom_object(*args, widget("before", 9))

    crd = raw(ext.read_custom_resource_definition("widgets.example.com", _preload_content=False))
    size = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]["size"]
    size["maximum"] = 5
    ext.replace_custom_resource_definition("widgets.example.com", crd)
    code, body = api_error(objects.create_namespaced_custom_object, *args, widget("after", 9))
    assert code == 422
    assert "spec.size" in body["message"]
    assert objects.create_namespaced_custom_object(*args, widget("small", 5))["spec"]["size"] == 5

    # deleting the CRD takes its objects and its endpoints with it
    ext.delete_custom_resource_definition("widgets.example.com")
    code, _ = api_error(objects.list_namespaced_custom_object, *args)
    assert code == 404
    install_crd(k8s)
    assert objects.list_namespaced_custom_object(*args)["items"] == []


# -- patches -----------------------------------------------------------------------------------
def test_strategic_merge_patch_merges_lists_by_key(k8s: client.ApiClient, ns: str) -> None:
    apps = client.AppsV1Api(k8s)
    apps.create_namespaced_deployment(
        ns,
        deployment(
            "web",
            containers=[
                {"name": "app", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "envoy:1.30"},
            ],
        ),
    )
    patched = apps.patch_namespaced_deployment(
        "web",
        ns,
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "nginx:1.28",
                                "env": [{"name": "B", "value": "2"}],
                            }
                        ]
                    }
                }
            }
        },
    )
    containers = patched.spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [
        ("app", "nginx:1.28"),
        ("sidecar", "envoy:1.30"),
    ]
    assert [(e.name, e.value) for e in containers[0].env] == [("A", "1"), ("B", "2")]
    assert patched.metadata.generation == 2

    # directives: delete one container by its key
    dropped = apps.patch_namespaced_deployment(
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}},
    )
    assert [c.name for c in dropped.spec.template.spec.containers] == ["app"]

    # a strategic patch that breaks the object is refused and changes nothing
    code, body = api_error(
        apps.patch_namespaced_deployment,
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": None}]}}}},
    )
    assert code == 422
    assert "spec.template.spec.containers[0].image" in body["message"]
    assert apps.read_namespaced_deployment("web", ns).spec.template.spec.containers[0].image == (
        "nginx:1.28"
    )
    # a map patched over a scalar is the object's problem (422), not the server's (500)
    code, body = api_error(
        apps.patch_namespaced_deployment, "web", ns, {"spec": {"replicas": {"many": 3}}}
    )
    assert code == 422
    assert "spec.replicas" in body["message"]


def test_merge_patch_replaces_lists(k8s: client.ApiClient, ns: str) -> None:
    apps = client.AppsV1Api(k8s)
    body = deployment(
        "web",
        containers=[
            {"name": "app", "image": "nginx:1.27"},
            {"name": "sidecar", "image": "envoy:1.30"},
        ],
    )
    body["metadata"]["labels"]["tier"] = "front"
    apps.create_namespaced_deployment(ns, body)
    patched = apps.patch_namespaced_deployment(
        "web",
        ns,
        {
            "metadata": {"labels": {"tier": None, "new": "yes"}},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}},
        },
        _content_type=MERGE,
    )
    assert [(c.name, c.image) for c in patched.spec.template.spec.containers] == [
        ("app", "nginx:2")
    ]
    assert patched.metadata.labels == {"app": "web", "new": "yes"}


def test_json_patch(k8s: client.ApiClient, ns: str) -> None:
    apps = client.AppsV1Api(k8s)
    apps.create_namespaced_deployment(ns, deployment("web"))
    patched = apps.patch_namespaced_deployment(
        "web",
        ns,
        [
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "replace", "path": "/spec/replicas", "value": 3},
            {"op": "add", "path": "/metadata/labels/tier", "value": "web"},
            {
                "op": "add",
                "path": "/spec/template/spec/containers/-",
                "value": {"name": "second", "image": "busybox:1.36"},
            },
        ],
    )
    assert patched.spec.replicas == 3
    assert patched.metadata.labels["tier"] == "web"
    assert [c.name for c in patched.spec.template.spec.containers] == ["app", "second"]

    code, body = api_error(
        apps.patch_namespaced_deployment,
        "web",
        ns,
        [
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "replace", "path": "/spec/replicas", "value": 5},
        ],
    )
    assert code == 422
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 3
    code, body = api_error(
        apps.patch_namespaced_deployment,
        "web",
        ns,
        [{"op": "remove", "path": "/spec/no-such-field"}],
    )
    assert (code, body["reason"]) == (422, "Invalid")


# -- watches -----------------------------------------------------------------------------------
def test_watch_replays_changes_since_a_resource_version(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    core.create_namespaced_config_map(ns, configmap("old"))
    rv = core.list_namespaced_config_map(ns).metadata.resource_version

    core.create_namespaced_config_map(ns, configmap("a", v="1"))
    core.create_namespaced_config_map(ns, configmap("b"))
    core.create_namespaced_secret(ns, {"metadata": {"name": "not-a-configmap"}})
    core.create_namespaced_config_map("default", configmap("elsewhere"))
    core.patch_namespaced_config_map("a", ns, {"data": {"v": "2"}})
    core.delete_namespaced_config_map("b", ns)
    core.delete_namespaced_config_map("old", ns)
    core.create_namespaced_config_map(ns, configmap("end"))

    seen = collect(
        core.list_namespaced_config_map, ns, until="end", resource_version=rv, timeout_seconds=5
    )
    assert [(kind, name) for kind, name, _ in seen] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
        ("DELETED", "old"),
        ("ADDED", "end"),
    ]
    versions = [int(v) for _, _, v in seen]
    assert versions == sorted(versions)
    assert versions[0] > int(rv)

    # the same replay, cluster-wide and typed
    w = watch.Watch()
    typed = []
    for event in w.stream(
        core.list_config_map_for_all_namespaces, resource_version=rv, timeout_seconds=5
    ):
        typed.append((event["type"], event["object"].metadata.name))
        assert isinstance(event["object"], client.V1ConfigMap)
        if event["object"].metadata.name == "end":
            w.stop()
    assert ("ADDED", "elsewhere") in typed
    assert typed[-1] == ("ADDED", "end")

    # a watch with no resourceVersion starts with the current objects
    current = collect(core.list_namespaced_config_map, ns, until="end", timeout_seconds=5)
    assert sorted(name for _, name, _ in current) == ["a", "end"]
    assert {kind for kind, _, _ in current} == {"ADDED"}


def test_watch_from_a_compacted_version_is_gone(
    k8s: client.ApiClient, ns: str, kubesim_thread: ThreadedKubeSim
) -> None:
    core = client.CoreV1Api(k8s)
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("a"))
    kubesim_thread.call(kubesim_thread.running.store.compact)

    with pytest.raises(ApiException) as info:
        collect(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=2)
    assert info.value.status == 410

    # without timeout_seconds the client retries once from the same version, then gives up
    w = watch.Watch()
    with pytest.raises(ApiException) as info:
        for _ in w.stream(core.list_namespaced_config_map, ns, resource_version=rv):
            pass
    assert info.value.status == 410

    # a fresh version works again
    fresh = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("b"))
    seen = collect(
        core.list_namespaced_config_map, ns, until="b", resource_version=fresh, timeout_seconds=5
    )
    assert [(k, n) for k, n, _ in seen] == [("ADDED", "b")]


def test_watch_bookmarks(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map,
            ns,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=1,
        )
    )
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 2  # every 0.2 s in tests
    assert bookmarks == events
    for mark in bookmarks:
        assert mark["raw_object"]["kind"] == "ConfigMap"
        assert int(mark["raw_object"]["metadata"]["resourceVersion"]) >= int(rv)

    plain = collect(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=1)
    assert plain == []


def test_bookmarks_never_run_ahead_of_the_events(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    blob = "x" * 300_000  # big events fill the connection, so the server falls behind
    for i in range(60):
        core.create_namespaced_config_map(ns, configmap(f"cm-{i:02d}", blob=blob))
    rv = core.list_namespaced_config_map(ns, limit=1).metadata.resource_version

    def burst() -> None:  # sixty deletions in one request, while the watch is open
        time.sleep(0.3)
        core.delete_collection_namespaced_config_map(ns)

    deleter = threading.Thread(target=burst)
    deleter.start()
    seen: list[tuple[str, int]] = []
    w = watch.Watch()
    try:
        for event in w.stream(
            core.list_namespaced_config_map,
            ns,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=10,
        ):
            seen.append((event["type"], int(event["raw_object"]["metadata"]["resourceVersion"])))
            time.sleep(0.01)  # a slow reader
            if [kind for kind, _ in seen].count("DELETED") == 60:
                w.stop()
    finally:
        deleter.join()
    kinds = [kind for kind, _ in seen]
    assert kinds.count("DELETED") == 60
    first, last = kinds.index("DELETED"), len(kinds) - 1 - kinds[::-1].index("DELETED")
    assert "BOOKMARK" in kinds[first:last]  # bookmarks came while deletions were queued
    # a client resuming from any bookmark must not miss an event: versions never go back
    versions = [version for _, version in seen]
    assert versions == sorted(versions)


def test_watch_timeout_ends_the_stream(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    started = time.monotonic()
    events = collect(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=1)
    elapsed = time.monotonic() - started
    assert events == []
    assert 0.9 <= elapsed < 5


def test_label_selector_watch_sees_objects_leave_and_enter(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    core.create_namespaced_config_map(ns, configmap("x", {"app": "a"}))
    core.create_namespaced_config_map(ns, configmap("other", {"app": "b"}))
    rv = core.list_namespaced_config_map(ns).metadata.resource_version

    core.patch_namespaced_config_map("x", ns, {"metadata": {"labels": {"app": "b"}}})
    core.patch_namespaced_config_map("other", ns, {"data": {"k": "v"}})
    core.patch_namespaced_config_map("x", ns, {"metadata": {"labels": {"app": "a"}}})
    core.patch_namespaced_config_map("x", ns, {"data": {"k": "v"}})
    core.delete_namespaced_config_map("x", ns)
    core.create_namespaced_config_map(ns, configmap("end", {"app": "a"}))

    seen = collect(
        core.list_namespaced_config_map,
        ns,
        until="end",
        label_selector="app=a",
        resource_version=rv,
        timeout_seconds=5,
    )
    assert [(kind, name) for kind, name, _ in seen] == [
        ("DELETED", "x"),
        ("ADDED", "x"),
        ("MODIFIED", "x"),
        ("DELETED", "x"),
        ("ADDED", "end"),
    ]

    # field selectors filter watches too
    core.create_namespaced_config_map(ns, configmap("last"))
    picked = collect(
        core.list_namespaced_config_map,
        ns,
        until="last",
        field_selector="metadata.name=last",
        resource_version=rv,
        timeout_seconds=5,
    )
    assert [(kind, name) for kind, name, _ in picked] == [("ADDED", "last")]


# -- deletion ----------------------------------------------------------------------------------
def test_finalizers_hold_an_object_until_removed(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    core.create_namespaced_config_map(
        ns,
        {"metadata": {"name": "held", "finalizers": ["example.com/a", "example.com/b"]}},
    )
    deleting = raw(core.delete_namespaced_config_map("held", ns, _preload_content=False))
    assert deleting["metadata"]["deletionTimestamp"]
    held = core.read_namespaced_config_map("held", ns)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/a", "example.com/b"]
    # deleting again changes nothing
    again = raw(core.delete_namespaced_config_map("held", ns, _preload_content=False))
    assert again["metadata"]["resourceVersion"] == held.metadata.resource_version

    # finalizers go one at a time: a JSON patch, then a merge patch
    core.patch_namespaced_config_map(
        "held", ns, [{"op": "remove", "path": "/metadata/finalizers/0"}]
    )
    assert core.read_namespaced_config_map("held", ns).metadata.finalizers == ["example.com/b"]
    core.patch_namespaced_config_map(
        "held", ns, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    code, body = api_error(core.read_namespaced_config_map, "held", ns)
    assert (code, body["reason"]) == (404, "NotFound")


def test_namespace_deletion_cascades(k8s: client.ApiClient) -> None:
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    core.create_namespace({"metadata": {"name": "doomed"}})
    apps.create_namespaced_deployment("doomed", deployment("web", replicas=2))
    core.create_namespaced_config_map("doomed", configmap("cm"))
    core.create_namespaced_secret("doomed", {"metadata": {"name": "s"}})
    wait_until(lambda: core.list_namespaced_pod("doomed").items, lambda p: len(p) == 2)

    deleting = raw(core.delete_namespace("doomed", _preload_content=False))
    assert deleting["status"]["phase"] == "Terminating"
    wait_until(lambda: gone(lambda: core.read_namespace("doomed")), bool)
    for listing in (
        core.list_namespaced_pod,
        core.list_namespaced_config_map,
        core.list_namespaced_secret,
        apps.list_namespaced_deployment,
        apps.list_namespaced_replica_set,
    ):
        assert listing("doomed").items == []


def test_a_finalizer_keeps_a_namespace_terminating(k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map(
        "doomed", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    core.create_namespaced_config_map("doomed", configmap("free"))
    core.delete_namespace("doomed")

    wait_until(
        lambda: core.list_namespaced_config_map("doomed").items,
        lambda items: [i.metadata.name for i in items] == ["held"],
    )
    time.sleep(0.2)  # give the namespace controller a chance to (wrongly) finish
    ns = core.read_namespace("doomed")
    assert ns.status.phase == "Terminating"
    assert ns.metadata.deletion_timestamp is not None
    held = core.read_namespaced_config_map("held", "doomed")
    assert held.metadata.deletion_timestamp is not None

    code, body = api_error(core.create_namespaced_config_map, "doomed", configmap("late"))
    assert code == 403
    assert body["reason"] == "Forbidden"
    assert "being terminated" in body["message"]

    core.patch_namespaced_config_map(
        "held", "doomed", {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    wait_until(lambda: gone(lambda: core.read_namespace("doomed")), bool)


# -- selectors and lists -----------------------------------------------------------------------
def test_label_selectors(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    for name, labels in {
        "a": {"env": "prod", "tier": "web"},
        "b": {"env": "dev", "tier": "web"},
        "c": {"env": "prod"},
        "d": {},
    }.items():
        core.create_namespaced_config_map(ns, configmap(name, labels))

    def names(selector: str) -> list[str]:
        items = core.list_namespaced_config_map(ns, label_selector=selector).items
        return [i.metadata.name for i in items]

    assert names("env=prod") == ["a", "c"]
    assert names("env==prod") == ["a", "c"]
    assert names("env!=prod") == ["b", "d"]
    assert names("env in (prod,dev)") == ["a", "b", "c"]
    assert names("env notin (prod)") == ["b", "d"]
    assert names("tier") == ["a", "b"]
    assert names("!tier") == ["c", "d"]
    assert names("env=prod,tier") == ["a"]
    assert names("env in (prod), !tier") == ["c"]
    assert names("") == ["a", "b", "c", "d"]
    code, body = api_error(core.list_namespaced_config_map, ns, label_selector="env in prod")
    assert (code, body["reason"]) == (400, "BadRequest")


def test_field_selectors(k8s: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(k8s)
    core.create_namespace({"metadata": {"name": "second"}})
    core.create_namespaced_config_map(ns, configmap("a"))
    core.create_namespaced_config_map(ns, configmap("b"))
    core.create_namespaced_config_map("second", configmap("a"))

    def names(**selector: str) -> list[str]:
        items = core.list_namespaced_config_map(ns, **selector).items
        return [i.metadata.name for i in items]

    assert names(field_selector="metadata.name=a") == ["a"]
    assert names(field_selector="metadata.name!=a") == ["b"]
    everywhere = core.list_config_map_for_all_namespaces(field_selector="metadata.name=a").items
    assert sorted(i.metadata.namespace for i in everywhere) == ["second", ns]
    there = core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=second")
    assert [(i.metadata.namespace, i.metadata.name) for i in there.items] == [("second", "a")]

    def pod(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec},
        }

    core.create_namespaced_pod(ns, pod("on-a", nodeName="node-a"))
    core.create_namespaced_pod(ns, pod("on-b", nodeName="node-b"))
    core.create_namespaced_pod(ns, pod("nowhere", nodeSelector={"no": "such-node"}))
    wait_until(
        lambda: core.list_namespaced_pod(ns, field_selector="status.phase=Running").items,
        lambda items: len(items) == 2,
    )

    def pods(selector: str) -> list[str]:
        return [
            p.metadata.name for p in core.list_namespaced_pod(ns, field_selector=selector).items
        ]

    assert pods("spec.nodeName=node-a") == ["on-a"]
    assert pods("spec.nodeName=node-b,status.phase=Running") == ["on-b"]
    assert pods("status.phase=Running") == ["on-a", "on-b"]
    assert pods("status.phase!=Running") == ["nowhere"]
    assert pods("status.phase=Pending") == ["nowhere"]
    assert pods("spec.nodeName=") == ["nowhere"]
    assert pods("spec.hostNetwork=false") == ["nowhere", "on-a", "on-b"]
    nodes = core.list_node(field_selector="spec.unschedulable=false").items
    assert sorted(n.metadata.name for n in nodes) == ["node-a", "node-b"]
    assert core.list_node(field_selector="spec.unschedulable=true").items == []

    for listing, selector in (
        (core.list_namespaced_config_map, "data.key=x"),
        (core.list_namespaced_pod, "spec.containers=x"),
    ):
        code, body = api_error(listing, ns, field_selector=selector)
        assert code == 400
        assert body["reason"] == "BadRequest"
        assert "field label not supported" in body["message"]


def test_pagination_with_limit_and_continue(
    k8s: client.ApiClient, ns: str, kubesim_thread: ThreadedKubeSim
) -> None:
    core = client.CoreV1Api(k8s)
    for i in range(7):
        core.create_namespaced_config_map(ns, configmap(f"cm-{i}", {"n": str(i % 2)}))

    first = core.list_namespaced_config_map(ns, limit=3)
    assert [i.metadata.name for i in first.items] == ["cm-0", "cm-1", "cm-2"]
    assert first.metadata.var_continue
    assert first.metadata.remaining_item_count == 4
    second = core.list_namespaced_config_map(ns, limit=3, _continue=first.metadata.var_continue)
    assert [i.metadata.name for i in second.items] == ["cm-3", "cm-4", "cm-5"]
    assert second.metadata.remaining_item_count == 1
    last = core.list_namespaced_config_map(ns, limit=3, _continue=second.metadata.var_continue)
    assert [i.metadata.name for i in last.items] == ["cm-6"]
    assert last.metadata.var_continue is None
    assert last.metadata.remaining_item_count is None

    # with a selector the server does not know what remains, and says nothing
    odd = core.list_namespaced_config_map(ns, limit=2, label_selector="n=1")
    assert [i.metadata.name for i in odd.items] == ["cm-1", "cm-3"]
    assert odd.metadata.var_continue
    assert odd.metadata.remaining_item_count is None
    rest = core.list_namespaced_config_map(
        ns, limit=2, label_selector="n=1", _continue=odd.metadata.var_continue
    )
    assert [i.metadata.name for i in rest.items] == ["cm-5"]

    # a continue token from before a compaction has expired
    token = core.list_namespaced_config_map(ns, limit=2).metadata.var_continue
    core.create_namespaced_config_map(ns, configmap("later"))
    kubesim_thread.call(kubesim_thread.running.store.compact)
    code, body = api_error(core.list_namespaced_config_map, ns, limit=2, _continue=token)
    assert code == 410
    assert body["reason"] == "Expired"
    code, body = api_error(core.list_namespaced_config_map, ns, _continue="garbage")
    assert code == 400


def test_malformed_requests_are_refused(k8s: client.ApiClient, ns: str) -> None:
    # the client's models keep these from going out, so they go through its raw transport
    for path, reason in (
        (f"/api/v1/namespaces/{ns}/configmaps?limit=many", "BadRequest"),
        (f"/api/v1/namespaces/{ns}/configmaps?watch=1&timeoutSeconds=soon", "BadRequest"),
        (f"/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=old", "BadRequest"),
        (f"/api/v1/namespaces/{ns}/widgets", "NotFound"),
        (f"/api/v1/namespaces/{ns}/nodes", "NotFound"),
        ("/apis/no.such.group/v1", "NotFound"),
    ):
        code, body = api_error(send, k8s, "GET", path)
        assert body["reason"] == reason, path
        assert code == {"BadRequest": 400, "NotFound": 404}[reason]
    code, body = api_error(send, k8s, "PUT", f"/api/v1/namespaces/{ns}/configmaps", {})
    assert (code, body["reason"]) == (405, "MethodNotAllowed")
    code, body = api_error(
        send, k8s, "POST", f"/api/v1/namespaces/{ns}/configmaps", {"kind": "Secret"}
    )
    assert (code, body["reason"]) == (400, "BadRequest")


# -- errors ------------------------------------------------------------------------------------
def test_error_bodies(k8s: client.ApiClient, ns: str) -> None:
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    code, body = api_error(apps.read_namespaced_deployment, "missing", ns)
    assert code == 404
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert body["reason"] == "NotFound"
    assert body["message"] == 'deployments.apps "missing" not found'
    assert body["details"] == {"name": "missing", "group": "apps", "kind": "deployments"}

    code, body = api_error(core.create_namespaced_config_map, "nowhere", configmap("cm"))
    assert (code, body["reason"]) == (404, "NotFound")
    assert "nowhere" in body["message"]

    core.create_namespaced_config_map(ns, configmap("cm"))
    code, body = api_error(core.create_namespaced_config_map, ns, configmap("cm"))
    assert code == 409
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'configmaps "cm" already exists'

    no_image = deployment("broken", containers=[{"name": "app"}])
    code, body = api_error(apps.create_namespaced_deployment, ns, no_image)
    assert code == 422
    assert body["reason"] == "Invalid"
    assert "spec.template.spec.containers[0].image" in body["message"]
    assert body["message"].startswith('Deployment.apps "broken" is invalid')
    fields = [c["field"] for c in body["details"]["causes"]]
    assert "spec.template.spec.containers[0].image" in fields
    assert gone(lambda: apps.read_namespaced_deployment("broken", ns))

    unknown = deployment("typo")
    unknown["spec"]["replicaz"] = 2
    # the client's models refuse an unknown field, so it goes out through the raw transport;
    # fieldValidation=Strict refuses it (400), the default (Warn) drops it with a warning
    path = f"/apis/apps/v1/namespaces/{ns}/deployments?fieldValidation=Strict"
    code, body = api_error(send, k8s, "POST", path, unknown)
    assert (code, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: '
        'strict decoding error: unknown field "spec.replicaz"'
    )

    mismatch = deployment("mismatch")
    mismatch["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    code, body = api_error(apps.create_namespaced_deployment, ns, mismatch)
    assert code == 422
    assert "selector" in body["message"]

    code, body = api_error(
        core.create_namespaced_config_map, ns, {"metadata": {"name": "Bad_Name"}}
    )
    assert code == 422
    assert "metadata.name" in body["message"]


# -- discovery ---------------------------------------------------------------------------------
def test_discovery(k8s: client.ApiClient) -> None:
    core_versions = client.CoreApi(k8s).get_api_versions()
    assert core_versions.versions == ["v1"]

    groups = {g.name: g for g in client.ApisApi(k8s).get_api_versions().groups}
    assert {"apps", "batch", "networking.k8s.io", "rbac.authorization.k8s.io"} <= set(groups)
    assert "" not in groups
    assert groups["apps"].preferred_version.group_version == "apps/v1"
    assert client.AppsApi(k8s).get_api_group().name == "apps"

    apps = {r.name: r for r in client.AppsV1Api(k8s).get_api_resources().resources}
    assert apps["deployments"].kind == "Deployment"
    assert apps["deployments"].namespaced is True
    assert {"create", "list", "watch", "patch", "delete"} <= set(apps["deployments"].verbs)
    assert apps["deployments/scale"].kind == "Scale"
    assert "deployments/status" in apps
    assert "statefulsets" in apps

    core = {r.name: r for r in client.CoreV1Api(k8s).get_api_resources().resources}
    assert core["namespaces"].namespaced is False
    assert core["pods"].short_names == ["po"]
    assert "pods/log" in core

    version = client.VersionApi(k8s).get_code()
    assert (version.major, version.minor) == ("1", "32")
    assert version.git_version == "v1.32.0"


def test_a_claim_without_a_class_gets_the_default_storage_class(
    k8s: client.ApiClient, ns: str
) -> None:
    core, storage = client.CoreV1Api(k8s), client.StorageV1Api(k8s)
    storage.create_storage_class(
        {
            "metadata": {
                "name": "standard-default",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "kubesim.io/local",
        }
    )
    try:

        def claim(name: str, **cls: str) -> dict[str, Any]:
            spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            return {"metadata": {"name": name}, "spec": spec | cls}

        made = core.create_namespaced_persistent_volume_claim(ns, claim("plain"))
        assert made.spec.storage_class_name == "standard-default"
        explicit = core.create_namespaced_persistent_volume_claim(
            ns, claim("none", storageClassName="")
        )
        assert explicit.spec.storage_class_name == ""  # "": no class, on purpose
    finally:
        storage.delete_storage_class("standard-default")
