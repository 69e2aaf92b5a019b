"""A bounded property-based fuzz of kubesim's REST API, over HTTP on a real server.

Requests are built from the server's own discovery — every resource and subresource, core
and grouped, namespaced and cluster-scoped, with and without names — with random methods,
query parameters, media types and bodies (any JSON, Kubernetes-shaped objects with wrong
types in random places, patches, YAML, bytes that are not JSON at all). Whatever comes in,
the server must answer: never a 5xx, never a dropped connection, and every error a
`Status`. Afterwards the simulator must still work: a Deployment gets running pods.

`KUBESIM_FUZZ_EXAMPLES` sets the number of requests (default 500; the run is
derandomized, so it is the same run each time); `KUBESIM_FUZZ_REPORT=path` writes the
counts (requests by method and media type, answers by status code) there as JSON, and
`KUBESIM_FUZZ_LOG=path` each request with the start of its answer, one JSON line each.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import string
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesim.testing import ThreadedKubeSim, wait_until

EXAMPLES = int(os.environ.get("KUBESIM_FUZZ_EXAMPLES", "500"))
REPORT = os.environ.get("KUBESIM_FUZZ_REPORT")
LOG = os.environ.get("KUBESIM_FUZZ_LOG")  # every request and the start of its answer

MEDIA_TYPES = [
    "application/json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "",
]
METHODS = ["GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
NAMES = ["fuzz-a", "fuzz-a", "fuzz-b", "fuzz-c"]
NAMESPACES = ["fuzz", "fuzz", "default", "absent"]

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.fuzz.example.com"},
    "spec": {
        "group": "fuzz.example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.size",
                        "statusReplicasPath": ".status.size",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer", "minimum": 0},
                                    "colour": {"type": "string", "enum": ["red", "blue"]},
                                    "extra": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


def container() -> dict[str, Any]:
    return {
        "name": "app",
        "image": "nginx:1.27",
        "ports": [{"containerPort": 80}],
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "env": [{"name": "A", "value": "1"}],
    }


def template(name: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container()]}}


# a valid body for each kind the fuzz shapes objects after; others get a generic one
SPECS: dict[str, dict[str, Any]] = {
    "Pod": {"spec": {"containers": [container()]}},
    "Deployment": {
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "template": template("x"),
        }
    },
    "StatefulSet": {
        "spec": {
            "replicas": 1,
            "serviceName": "x",
            "selector": {"matchLabels": {"app": "x"}},
            "template": template("x"),
        }
    },
    "ReplicaSet": {
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "template": template("x"),
        }
    },
    "Service": {
        "spec": {
            "type": "NodePort",
            "selector": {"app": "x"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
        }
    },
    "ConfigMap": {"data": {"a": "1", "b": "two"}},
    "Secret": {"data": {"a": "MQ=="}, "stringData": {"b": "2"}},
    "PersistentVolumeClaim": {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "beta2",
            "resources": {"requests": {"storage": "1Gi"}},
        }
    },
    "Namespace": {"spec": {"finalizers": ["kubernetes"]}},
    "Node": {
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "4"}},
    },
    "Widget": {"spec": {"size": 1, "colour": "red", "extra": {"a": [1, 2]}}},
    "Scale": {"spec": {"replicas": 2}},
    "Binding": {"target": {"kind": "Node", "name": "node-a"}},
    "Eviction": {"deleteOptions": {"gracePeriodSeconds": 0}},
    "DeleteOptions": {"propagationPolicy": "Background", "preconditions": {"uid": "x"}},
}


@dataclass(frozen=True)
class Resource:
    """One entry of discovery: `pods`, `pods/status`, `deployments/scale`…"""

    prefix: str  # /api/v1 or /apis/<group>/<version>
    api_version: str
    plural: str
    sub: str | None
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]

    def methods(self, named: bool) -> list[str]:
        """The methods its verbs allow, on the object (`named`) or on the collection."""
        verbs = {
            "get": named,
            "list": not named,
            "watch": not named,
            "create": not named or self.sub is not None,
            "update": named,
            "patch": named,
            "delete": named,
            "deletecollection": not named,
        }
        methods = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT"}
        methods |= {"patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE"}
        return sorted({methods[v] for v in self.verbs if verbs.get(v)}) or ["GET"]


@dataclass
class Tally:
    by_request: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)
    by_method_status: Counter[str] = field(default_factory=Counter)


class Client:
    """One keep-alive connection, opened again only when the server says it closes it."""

    def __init__(self, url: str) -> None:
        self.netloc = urlsplit(url).netloc
        self.conn: http.client.HTTPConnection | None = None

    def send(
        self, method: str, path: str, body: bytes | None, media: str, *, stream: bool
    ) -> tuple[int, dict[str, str], bytes]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.netloc, timeout=30)
        headers = {"Accept": "application/json"}
        if media:
            headers["Content-Type"] = media
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        status = response.status
        found = {k.lower(): v for k, v in response.getheaders()}
        if stream and status < 300 and method == "GET":
            # a watch or a followed log: take what is there now and hang up
            self.close()
            return status, found, b""
        data = response.read()
        if response.will_close:
            self.close()
        return status, found, data

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def discover(url: str) -> list[Resource]:
    client = Client(url)

    def get(path: str) -> Any:
        status, _, data = client.send("GET", path, None, "", stream=False)
        assert status == 200, (path, data[:200])
        return json.loads(data)

    try:
        versions = [v["groupVersion"] for g in get("/apis")["groups"] for v in g["versions"]]
        return [
            Resource(
                prefix,
                api_version,
                entry["name"].partition("/")[0],
                entry["name"].partition("/")[2] or None,
                entry["kind"],
                entry["namespaced"],
                tuple(entry["verbs"]),
            )
            for prefix, api_version in [("/api/v1", "v1")] + [(f"/apis/{v}", v) for v in versions]
            for entry in get(prefix)["resources"]
        ]
    finally:
        client.close()


# -- strategies --------------------------------------------------------------------------------
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(
        ["", "lots", "1Gi", "100m", "-1", "2024-01-01T00:00:00Z", "a/b", "Bad_Name", "é"]
    )
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "metadata",
        "spec",
        "status",
        "name",
        "labels",
        "data",
        "replicas",
        "containers",
        "bogus",
        "$patch",
    ]
)
TEXT = st.text(alphabet=string.printable + "éü\u2028\x00", max_size=16)


def _paths(obj: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, (*at, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _paths(value, (*at, i))


@st.composite
def mutated(draw: st.DrawFn, obj: dict[str, Any], most: int = 3) -> Any:
    """`obj` with up to `most` random places given a wrong value, dropped, or added to."""
    obj = json.loads(json.dumps(obj))
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]).filter(lambda n: n <= most))):
        paths = list(_paths(obj))
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
        if not path:
            if action == "replace":
                return draw(JSON_VALUES)
            continue
        parent = obj
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        if action == "replace":
            parent[last] = draw(JSON_VALUES)
        elif action == "drop":
            del parent[last]
        elif isinstance(parent[last], dict):
            parent[last][draw(KEYS | st.text(max_size=6))] = draw(JSON_VALUES)
    return obj


@st.composite
def shaped(
    draw: st.DrawFn, resource: Resource, name: str | None, namespace: str | None, most: int = 3
) -> Any:
    """An object of the resource's kind (or its subresource's), mutated in up to `most`
    places."""
    kind = {"scale": "Scale", "binding": "Binding", "eviction": "Eviction"}.get(
        resource.sub or "", resource.kind
    )
    meta: dict[str, Any] = {"name": name or draw(st.sampled_from(NAMES))}
    if draw(st.booleans()):
        meta["labels"] = {"app": "x", draw(st.sampled_from(["tier", "a/b", "Bad Key"])): "y"}
    if namespace and draw(st.booleans()):
        meta["namespace"] = namespace
    if draw(st.integers(0, 4)) == 0:
        meta["resourceVersion"] = draw(st.sampled_from(["1", "999999", "x"]))
    obj = {"apiVersion": resource.api_version, "kind": kind, "metadata": meta}
    obj.update(json.loads(json.dumps(SPECS.get(kind, {"spec": {"anything": 1}}))))
    return draw(mutated(obj, most))


def json_patch_ops() -> st.SearchStrategy[Any]:
    op = st.fixed_dictionaries(
        {
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
            "path": st.sampled_from(
                [
                    "/metadata/labels/x",
                    "/spec/replicas",
                    "/data/a",
                    "",
                    "/",
                    "/spec/template/spec/containers/0",
                    "x",
                ]
            )
            | TEXT,
        },
        optional={"value": JSON_VALUES, "from": st.sampled_from(["/metadata", "/spec", "/data"])},
    )
    return st.lists(op | JSON_VALUES, max_size=4)


@st.composite
def body(
    draw: st.DrawFn, resource: Resource, name: str | None, namespace: str | None, media: str
) -> bytes | None:
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return None
    if choice == 1:
        return draw(st.binary(max_size=64))
    if choice == 2:
        return json.dumps(draw(JSON_VALUES)).encode()
    if (choice == 3 and media == "application/json-patch+json") or choice == 4:
        return json.dumps(draw(json_patch_ops())).encode()
    if choice == 5:
        text = draw(
            st.sampled_from(
                ["a: &a [1, *a]", "x: [1, 2", "- 1\n- 2", "k: v\nk: w", "{a: 2024-01-01}"]
            )
        )
        return text.encode()
    value = draw(shaped(resource, name, namespace))
    encoded = json.dumps(value).encode()
    if choice == 6:
        return encoded[: draw(st.integers(0, len(encoded)))]  # cut short
    return encoded


NUMBER = st.sampled_from(
    ["0", "1", "2", "-5", "abc", "1.5", "99999999999999999999999", ""]
) | st.integers(-3, 500).map(str)
FLAG = st.sampled_from(["true", "1", "false", "0", "True", "yes", ""])
CONTINUE = st.sampled_from(
    [
        "abc",
        base64.urlsafe_b64encode(b'{"rv": 1, "start": ["fuzz", "fuzz-a"]}').decode(),
        base64.urlsafe_b64encode(b'{"rv": 1e999, "start": []}').decode(),
        base64.urlsafe_b64encode(b"[]").decode(),
    ]
)
PARAMETERS: dict[str, st.SearchStrategy[str]] = {
    "limit": NUMBER,
    "continue": CONTINUE | TEXT,
    "resourceVersion": st.sampled_from(["0", "1", "abc", "-1", "18446744073709551616"]) | TEXT,
    "watch": FLAG,
    "labelSelector": st.sampled_from(
        ["app=x", "app in (x,y)", "!app", "a in (", "x=y=z", "tier notin (a)", "key"]
    )
    | TEXT,
    "fieldSelector": st.sampled_from(
        ["metadata.name=fuzz-a", "spec.nodeName=node-a", "x", "status.phase!=Running", "spec.foo=1"]
    )
    | TEXT,
    "timeoutSeconds": st.sampled_from(["1", "0", "-1", "abc", "1.5"]),
    "fieldValidation": st.sampled_from(["Strict", "Warn", "Ignore", "strict", "Loose"]),
    "dryRun": st.sampled_from(["All", "All", "Sometimes"]),
    "propagationPolicy": st.sampled_from(["Foreground", "Background", "Orphan", "Sideways"]),
    "gracePeriodSeconds": NUMBER,
    "allowWatchBookmarks": FLAG,
    "sendInitialEvents": FLAG,
    "tailLines": NUMBER,
    "sinceSeconds": NUMBER,
    "follow": FLAG,
    "container": st.sampled_from(["app", "c", "nope"]),
    "timestamps": FLAG,
    "includeObject": st.sampled_from(["None", "Object", "Metadata", "x"]),
}


@st.composite
def query(draw: st.DrawFn, most: int = 3) -> dict[str, str]:
    """A few of the parameters the API takes, with good and bad values."""
    names = draw(st.lists(st.sampled_from(sorted(PARAMETERS)), max_size=most, unique=True))
    return {name: draw(PARAMETERS[name]) for name in names}


@dataclass
class Call:
    method: str
    path: str
    media: str
    body: bytes | None
    stream: bool


def _path(resource: Resource, namespace: str | None, name: str | None) -> str:
    path = resource.prefix
    if namespace is not None:
        path += f"/namespaces/{quote(namespace, safe='')}"
    path += f"/{resource.plural}"
    if name is not None:
        path += f"/{quote(name, safe='')}"
        if resource.sub:
            path += f"/{resource.sub}"
    return path


def _with_query(path: str, params: dict[str, str]) -> str:
    streams = [params.get(p) for p in ("watch", "follow")]
    if any(value not in (None, "0", "false", "False") for value in streams):
        params["timeoutSeconds"] = "1"  # keep a stream from outliving the run
    return f"{path}?{urlencode(params)}" if params else path


@st.composite
def careful_call(draw: st.DrawFn, resources: list[Resource]) -> Call:
    """A request as a client would send it, with at most one thing wrong: a create, an
    update, a patch, a read or a delete, in an existing namespace, with a JSON body of the
    right kind — so that writes get through and the controllers are kept busy too."""
    action = draw(st.sampled_from(["create", "create", "update", "patch", "read", "delete"]))
    verb = {"create": "create", "update": "update", "patch": "patch", "read": "get"}
    wanted = verb.get(action, "delete")
    fits = [
        r
        for r in resources
        if wanted in r.verbs
        and (r.sub is None) == (action != "update" or r.sub is None or r.sub in ("status", "scale"))
    ]
    resource = draw(st.sampled_from(fits or resources))
    name = None if action == "create" and resource.sub is None else draw(st.sampled_from(NAMES))
    namespace = draw(st.sampled_from(NAMESPACES[:3])) if resource.namespaced else None
    params = draw(query(most=1))
    method = {"create": "POST", "update": "PUT", "patch": "PATCH", "read": "GET"}.get(
        action, "DELETE"
    )
    media = "application/json"
    payload = None
    if method in ("POST", "PUT"):
        payload = json.dumps(draw(shaped(resource, name, namespace, most=1))).encode()
    elif method == "PATCH":
        media = draw(st.sampled_from(MEDIA_TYPES[1:4]))
        obj = draw(shaped(resource, name, namespace, most=1))
        if media == MEDIA_TYPES[3]:
            obj = [{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}}]
        elif isinstance(obj, dict):
            obj = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        payload = json.dumps(obj).encode()
    path = _with_query(_path(resource, namespace, name), params)
    return Call(method, path, media, payload, "watch" in params or "follow" in params)


@st.composite
def wild_call(draw: st.DrawFn, resources: list[Resource]) -> Call:
    """Anything at all: any method, names and namespaces that may not exist or be names,
    several parameters, any media type, any body."""
    resource = draw(st.sampled_from(resources))
    named = resource.sub is not None or draw(st.integers(0, 2)) > 0
    name = None
    if named:
        name = draw(st.sampled_from(NAMES)) if draw(st.integers(0, 4)) else draw(TEXT)
    namespace = None
    if resource.namespaced and (named or draw(st.integers(0, 3))):
        namespace = draw(st.sampled_from(NAMESPACES)) if draw(st.integers(0, 5)) else draw(TEXT)
    params = draw(query())
    # mostly what discovery says the resource takes, sometimes anything at all
    listed = resource.methods(name is not None)
    method = draw(st.sampled_from(listed if draw(st.integers(0, 4)) else METHODS))
    if method == "PATCH" and draw(st.integers(0, 4)):
        media = draw(st.sampled_from(MEDIA_TYPES[1:4]))
    elif method in ("POST", "PUT") and draw(st.integers(0, 4)):
        media = draw(st.sampled_from(["application/json", "application/json", "application/yaml"]))
    else:
        media = draw(st.sampled_from(MEDIA_TYPES))
    payload = None
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        payload = draw(body(resource, name, namespace, media))
    path = _with_query(_path(resource, namespace, name), params)
    return Call(method, path, media, payload, "watch" in params or "follow" in params)


def calls(resources: list[Resource]) -> st.SearchStrategy[Call]:
    return careful_call(resources) | wild_call(resources)


# -- the test ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fuzzed() -> Iterator[tuple[ThreadedKubeSim, list[Resource]]]:
    with ThreadedKubeSim() as sim:
        client = Client(sim.url)

        def post(path: str, obj: dict[str, Any]) -> None:
            status, _, data = client.send(
                "POST", path, json.dumps(obj).encode(), "application/json", stream=False
            )
            assert status == 201, data[:300]

        post("/api/v1/namespaces", {"metadata": {"name": "fuzz"}})
        post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
        for kind, path in (
            ("Namespace", "/api/v1/namespaces"),
            ("ConfigMap", "/api/v1/namespaces/fuzz/configmaps"),
            ("Pod", "/api/v1/namespaces/fuzz/pods"),
            ("Deployment", "/apis/apps/v1/namespaces/fuzz/deployments"),
            ("Service", "/api/v1/namespaces/fuzz/services"),
            ("Secret", "/api/v1/namespaces/fuzz/secrets"),
            ("PersistentVolumeClaim", "/api/v1/namespaces/fuzz/persistentvolumeclaims"),
            ("Widget", "/apis/fuzz.example.com/v1/namespaces/fuzz/widgets"),
        ):
            spec = json.loads(json.dumps(SPECS[kind]))
            if kind == "Deployment":
                spec["spec"]["selector"]["matchLabels"] = spec["spec"]["template"]["metadata"][
                    "labels"
                ]
            post(path, {"metadata": {"name": "fuzz-a"}, **spec})
        client.close()
        yield sim, discover(sim.url)


def test_the_api_survives_random_requests(fuzzed: tuple[ThreadedKubeSim, list[Resource]]) -> None:
    sim, resources = fuzzed
    assert len({r.prefix for r in resources}) > 10
    assert {"status", "scale", "log", "exec", "eviction", "binding"} <= {r.sub for r in resources}
    client = Client(sim.url)
    tally = Tally()
    started = time.monotonic()

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(calls(resources))
    def one(call: Call) -> None:
        tally.by_request[f"{call.method} {call.media or '(none)'}"] += 1
        try:
            status, headers, data = client.send(
                call.method, call.path, call.body, call.media, stream=call.stream
            )
        except (OSError, http.client.HTTPException) as exc:
            client.close()
            raise AssertionError(f"connection dropped on {call}: {exc!r}") from None
        if LOG:
            with Path(LOG).open("a") as out:
                line = {
                    "call": [
                        call.method,
                        call.path,
                        call.media,
                        (call.body or b"")[:200].decode(errors="replace"),
                    ]
                }
                out.write(
                    json.dumps(
                        {**line, "status": status, "answer": data[:200].decode(errors="replace")}
                    )
                    + "\n"
                )
        tally.by_status[status] += 1
        tally.by_method_status[f"{call.method} {status}"] += 1
        assert status < 500, (call, data[:500])
        if status >= 400 and call.method != "HEAD":
            assert headers.get("content-type", "").startswith("application/json"), (call, headers)
            reply = json.loads(data)
            assert (reply["kind"], reply["apiVersion"], reply["status"]) == (
                "Status",
                "v1",
                "Failure",
            ), (call, reply)
            assert reply["code"] == status, (call, reply)
            assert isinstance(reply["reason"], str) and reply["reason"], (call, reply)
            assert isinstance(reply["message"], str), (call, reply)
        elif (
            status < 300 and data and headers.get("content-type", "").startswith("application/json")
        ):
            json.loads(data)

    try:
        one()
    finally:
        client.close()
        if REPORT:
            Path(REPORT).write_text(
                json.dumps(
                    {
                        "requests": sum(tally.by_status.values()),
                        "seconds": round(time.monotonic() - started, 1),
                        "by_method_and_media_type": dict(tally.by_request.most_common()),
                        "by_status": dict(sorted(tally.by_status.items())),
                        "by_method_and_status": dict(sorted(tally.by_method_status.items())),
                    },
                    indent=2,
                )
            )
    assert sum(tally.by_status.values()) >= EXAMPLES
    assert_still_works(sim.url)


def assert_still_works(url: str) -> None:
    """After the fuzz: a new node, a new namespace, and a Deployment there gets running pods
    (on that node, whatever the fuzz did to the others)."""
    client = Client(url)

    def call(method: str, path: str, obj: Any = None) -> Any:
        raw = None if obj is None else json.dumps(obj).encode()
        status, _, data = client.send(method, path, raw, "application/json", stream=False)
        assert status < 300, (method, path, status, data[:300])
        return json.loads(data)

    call("POST", "/api/v1/nodes", {"metadata": {"name": "after-fuzz", "labels": {"after": "fuzz"}}})
    call("POST", "/api/v1/namespaces", {"metadata": {"name": "after-fuzz"}})
    deploy = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "nodeSelector": {"after": "fuzz"},
                    "containers": [{"name": "web", "image": "nginx:1.27"}],
                },
            },
        },
    }
    call("POST", "/apis/apps/v1/namespaces/after-fuzz/deployments", deploy)
    pods = wait_until(
        lambda: call("GET", "/api/v1/namespaces/after-fuzz/pods")["items"],
        lambda items: len(items) == 2 and all(p["status"].get("phase") == "Running" for p in items),
        timeout=20,
    )
    assert {p["spec"]["nodeName"] for p in pods} == {"after-fuzz"}
    wait_until(
        lambda: call("GET", "/apis/apps/v1/namespaces/after-fuzz/deployments/web")["status"].get(
            "readyReplicas"
        ),
        lambda n: n == 2,
    )
    client.close()
