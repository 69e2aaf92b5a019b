"""Hostile and malformed requests, over raw HTTP: each is answered with the 4xx `Status` the
real API server gives it (400 for what does not decode, 422 for what decodes but is invalid,
413 for what is too large, 415 for a media type the verb does not take), never a 500, and
the simulator keeps working afterwards."""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from kubesim.testing import ThreadedKubeSim, wait_until

Send = Callable[..., Any]

NS = "/api/v1/namespaces/default"
CM = f"{NS}/configmaps"
PODS = f"{NS}/pods"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
QUANTITY_ERROR = "quantit"  # "quantities must match the regular expression", "… of quantity"


def pod(name: str, **resources: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "nginx:1.27"}
    if resources:
        container["resources"] = resources
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


def deployment(name: str, **resources: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": pod("x", **resources)["spec"],
            },
        },
    }


def token(data: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode()


@pytest.fixture(scope="module")
def world(raw_request: Send) -> Iterator[Send]:
    """One simulator for the module's malformed requests, which pile up on it: a ConfigMap
    `cm`, a Deployment `web` and a running pod `solo` in `default`."""
    with ThreadedKubeSim() as sim:
        send = functools.partial(raw_request, sim.url)
        assert send("POST", CM, {"metadata": {"name": "cm"}, "data": {"a": "1"}}).status == 201
        assert send("POST", DEPLOY, deployment("web")).status == 201
        assert send("POST", PODS, pod("solo")).status == 201
        wait_until(
            lambda: send("GET", f"{PODS}/solo").body["status"].get("phase"),
            lambda phase: phase == "Running",
        )
        yield send


def expect(reply: Any, status: int, reason: str | None, needle: str) -> None:
    assert reply.status == status, reply.raw[:500]
    if status >= 400:
        body = reply.body
        assert (body["kind"], body["apiVersion"], body["status"]) == ("Status", "v1", "Failure")
        assert (body["code"], body["reason"]) == (status, reason)
        assert needle in body["message"]


# -- 1. quantities ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (PODS, pod("p", requests={"cpu": "lots"}), "spec.containers[0].resources.requests.cpu"),
        (PODS, pod("p", limits={"memory": "12XB"}), "spec.containers[0].resources.limits.memory"),
        (PODS, pod("p", requests={"cpu": True}), "spec.containers[0].resources.requests.cpu"),
        (
            DEPLOY,
            deployment("d", requests={"memory": "1..5Gi"}),
            "spec.template.spec.containers[0].resources.requests.memory",
        ),
        (
            f"{NS}/persistentvolumeclaims",
            {
                "metadata": {"name": "v"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "big"}},
                },
            },
            "spec.resources.requests.storage",
        ),
        (
            "/api/v1/nodes",
            {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "eight"}}},
            "status.capacity.cpu",
        ),
        (
            f"{NS}/resourcequotas",
            {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "many"}}},
            "spec.hard.pods",
        ),
        (
            f"{NS}/limitranges",
            {
                "metadata": {"name": "l"},
                "spec": {"limits": [{"type": "Container", "max": {"cpu": "x"}}]},
            },
            "spec.limits[0].max.cpu",
        ),
    ],
)
def test_an_invalid_quantity_is_refused_naming_its_field(
    raw_http: Send, path: str, body: dict[str, Any], field: str
) -> None:
    # the real server fails to decode the object: 400 "... cannot be handled as a Pod:
    # quantities must match the regular expression ..."; kubesim also names the field
    reply = raw_http("POST", path, body)
    expect(reply, 400, "BadRequest", QUANTITY_ERROR)
    assert field in reply.body["message"]
    assert "cannot be handled as a" in reply.body["message"]


def test_an_invalid_quantity_in_a_status_write_is_refused(raw_http: Send) -> None:
    node = raw_http("GET", "/api/v1/nodes/node-a").body
    node["status"]["allocatable"]["cpu"] = "lots"
    reply = raw_http("PUT", "/api/v1/nodes/node-a/status", node)
    expect(reply, 400, "BadRequest", "status.allocatable.cpu")
    reply = raw_http(
        "PATCH",
        "/api/v1/nodes/node-a/status",
        {"status": {"capacity": {"memory": "x"}}},
        content_type=MERGE,
    )
    expect(reply, 422, "Invalid", QUANTITY_ERROR)
    assert reply.body["details"]["causes"][0]["field"] == "patch"


def test_bad_objects_in_the_store_do_not_stop_the_controllers(
    kubesim_thread: ThreadedKubeSim, k8s: client.ApiClient
) -> None:
    """Objects that got into the store without the API's checks (a pod asking for "lots" of
    CPU, one bound to a node with it, a node whose allocatable does not parse, a
    Deployment with replicas "many"): each controller records its failure on the object
    and goes on with the others."""
    store = kubesim_thread.running.store
    catalog = store.catalog

    def plant() -> None:
        pods = catalog.get("", "v1", "pods")
        nodes = catalog.get("", "v1", "nodes")
        deployments = catalog.get("apps", "v1", "deployments")
        assert pods is not None and nodes is not None and deployments is not None
        store.create(pods, "default", pod("greedy", requests={"cpu": "lots"}), system=True)
        placed = pod("placed", requests={"memory": "huge"})
        placed["spec"]["nodeName"] = "node-a"
        store.create(pods, "default", placed, system=True)
        broken = {
            "metadata": {"name": "broken-node"},
            "status": {"allocatable": {"cpu": "eight", "pods": "110"}},
        }
        store.create(nodes, "", broken, system=True)
        bad = deployment("bad")
        bad["spec"]["replicas"] = "many"
        store.create(deployments, "default", bad, system=True)

    kubesim_thread.call(plant)
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    core.create_namespaced_pod("default", pod("fine"))
    apps.create_namespaced_deployment("default", deployment("good"))

    running = wait_until(
        lambda: core.read_namespaced_pod("fine", "default"),
        lambda p: p.status.phase == "Running",
    )
    assert running.spec.node_name in ("node-a", "node-b")
    wait_until(
        lambda: apps.read_namespaced_deployment("good", "default").status.ready_replicas,
        lambda ready: ready == 1,
    )
    failures = wait_until(
        lambda: {
            (e.involved_object.name, e.source.component)
            for e in core.list_namespaced_event("default").items
            if e.reason == "FailedSync"
        },
        lambda seen: (
            {("greedy", "scheduler"), ("placed", "scheduler"), ("bad", "deployments")} <= seen
        ),
    )
    assert all(
        e.type == "Warning"
        for e in core.list_namespaced_event("default").items
        if e.reason == "FailedSync"
    )
    nodes = wait_until(
        lambda: [
            e
            for e in core.list_namespaced_event("default").items
            if e.involved_object.name == "broken-node"
        ],
        bool,
    )
    assert nodes[0].reason == "FailedSync"
    assert ("greedy", "scheduler") in failures
    assert core.read_namespaced_pod("greedy", "default").spec.node_name is None


# -- 2. malformed bodies, options and parameters -------------------------------------------------
def _ingress(host: str, service: str, port: int) -> dict[str, Any]:
    backend = {"service": {"name": service, "port": {"number": port}}}
    path = {"path": "/", "pathType": "Prefix", "backend": backend}
    return {
        "metadata": {"name": "i"},
        "spec": {"rules": [{"host": host, "http": {"paths": [path]}}]},
    }


BAD = [
    # create: a body that does not decode into its kind is 400, naming the field
    ("POST", CM, {"metadata": "x"}, None, 400, "BadRequest", "metadata"),
    ("POST", PODS, {"metadata": {"name": "p"}, "spec": 1.5}, None, 400, "BadRequest", "spec"),
    (
        "POST",
        CM,
        {"metadata": {"name": "c", "labels": "x"}},
        None,
        400,
        "BadRequest",
        "metadata.labels",
    ),
    (
        "POST",
        CM,
        {"metadata": {"name": "c", "labels": {"a": 1}}},
        None,
        400,
        "BadRequest",
        "metadata.labels.a",
    ),
    (
        "POST",
        CM,
        {"metadata": {"name": "c", "annotations": {"a": 1}}},
        None,
        400,
        "BadRequest",
        "metadata.annotations.a",
    ),
    (
        "POST",
        CM,
        {"metadata": {"name": "c", "annotations": ["a"]}},
        None,
        400,
        "BadRequest",
        "metadata.annotations",
    ),
    ("POST", CM, "x", None, 400, "BadRequest", ""),
    ("POST", CM, 5, None, 400, "BadRequest", ""),
    ("POST", CM, [1], None, 400, "BadRequest", ""),
    ("POST", CM, None, None, 400, "BadRequest", ""),
    ("POST", CM, {"metadata": {"name": 5}}, None, 400, "BadRequest", "metadata.name"),
    (
        "POST",
        CM,
        {"metadata": {"generateName": 5}},
        None,
        400,
        "BadRequest",
        "metadata.generateName",
    ),
    (
        "POST",
        CM,
        {"metadata": {"name": "c", "finalizers": [1]}},
        None,
        400,
        "BadRequest",
        "metadata.finalizers[0]",
    ),
    (
        "POST",
        CM,
        {"metadata": {"name": "c", "ownerReferences": "x"}},
        None,
        400,
        "BadRequest",
        "metadata.ownerReferences",
    ),
    (
        "POST",
        CM,
        {"metadata": {"name": "c", "creationTimestamp": "yesterday"}},
        None,
        400,
        "BadRequest",
        "metadata.creationTimestamp",
    ),
    ("POST", CM, {"metadata": {"name": "c"}, "data": {"a": 1}}, None, 400, "BadRequest", "data.a"),
    (
        "POST",
        f"{NS}/secrets",
        {"metadata": {"name": "s"}, "data": {"a": "not base64!"}},
        None,
        400,
        "BadRequest",
        "data.a",
    ),
    (
        "POST",
        DEPLOY,
        {**deployment("d"), "spec": {**deployment("d")["spec"], "replicas": "3"}},
        None,
        400,
        "BadRequest",
        "spec.replicas",
    ),
    (
        "POST",
        DEPLOY,
        {**deployment("d"), "spec": {**deployment("d")["spec"], "replicas": 1.5}},
        None,
        400,
        "BadRequest",
        "spec.replicas",
    ),
    (
        "POST",
        PODS,
        {"metadata": {"name": "p"}, "spec": {"containers": "x"}},
        None,
        400,
        "BadRequest",
        "spec.containers",
    ),
    (
        "POST",
        PODS,
        {"metadata": {"name": "p"}, "spec": {"containers": [5]}},
        None,
        400,
        "BadRequest",
        "spec.containers[0]",
    ),
    (
        "POST",
        f"{NS}/services",
        {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "targetPort": 1.5}]}},
        None,
        400,
        "BadRequest",
        "spec.ports[0].targetPort",
    ),
    (
        "POST",
        "/api/v1/namespaces",
        {"metadata": {"name": "n"}, "spec": []},
        None,
        400,
        "BadRequest",
        "spec",
    ),
    ("POST", CM, b"{", None, 400, "BadRequest", "could not be decoded"),
    (
        "POST",
        CM,
        b'{"metadata": {"name": "c"}, "data": {"a": NaN}}',
        None,
        400,
        "BadRequest",
        "could not be decoded",
    ),
    ("POST", CM, b"[" * 5000 + b"]" * 5000, None, 400, "BadRequest", ""),
    (
        "POST",
        CM,
        {"metadata": {"name": "c"}},
        "text/plain",
        415,
        "UnsupportedMediaType",
        "application/json",
    ),
    (
        "POST",
        CM,
        {"metadata": {"name": "c"}},
        "application/vnd.kubernetes.protobuf",
        415,
        "UnsupportedMediaType",
        "JSON",
    ),
    # names that are not DNS names are invalid (422)
    ("POST", CM, {"metadata": {"name": "Bad_Name"}}, None, 422, "Invalid", "metadata.name"),
    (
        "POST",
        "/api/v1/namespaces",
        {"metadata": {"name": "Bad.NS"}},
        None,
        422,
        "Invalid",
        "metadata.name",
    ),
    (
        "POST",
        "/api/v1/nodes",
        {"metadata": {"name": "Node_A"}},
        None,
        422,
        "Invalid",
        "metadata.name",
    ),
    (
        "POST",
        CM,
        {"metadata": {"name": "c", "annotations": {"bad key!": "x"}}},
        None,
        422,
        "Invalid",
        "metadata.annotations",
    ),
    # an Ingress's host, backend Service name and port are checked as the API server does
    *(
        (
            "POST",
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            _ingress(host, service, port),
            None,
            422,
            "Invalid",
            field,
        )
        for host, service, port, field in (
            ("Bad_Host.example.com", "web", 80, "spec.rules[0].host"),
            ("a.example.com", "Web_1", 80, "backend.service.name"),
            ("a.example.com", "web", 70000, "backend.service.port.number"),
        )
    ),
    # patches
    ("PATCH", f"{CM}/cm", "x", MERGE, 400, "BadRequest", ""),
    ("PATCH", f"{CM}/cm", 5, MERGE, 400, "BadRequest", ""),
    ("PATCH", f"{CM}/cm", None, MERGE, 400, "BadRequest", ""),
    ("PATCH", f"{CM}/cm", [1], MERGE, 422, "Invalid", "patch"),
    ("PATCH", f"{CM}/cm", {"metadata": "x"}, MERGE, 422, "Invalid", "patch"),
    ("PATCH", f"{CM}/cm", {"data": {"a": 5}}, MERGE, 422, "Invalid", "data.a"),
    ("PATCH", f"{CM}/cm", "x", SMP, 400, "BadRequest", ""),
    ("PATCH", f"{CM}/cm", {"metadata": {"labels": "x"}}, SMP, 422, "Invalid", "metadata.labels"),
    ("PATCH", f"{CM}/cm", {"$patch": "sideways"}, SMP, 400, "BadRequest", "sideways"),
    ("PATCH", f"{CM}/cm", {"metadata": {"$retainKeys": "x"}}, SMP, 400, "BadRequest", "retainKeys"),
    (
        "PATCH",
        f"{CM}/cm",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": 5}},
        SMP,
        400,
        "BadRequest",
        "primitive list",
    ),
    (
        "PATCH",
        f"{CM}/cm",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": [{"a": 1}]}},
        SMP,
        200,
        None,
        "",
    ),
    ("PATCH", f"{CM}/cm", {"op": "add"}, JSON_PATCH, 400, "BadRequest", ""),
    ("PATCH", f"{CM}/cm", [1], JSON_PATCH, 400, "BadRequest", ""),
    ("PATCH", f"{CM}/cm", [{"op": "bogus", "path": "/data"}], JSON_PATCH, 422, "Invalid", ""),
    ("PATCH", f"{CM}/cm", [{"op": "add", "path": 5, "value": 1}], JSON_PATCH, 422, "Invalid", ""),
    (
        "PATCH",
        f"{CM}/cm",
        [{"op": "replace", "path": "", "value": "x"}],
        JSON_PATCH,
        422,
        "Invalid",
        "patch",
    ),
    (
        "PATCH",
        f"{CM}/cm",
        [{"op": "add", "path": "/metadata/labels", "value": "x"}],
        JSON_PATCH,
        422,
        "Invalid",
        "metadata.labels",
    ),
    (
        "PATCH",
        f"{CM}/cm",
        {"data": {}},
        "application/json",
        415,
        "UnsupportedMediaType",
        "merge-patch",
    ),
    (
        "PATCH",
        f"{CM}/cm",
        {"data": {}},
        "application/apply-patch+yaml",
        415,
        "UnsupportedMediaType",
        "apply",
    ),
    # deletes: DeleteOptions that do not decode are 400, an unknown policy 422
    ("DELETE", f"{CM}/cm", "x", None, 400, "BadRequest", "DeleteOptions"),
    ("DELETE", f"{CM}/cm", [1], None, 400, "BadRequest", "DeleteOptions"),
    ("DELETE", f"{CM}/cm", {"preconditions": "x"}, None, 400, "BadRequest", "preconditions"),
    (
        "DELETE",
        f"{CM}/cm",
        {"gracePeriodSeconds": "x"},
        None,
        400,
        "BadRequest",
        "gracePeriodSeconds",
    ),
    (
        "DELETE",
        f"{CM}/cm",
        {"propagationPolicy": "Sideways"},
        None,
        422,
        "Invalid",
        "propagationPolicy",
    ),
    (
        "DELETE",
        f"{CM}/cm?propagationPolicy=Sideways",
        None,
        None,
        422,
        "Invalid",
        "propagationPolicy",
    ),
    (
        "DELETE",
        f"{CM}/cm?gracePeriodSeconds=soon",
        None,
        None,
        400,
        "BadRequest",
        "gracePeriodSeconds",
    ),
    ("DELETE", f"{CM}?propagationPolicy=Sideways", None, None, 422, "Invalid", "propagationPolicy"),
    # query parameters
    ("GET", f"{PODS}?limit=abc", None, None, 400, "BadRequest", "limit"),
    ("GET", f"{PODS}?limit=99999999999999999999999", None, None, 400, "BadRequest", "limit"),
    ("GET", f"{NS}/secrets?limit=-5", None, None, 200, None, ""),
    ("GET", f"{PODS}?resourceVersion=abc", None, None, 400, "BadRequest", "resourceVersion"),
    ("GET", f"{PODS}?resourceVersion=-1", None, None, 400, "BadRequest", "resourceVersion"),
    ("GET", f"{PODS}/solo?resourceVersion=x1", None, None, 400, "BadRequest", "resourceVersion"),
    (
        "GET",
        f"{PODS}?watch=1&resourceVersion=abc",
        None,
        None,
        400,
        "BadRequest",
        "resourceVersion",
    ),
    ("GET", f"{PODS}?watch=1&timeoutSeconds=abc", None, None, 400, "BadRequest", "timeoutSeconds"),
    ("GET", f"{PODS}?watch=1&timeoutSeconds=1.5", None, None, 400, "BadRequest", "timeoutSeconds"),
    ("GET", f"{PODS}?labelSelector=a%20in%20(", None, None, 400, "BadRequest", "unable to parse"),
    ("GET", f"{PODS}?fieldSelector=x", None, None, 400, "BadRequest", "invalid selector"),
    ("GET", f"{PODS}?fieldSelector=spec.foo%3D1", None, None, 400, "BadRequest", "spec.foo"),
    ("GET", f"{PODS}?limit=1&continue=abc", None, None, 400, "BadRequest", "continue"),
    (
        "GET",
        f"{PODS}?limit=1&continue=" + token({"rv": 1, "start": []}),
        None,
        None,
        400,
        "BadRequest",
        "continue",
    ),
    (
        "GET",
        f"{PODS}?limit=1&continue=" + token({"rv": 1e999, "start": ["a", "b"]}).replace("=", "%3D"),
        None,
        None,
        400,
        "BadRequest",
        "continue",
    ),
    ("POST", f"{CM}?dryRun=Sometimes", {"metadata": {"name": "c"}}, None, 422, "Invalid", "dryRun"),
    (
        "POST",
        f"{CM}?fieldValidation=Loose",
        {"metadata": {"name": "c"}},
        None,
        422,
        "Invalid",
        "fieldValidation",
    ),
    # subresources
    ("POST", f"{PODS}/solo/binding", "x", None, 400, "BadRequest", "Binding"),
    ("POST", f"{PODS}/solo/binding", {"target": {}}, None, 422, "Invalid", "target.name"),
    (
        "POST",
        f"{PODS}/solo/binding",
        {"target": {"name": "node-b"}},
        None,
        409,
        "Conflict",
        "already assigned",
    ),
    ("POST", f"{PODS}/solo/eviction", 7, None, 400, "BadRequest", "Eviction"),
    (
        "PUT",
        f"{DEPLOY}/web/scale",
        {"spec": {"replicas": "x"}},
        None,
        400,
        "BadRequest",
        "spec.replicas",
    ),
    (
        "PATCH",
        f"{DEPLOY}/web/scale",
        {"spec": {"replicas": "x"}},
        MERGE,
        422,
        "Invalid",
        "spec.replicas",
    ),
    ("PATCH", f"{DEPLOY}/web/scale", "x", MERGE, 400, "BadRequest", ""),
    ("GET", f"{PODS}/solo/log?tailLines=abc", None, None, 400, "BadRequest", "tailLines"),
    ("GET", f"{PODS}/solo/log?tailLines=-1", None, None, 422, "Invalid", "tailLines"),
    ("GET", f"{PODS}/solo/log?sinceSeconds=0", None, None, 422, "Invalid", "sinceSeconds"),
    ("POST", f"{PODS}/solo/log", {}, None, 405, "MethodNotAllowed", ""),
    ("DELETE", f"{PODS}/solo/status", None, None, 405, "MethodNotAllowed", ""),
    (
        "PUT",
        "/api/v1/namespaces/default/finalize",
        {"spec": {"finalizers": "x"}},
        None,
        400,
        "BadRequest",
        "spec.finalizers",
    ),
    # CRDs kubesim could not validate objects against are refused
    (
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        {
            "metadata": {"name": "things.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "things", "kind": "Thing"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "objekt"}},
                    }
                ],
            },
        },
        None,
        422,
        "Invalid",
        "openAPIV3Schema",
    ),
    (
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        {
            "metadata": {"name": "th/ings.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "th/ings", "kind": "Thing"},
                "versions": [{"name": "v1", "served": True, "storage": True}],
            },
        },
        None,
        422,
        "Invalid",
        "spec.names.plural",
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "content_type", "status", "reason", "needle"),
    BAD,
    ids=[f"{i:02d}-{c[0]}-{c[1].rsplit('/', 1)[-1][:30]}" for i, c in enumerate(BAD)],
)
def test_malformed_requests_get_the_real_servers_4xx(
    world: Send,
    method: str,
    path: str,
    body: Any,
    content_type: str | None,
    status: int,
    reason: str | None,
    needle: str,
) -> None:
    options: dict[str, Any] = {"content_type": content_type or "application/json"}
    if isinstance(body, bytes):
        options["raw"] = body
    elif body is not None or method in ("POST", "PUT", "PATCH"):
        options["raw"] = json.dumps(body).encode()
    expect(world(method, path, **options), status, reason, needle)
    # and the server still answers, its controllers still run
    assert world("GET", f"{PODS}/solo").body["status"]["phase"] == "Running"


# -- 3. unknown fields and fieldValidation ------------------------------------------------------
def typo(name: str) -> dict[str, Any]:
    obj = deployment(name)
    obj["spec"]["replicaz"] = 2
    obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicee"] = "Always"
    return obj


UNKNOWN = [  # in the order of the document, as the real decoder reports them
    'unknown field "spec.template.spec.containers[0].imagePullPolicee"',
    'unknown field "spec.replicaz"',
]


def test_unknown_fields_are_dropped_with_a_warning_by_default(raw_http: Send) -> None:
    reply = raw_http("POST", DEPLOY, typo("warned"))
    assert reply.status == 201
    assert reply.warnings == [f"299 - {json.dumps(w)}" for w in UNKNOWN]
    stored = raw_http("GET", f"{DEPLOY}/warned").body
    assert "replicaz" not in stored["spec"]
    assert "imagePullPolicee" not in stored["spec"]["template"]["spec"]["containers"][0]


def test_field_validation_strict_refuses_unknown_and_duplicate_fields(raw_http: Send) -> None:
    reply = raw_http("POST", f"{DEPLOY}?fieldValidation=Strict", typo("strict"))
    expect(reply, 400, "BadRequest", "strict decoding error: " + ", ".join(UNKNOWN))
    assert raw_http("GET", f"{DEPLOY}/strict").status == 404
    duplicated = b'{"metadata": {"name": "twice", "name": "twice"}, "data": {"a": "1"}}'
    reply = raw_http("POST", f"{CM}?fieldValidation=Strict", raw=duplicated)
    expect(reply, 400, "BadRequest", 'duplicate field "metadata.name"')
    reply = raw_http("POST", CM, raw=duplicated)
    assert reply.status == 201
    assert reply.warnings == ['299 - "duplicate field \\"metadata.name\\""']
    # a patch is held to the same rules
    reply = raw_http(
        "PATCH",
        f"{DEPLOY}/warned?fieldValidation=Strict",
        {"spec": {"bogus": 1}},
        content_type=MERGE,
    )
    assert reply.status == 404
    assert raw_http("POST", DEPLOY, deployment("patched")).status == 201
    reply = raw_http(
        "PATCH",
        f"{DEPLOY}/patched?fieldValidation=Strict",
        {"spec": {"bogus": 1}},
        content_type=MERGE,
    )
    expect(reply, 400, "BadRequest", 'unknown field "spec.bogus"')
    reply = raw_http("PATCH", f"{DEPLOY}/patched", {"spec": {"bogus": 1}}, content_type=SMP)
    assert (reply.status, reply.warnings) == (200, ['299 - "unknown field \\"spec.bogus\\""'])
    assert "bogus" not in reply.body["spec"]


def test_warnings_are_bounded_like_the_real_servers(raw_http: Send) -> None:
    many = {"metadata": {"name": "many"}, **{f"bogus{i:04d}": i for i in range(2000)}}
    many["x" * 5000] = 1
    reply = raw_http("POST", CM, many)
    assert reply.status == 201
    shown = [json.loads(w.removeprefix("299 - ")) for w in reply.warnings]
    assert shown[0] == 'unknown field "bogus0000"'
    assert sum(len(w) for w in shown) <= 4096
    assert len(shown) <= 50  # so that Python's http.client (at most 100 headers) reads it
    assert all(len(w) <= 256 for w in shown)


def test_field_validation_ignore_drops_unknown_fields_silently(raw_http: Send) -> None:
    reply = raw_http("POST", f"{DEPLOY}?fieldValidation=Ignore", typo("ignored"))
    assert (reply.status, reply.warnings) == (201, [])
    assert "replicaz" not in raw_http("GET", f"{DEPLOY}/ignored").body["spec"]


def test_objects_kubesim_serves_round_trip_without_unknown_fields(raw_http: Send) -> None:
    """What the controllers write (statuses, events, replica sets, PVs) is all known to the
    schema: read back and written again under Strict, nothing is refused."""
    assert raw_http("POST", DEPLOY, deployment("round")).status == 201
    wait_until(
        lambda: raw_http("GET", f"{DEPLOY}/round").body.get("status", {}).get("readyReplicas"),
        lambda ready: ready == 1,
    )
    for path in (f"{DEPLOY}/round", "/api/v1/nodes/node-a"):
        obj = raw_http("GET", path).body
        assert raw_http("PUT", f"{path}?fieldValidation=Strict", obj).status == 200
    for kind_path in (PODS, f"{NS}/events", "/apis/apps/v1/namespaces/default/replicasets"):
        for item in raw_http("GET", kind_path).body["items"]:
            path = f"{kind_path}/{item['metadata']['name']}"
            reply = raw_http("PUT", f"{path}?fieldValidation=Strict&dryRun=All", item)
            assert reply.status == 200, reply.raw[:300]


CRD = {
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer"},
                                    "extra": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}
GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"


def test_custom_resources_are_pruned_under_the_same_field_validation(raw_http: Send) -> None:
    assert (
        raw_http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD).status
        == 201
    )
    gadget = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"size": 1, "colour": "red", "extra": {"anything": 1}},
    }
    reply = raw_http("POST", f"{GADGETS}?fieldValidation=Strict", gadget)
    expect(reply, 400, "BadRequest", 'strict decoding error: unknown field "spec.colour"')
    reply = raw_http("POST", GADGETS, gadget)
    assert (reply.status, reply.warnings) == (201, ['299 - "unknown field \\"spec.colour\\""'])
    assert reply.body["spec"] == {"size": 1, "extra": {"anything": 1}}
    reply = raw_http("POST", GADGETS, {**gadget, "metadata": {"name": "h", "labels": 5}})
    expect(reply, 400, "BadRequest", "metadata.labels")
    reply = raw_http(
        "POST", GADGETS, {**gadget, "metadata": {"name": "i"}, "spec": {"size": "big"}}
    )
    expect(reply, 422, "Invalid", "spec.size")


# -- 4. limits -------------------------------------------------------------------------------
def test_a_body_over_3_mib_is_refused_with_413(raw_http: Send) -> None:
    huge = {"metadata": {"name": "huge"}, "data": {"a": "x" * (3 * 2**20)}}
    reply = raw_http("POST", CM, huge)
    expect(reply, 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
    assert raw_http("GET", f"{CM}/huge").status == 404
    assert raw_http("GET", "/api/v1/namespaces/default").status == 200


def test_an_object_over_the_etcd_limit_is_refused_with_413(raw_http: Send) -> None:
    big = {"metadata": {"name": "big"}, "data": {"a": "x" * (2 * 2**20)}}
    reply = raw_http("POST", CM, big)
    expect(reply, 413, "RequestEntityTooLarge", "request is too large")
    assert raw_http("GET", f"{CM}/big").status == 404
    assert raw_http("POST", CM, {"metadata": {"name": "small"}, "data": {"a": "x"}}).status == 201
    # a JSON patch cannot grow one past the limits either
    reply = raw_http(
        "PATCH",
        f"{CM}/small",
        [{"op": "test", "path": "/data/a", "value": "x"}] * 10_001,
        content_type=JSON_PATCH,
    )
    expect(reply, 413, "RequestEntityTooLarge", "maximum operations in a JSON patch is 10000")
    grow = [{"op": "add", "path": "/data/b", "value": "y" * 100_000}]
    grow += [{"op": "copy", "from": "/data/b", "path": f"/data/c{i}"} for i in range(40)]
    reply = raw_http("PATCH", f"{CM}/small", grow, content_type=JSON_PATCH)
    expect(reply, 422, "Invalid", "copy")
    doubling = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "x"}}]
    doubling += [
        {"op": "copy", "from": "/metadata", "path": f"/metadata/annotations/k{i}"}
        for i in range(1, 40)
    ]
    reply = raw_http("PATCH", f"{CM}/small", doubling, content_type=JSON_PATCH)
    assert reply.status in (413, 422), reply.raw[:300]


def test_yaml_bodies_cannot_expand_or_nest_without_bound(raw_http: Send) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)
    ]
    bomb = "\n".join(["metadata: {name: bomb}", "data:", *("  " + line for line in lines)])
    reply = raw_http("POST", CM, raw=bomb.encode(), content_type="application/yaml")
    expect(reply, 400, "BadRequest", "excessive aliasing")
    loop = b"metadata: {name: loop}\ndata: &d {a: *d}\n"
    reply = raw_http("POST", CM, raw=loop, content_type="application/yaml")
    expect(reply, 400, "BadRequest", "")
    fine = b"metadata: {name: yaml, labels: {day: '2024-01-01'}}\ndata: {when: 2024-01-01}\n"
    reply = raw_http("POST", CM, raw=fine, content_type="application/yaml")
    assert reply.status == 201, reply.raw[:300]
    assert reply.body["data"] == {"when": "2024-01-01"}


def test_deep_nesting_is_refused(raw_http: Send) -> None:
    deep: Any = "x"
    for _ in range(150):
        deep = {"a": deep}
    reply = raw_http("POST", CM, {"metadata": {"name": "deep"}, "data": deep})
    expect(reply, 400, "BadRequest", "levels deep")
