"""CustomResourceDefinitions: checking them, and checking and pruning their objects.

A custom resource is pruned the way the real server prunes structural schemas (fields the
schema does not declare are dropped, unless `x-kubernetes-preserve-unknown-fields`), then
validated against its version's `openAPIV3Schema`, read as JSON Schema with the OpenAPI
extensions the server understands (`nullable`, `x-kubernetes-int-or-string`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema

from kubesim.catalog import BUILTIN, ResourceType
from kubesim.validation import (
    Cause,
    invalid_value,
    is_dns_label,
    is_dns_subdomain,
    required,
    schema_causes,
)

BUILTIN_GROUPS = frozenset(t.group for t in BUILTIN)
_SKIP = {
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
}


def check_crd(crd: dict[str, Any]) -> list[Cause]:
    """What the server checks on a CRD before it serves anything from it: its names, its
    versions, and that each schema is one kubesim can validate objects against."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    causes: list[Cause] = []
    group, plural = spec.get("group"), names.get("plural")
    if not group:
        causes.append(required("spec.group"))
    elif "." not in group or not is_dns_subdomain(group):
        causes.append(
            invalid_value("spec.group", group, "should be a domain with at least one dot")
        )
    causes += [required(f"spec.names.{key}") for key in ("plural", "kind") if not names.get(key)]
    for key in ("plural", "singular"):
        if names.get(key) and not is_dns_label(names[key]):
            causes.append(invalid_value(f"spec.names.{key}", names[key], _DNS_LABEL_WHY))
    for key in ("kind", "listKind"):
        if names.get(key) and not is_dns_label(str(names[key]).lower()):
            causes.append(
                invalid_value(
                    f"spec.names.{key}",
                    names[key],
                    "may have mixed case, but should otherwise match: ^[a-z]([-a-z0-9]*[a-z0-9])?",
                )
            )
    for key in ("shortNames", "categories"):
        for i, value in enumerate(names.get(key) or []):
            if not is_dns_label(value):
                causes.append(invalid_value(f"spec.names.{key}[{i}]", value, _DNS_LABEL_WHY))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            invalid_value("spec.scope", spec.get("scope"), "must be Namespaced or Cluster")
        )
    versions = spec.get("versions") or []
    if not versions:
        causes.append(required("spec.versions"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            invalid_value(
                "spec.versions",
                [v.get("name") for v in versions],
                "must have exactly one version marked as storage version",
            )
        )
    seen: set[str] = set()
    for i, version in enumerate(versions):
        name = version.get("name") or ""
        if not is_dns_label(name):
            causes.append(invalid_value(f"spec.versions[{i}].name", name, _DNS_LABEL_WHY))
        elif name in seen:
            causes.append(
                (f"spec.versions[{i}].name", "FieldValueDuplicate", f'Duplicate value: "{name}"')
            )
        seen.add(name)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is not None:
            causes += _schema_causes(schema, f"spec.versions[{i}].schema.openAPIV3Schema")
    name = (crd.get("metadata") or {}).get("name")
    if group and plural and name != f"{plural}.{group}":
        causes.append(
            invalid_value("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    return causes


_DNS_LABEL_WHY = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)


def _schema_causes(schema: Any, at: str) -> list[Cause]:
    """A schema kubesim cannot validate with is refused, as the real server refuses one
    that is not a valid structural schema."""
    if _has_ref(schema):
        return [(at, "FieldValueForbidden", "Forbidden: $ref is not supported")]
    try:
        jsonschema.Draft7Validator.check_schema(to_json_schema(schema))
    except jsonschema.SchemaError as exc:
        where = at + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.path)
        return [(where, "FieldValueInvalid", f"Invalid value: {exc.message[:200]}")]
    return []


def _has_ref(schema: Any) -> bool:
    if isinstance(schema, list):
        return any(_has_ref(s) for s in schema)
    if not isinstance(schema, dict):
        return False
    return "$ref" in schema or any(
        _has_ref(v) for k, v in schema.items() if k not in ("default", "example", "enum")
    )


def crd_status(crd: dict[str, Any], now: str) -> dict[str, Any]:
    names = dict(crd["spec"]["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    condition = {"status": "True", "lastTransitionTime": now}
    return {
        "acceptedNames": names,
        "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
        "conditions": [
            {
                **condition,
                "type": "NamesAccepted",
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                **condition,
                "type": "Established",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
    }


def to_json_schema(schema: Any) -> Any:
    """An OpenAPI v3 schema as JSON Schema: `nullable` and int-or-string made explicit."""
    if isinstance(schema, list):
        return [to_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: to_json_schema(v) for k, v in schema.items() if k not in _SKIP}
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


@lru_cache(maxsize=128)
def _validator(schema_text: str) -> jsonschema.Validator:
    # keyed by the schema's text: a ResourceType's equality ignores its schema, and a CRD
    # that is updated or deleted and created again serves a new one under the same name
    schema = to_json_schema(json.loads(schema_text))
    # the server owns these; CRD schemas rarely declare them
    for key in ("apiVersion", "kind", "metadata"):
        schema.get("properties", {}).pop(key, None)
    return jsonschema.Draft7Validator(schema)


def prune(obj: dict[str, Any], schema: dict[str, Any] | None) -> tuple[Any, list[str]]:
    """Drop what a structural schema does not declare (metadata and type fields are kept,
    at the root and in objects marked `x-kubernetes-embedded-resource`); returns the pruned
    object and the paths of the fields dropped."""
    dropped: list[str] = []
    return _prune(obj, schema, "", dropped), dropped


def _prune(obj: Any, schema: dict[str, Any] | None, path: str, dropped: list[str]) -> Any:
    if schema is None or not isinstance(obj, dict | list):
        return obj
    if isinstance(obj, list):
        items = schema.get("items")
        items = items if isinstance(items, dict) else None
        return [_prune(item, items, f"{path}[{i}]", dropped) for i, item in enumerate(obj)]
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return obj
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    out = {}
    resource = not path or bool(schema.get("x-kubernetes-embedded-resource"))
    for key, value in obj.items():
        where = f"{path}.{key}" if path else key
        if resource and key in ("apiVersion", "kind", "metadata"):
            out[key] = value
        elif key in props:
            out[key] = _prune(value, props[key], where, dropped)
        elif isinstance(extra, dict):
            out[key] = _prune(value, extra, where, dropped)
        elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields"):
            out[key] = value
        else:
            dropped.append(where)
    return out


def check_custom(rtype: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    if rtype.schema is None:
        return []
    checker = _validator(json.dumps(rtype.schema, sort_keys=True))
    return schema_causes(checker, obj)
