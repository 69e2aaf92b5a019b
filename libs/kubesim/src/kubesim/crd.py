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

from kubesim.catalog import ResourceType
from kubesim.validation import Cause, invalid_value, required, schema_causes

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
    """What the server checks on a CRD before it serves anything from it."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    causes: list[Cause] = []
    group, plural = spec.get("group"), names.get("plural")
    if not group:
        causes.append(required("spec.group"))
    causes += [required(f"spec.names.{key}") for key in ("plural", "kind") if not names.get(key)]
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
    name = (crd.get("metadata") or {}).get("name")
    if group and plural and name != f"{plural}.{group}":
        causes.append(
            invalid_value("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    return causes


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


def prune(obj: Any, schema: dict[str, Any] | None, root: bool = True) -> Any:
    """Drop what a structural schema does not declare (metadata and type fields are kept,
    at the root and in objects marked `x-kubernetes-embedded-resource`)."""
    if schema is None or not isinstance(obj, dict | list):
        return obj
    if isinstance(obj, list):
        items = schema.get("items")
        return [prune(i, items if isinstance(items, dict) else None, False) for i in obj]
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return obj
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    out = {}
    resource = root or bool(schema.get("x-kubernetes-embedded-resource"))
    for key, value in obj.items():
        if resource and key in ("apiVersion", "kind", "metadata"):
            out[key] = value
        elif key in props:
            out[key] = prune(value, props[key], False)
        elif isinstance(extra, dict):
            out[key] = prune(value, extra, False)
        elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields"):
            out[key] = value
    return out


def check_custom(rtype: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    if rtype.schema is None:
        return []
    checker = _validator(json.dumps(rtype.schema, sort_keys=True))
    return schema_causes(checker, obj)
