"""Label and field selectors, parsed the way the API server parses them.

Label selectors take `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` and `!k`,
joined by commas. Field selectors take `=`, `==` and `!=` on the fields the real server
indexes for each kind; any other field is refused with 400, as Kubernetes does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kubesim.errors import bad_request

Matcher = Callable[[dict[str, Any]], bool]

_SET_TERM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_TERM = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _split_terms(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    terms, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [t for t in terms if t.strip()]


def _check_value(value: str, selector: str) -> str:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise bad_request(
            f'unable to parse requirement: values[0][{selector}]: Invalid value: "{value}": '
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return value


def label_matcher(selector: str | None) -> Matcher:
    """Compile a label selector string; an empty one matches everything."""
    if not selector or not selector.strip():
        return lambda _obj: True
    # each requirement: (key, operator, values) with operators =, !=, in, notin, exists, !
    requirements: list[tuple[str, str, frozenset[str]]] = []
    for term in _split_terms(selector):
        if eq := _EQ_TERM.match(term):
            key, op, value = eq.group(1), eq.group(2), _check_value(eq.group(3), term)
            requirements.append((key, "!=" if op == "!=" else "=", frozenset([value])))
            continue
        match = _SET_TERM.match(term)
        if match is None:
            raise bad_request(
                f"unable to parse requirement: found '{term.strip()}', "
                "expected: in, notin, =, ==, !=, or end of string"
            )
        negate, key, op, values = match.groups()
        if op and negate:
            raise bad_request(f"unable to parse requirement: '{term.strip()}'")
        if op:
            options = frozenset(_check_value(v.strip(), term) for v in values.split(","))
            requirements.append((key, op, options))
        else:
            requirements.append((key, "!" if negate else "exists", frozenset()))

    def holds(labels: Mapping[str, str], key: str, op: str, values: frozenset[str]) -> bool:
        if op in ("=", "in"):
            return labels.get(key) in values
        if op in ("!=", "notin"):
            return labels.get(key) not in values
        return (key in labels) == (op == "exists")

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(holds(labels, *requirement) for requirement in requirements)

    return matches


def match_label_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A `LabelSelector` object (matchLabels + matchExpressions) against labels."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


# fields every kind indexes, and those the real server adds per kind
_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
_KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "Pod": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "Event": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "Secret": ("type",),
    "Node": ("spec.unschedulable",),
    "Namespace": ("status.phase",),
    "ReplicaSet": ("status.replicas",),
    "Job": ("status.successful",),
    "PersistentVolumeClaim": ("spec.storageClassName",),
}


# what the real server indexes for a field the object leaves out (Go's zero values)
_FIELD_ZEROES = {
    "spec.unschedulable": "false",
    "spec.hostNetwork": "false",
    "status.replicas": "0",
    "status.successful": "0",
}


def _field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    if path == "source":
        return str((obj.get("source") or {}).get("component", ""))
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return _FIELD_ZEROES.get(path, "")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_matcher(selector: str | None, kind: str, custom: bool = False) -> Matcher:
    """Compile a field selector for objects of `kind`."""
    if not selector or not selector.strip():
        return lambda _obj: True
    allowed = _COMMON_FIELDS + _KIND_FIELDS.get(kind, ())
    tests: list[tuple[str, bool, str]] = []
    for term in selector.split(","):
        match = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*$", term)
        if match is None:
            raise bad_request(f"invalid selector: '{selector}'; can't understand '{term}'")
        path, op, value = match.groups()
        if path not in allowed and not custom:
            raise bad_request(f"field label not supported: {path}")
        if custom and path not in _COMMON_FIELDS:
            raise bad_request(
                f'"{path}" is not a known field selector: '
                'only "metadata.name", "metadata.namespace"'
            )
        tests.append((path, op == "!=", value))

    def matches(obj: dict[str, Any]) -> bool:
        return all((_field_value(obj, p) == v) != neg for p, neg, v in tests)

    return matches


def match_node_selector_terms(terms: list[dict[str, Any]], node: dict[str, Any]) -> bool:
    """Required node affinity: any term matches when all its expressions do."""
    labels = node.get("metadata", {}).get("labels") or {}
    return any(_match_node_term(term, labels, node) for term in terms)


def _match_node_term(term: dict[str, Any], labels: Mapping[str, str], node: dict[str, Any]) -> bool:
    for expr in term.get("matchExpressions") or []:
        if not _match_node_expr(expr, labels):
            return False
    for expr in term.get("matchFields") or []:
        if expr.get("key") == "metadata.name":
            name = {"metadata.name": node["metadata"]["name"]}
            if not _match_node_expr(expr, name):
                return False
    return bool(term.get("matchExpressions") or term.get("matchFields"))


def _match_node_expr(expr: dict[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    present = key in labels
    value = labels.get(key)
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            have, want = int(str(value)), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False
