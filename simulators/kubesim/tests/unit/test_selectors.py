"""Unit tests of kubesim.selectors: label selectors, field selectors and node affinity."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.errors import ApiError
from kubesim.selectors import (
    field_matcher,
    label_matcher,
    match_label_selector,
    match_node_selector_terms,
)


def obj(labels: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": fields.pop("name", "x"), "namespace": "ns"}
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta, **fields}


OBJECTS = {
    "a": obj({"env": "prod", "tier": "web"}),
    "b": obj({"env": "dev", "tier": "web"}),
    "c": obj({"env": "prod"}),
    "d": obj({}),
    "e": obj(None),
}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", "abcde"),
        ("  ", "abcde"),
        ("env=prod", "ac"),
        ("env==prod", "ac"),
        ("env = prod", "ac"),
        ("env!=prod", "bde"),
        ("env in (prod,dev)", "abc"),
        ("env in (prod, dev)", "abc"),
        ("env notin (prod)", "bde"),
        ("tier", "ab"),
        ("!tier", "cde"),
        ("! tier", "cde"),
        ("env=prod,tier", "a"),
        ("env in (prod),!tier", "c"),
        ("env notin (dev,prod),!tier", "de"),
        ("tier=", ""),
        ("env==", ""),  # an empty value, as the real parser reads it
        ("env in ()", ""),  # likewise: the set {""}
        ("env notin ()", "abcde"),
        ("env=staging", ""),
    ],
)
def test_label_selector(selector: str, expected: str) -> None:
    matches = label_matcher(selector)
    assert "".join(name for name, o in OBJECTS.items() if matches(o)) == expected


def test_label_selector_with_prefixed_keys() -> None:
    labelled = obj({"app.kubernetes.io/name": "web", "akash.network/manifest-service": "x"})
    assert label_matcher("app.kubernetes.io/name=web")(labelled)
    assert label_matcher("akash.network/manifest-service")(labelled)
    assert not label_matcher("!akash.network/manifest-service")(labelled)
    assert label_matcher("app.kubernetes.io/name in (web,api)")(labelled)


@pytest.mark.parametrize(
    "selector",
    [
        "env in prod",
        "env in (prod",
        "env=pro d",
        "env=a=b",
        "!env in (a)",
        "=value",
        "env=-bad",
        "env=" + "x" * 64,
    ],
)
def test_bad_label_selectors_are_refused(selector: str) -> None:
    with pytest.raises(ApiError) as info:
        label_matcher(selector)
    assert (info.value.code, info.value.reason) == (400, "BadRequest")


def pod(name: str, node: str = "", phase: str = "", host_network: bool | None = None) -> Any:
    spec: dict[str, Any] = {"restartPolicy": "Always"}
    if node:
        spec["nodeName"] = node
    if host_network is not None:
        spec["hostNetwork"] = host_network
    return obj(name=name, spec=spec, status={"phase": phase} if phase else {})


PODS = [
    pod("p1", "node-a", "Running"),
    pod("p2", "node-b", "Running", host_network=True),
    pod("p3", phase="Pending"),
]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("metadata.name=p1", ["p1"]),
        ("metadata.name==p1", ["p1"]),
        ("metadata.name!=p1", ["p2", "p3"]),
        ("metadata.namespace=ns", ["p1", "p2", "p3"]),
        ("metadata.namespace=other", []),
        ("spec.nodeName=node-a", ["p1"]),
        ("spec.nodeName=", ["p3"]),
        ("spec.nodeName!=", ["p1", "p2"]),
        ("status.phase=Running", ["p1", "p2"]),
        ("status.phase!=Running", ["p3"]),
        ("status.phase=Running,spec.nodeName=node-b", ["p2"]),
        ("spec.restartPolicy=Always", ["p1", "p2", "p3"]),
        # a boolean the object leaves out is false, as the real server indexes it
        ("spec.hostNetwork=true", ["p2"]),
        ("spec.hostNetwork=false", ["p1", "p3"]),
    ],
)
def test_pod_field_selectors(selector: str, expected: list[str]) -> None:
    matches = field_matcher(selector, "Pod")
    assert [p["metadata"]["name"] for p in PODS if matches(p)] == expected


def test_field_selectors_of_other_kinds() -> None:
    node = {"metadata": {"name": "n"}, "spec": {}}
    cordoned = {"metadata": {"name": "c"}, "spec": {"unschedulable": True}}
    assert field_matcher("spec.unschedulable=false", "Node")(node)
    assert not field_matcher("spec.unschedulable=false", "Node")(cordoned)
    assert field_matcher("spec.unschedulable=true", "Node")(cordoned)
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p1"}}
    event["source"] = {"component": "kubelet"}
    assert field_matcher("involvedObject.kind=Pod,involvedObject.name=p1", "Event")(event)
    assert field_matcher("source=kubelet", "Event")(event)
    assert field_matcher("type=Opaque", "Secret")({"metadata": {}, "type": "Opaque"})
    assert field_matcher("status.replicas=0", "ReplicaSet")({"metadata": {}, "status": {}})
    assert field_matcher("metadata.name=w", "Widget", custom=True)({"metadata": {"name": "w"}})


@pytest.mark.parametrize(
    ("selector", "kind", "custom"),
    [
        ("spec.containers=x", "Pod", False),
        ("data.key=x", "ConfigMap", False),
        ("status.phase=Running", "Deployment", False),
        ("spec.size=1", "Widget", True),
        ("metadata.name", "Pod", False),
        ("metadata.name~x", "Pod", False),
    ],
)
def test_unsupported_field_selectors_are_refused(selector: str, kind: str, custom: bool) -> None:
    with pytest.raises(ApiError) as info:
        field_matcher(selector, kind, custom)
    assert (info.value.code, info.value.reason) == (400, "BadRequest")


def test_label_selector_objects() -> None:
    labels = {"app": "web", "tier": "front"}
    assert match_label_selector({}, labels)  # an empty selector matches everything
    assert not match_label_selector(None, labels)  # no selector matches nothing
    assert match_label_selector({"matchLabels": {"app": "web"}}, labels)
    assert not match_label_selector({"matchLabels": {"app": "api"}}, labels)

    def expr(operator: str, *values: str, key: str = "tier") -> dict[str, Any]:
        return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}

    assert match_label_selector(expr("In", "front", "back"), labels)
    assert not match_label_selector(expr("In", "back"), labels)
    assert match_label_selector(expr("NotIn", "back"), labels)
    assert not match_label_selector(expr("NotIn", "front"), labels)
    assert match_label_selector(expr("NotIn", "x", key="missing"), labels)
    assert match_label_selector(expr("Exists"), labels)
    assert not match_label_selector(expr("DoesNotExist"), labels)
    assert match_label_selector(expr("DoesNotExist", key="missing"), labels)
    both = {"matchLabels": {"app": "web"}, **expr("In", "back")}
    assert not match_label_selector(both, labels)


def test_node_selector_terms() -> None:
    node = {
        "metadata": {
            "name": "node-a",
            "labels": {"zone": "a", "gpus": "4", "nvidia.com/gpu.product": "a100"},
        }
    }

    def term(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> Any:
        found: dict[str, Any] = {"matchExpressions": list(exprs)}
        if fields is not None:
            found["matchFields"] = fields
        return found

    def req(key: str, operator: str, *values: str) -> dict[str, Any]:
        return {"key": key, "operator": operator, "values": list(values)}

    assert match_node_selector_terms([term(req("zone", "In", "a", "b"))], node)
    assert not match_node_selector_terms([term(req("zone", "In", "b"))], node)
    assert match_node_selector_terms([term(req("zone", "NotIn", "b"))], node)
    assert match_node_selector_terms([term(req("nvidia.com/gpu.product", "Exists"))], node)
    assert match_node_selector_terms([term(req("other", "DoesNotExist"))], node)
    assert match_node_selector_terms([term(req("gpus", "Gt", "2"))], node)
    assert not match_node_selector_terms([term(req("gpus", "Lt", "2"))], node)
    assert not match_node_selector_terms([term(req("zone", "Gt", "2"))], node)
    # expressions of a term are ANDed, terms are ORed
    assert not match_node_selector_terms(
        [term(req("zone", "In", "a"), req("gpus", "Gt", "8"))], node
    )
    assert match_node_selector_terms(
        [term(req("zone", "In", "b")), term(req("gpus", "Gt", "2"))], node
    )
    # matchFields on the node's name
    name_is = {"key": "metadata.name", "operator": "In", "values": ["node-a"]}
    assert match_node_selector_terms([{"matchFields": [name_is]}], node)
    assert not match_node_selector_terms(
        [{"matchFields": [{**name_is, "values": ["node-b"]}]}], node
    )
    # an empty term matches nothing
    assert not match_node_selector_terms([{}], node)
    assert not match_node_selector_terms([], node)
