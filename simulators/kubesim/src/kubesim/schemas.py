"""The OpenAPI schemas of the built-in kinds, from the `kubernetes-validate` package.

They serve three purposes: decoding objects into their kind's type (`kubesim.decoding`:
types, quantities, unknown fields), validating them (required fields, enums), and telling
strategic merge patch how each list merges (`x-kubernetes-patch-strategy` and
`x-kubernetes-patch-merge-key`, as the real server reads them from its Go struct tags).
Validators and schemas are loaded once per Kubernetes version and cached.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource


@lru_cache(maxsize=4)
def schema_version(version: str) -> str:
    """The newest bundled schema version not newer than `version` (e.g. "1.32.0")."""
    wanted = tuple(int(p) for p in version.lstrip("v").split(".")[:2])
    usable = [
        v for v in kv_utils.all_versions() if tuple(int(p) for p in v.split(".")[:2]) <= wanted
    ]
    if not usable:
        raise ValueError(f"no Kubernetes schemas bundled for version {version}")
    return str(usable[-1])


def _schema_dir(version: str) -> Any:
    name = f"v{schema_version(version)}-local"
    return resources.files("kubernetes_validate").joinpath("kubernetes-json-schema", name)


@lru_cache(maxsize=4)
def _definitions(version: str) -> dict[str, Any]:
    text = _schema_dir(version).joinpath("_definitions.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def definitions(version: str) -> dict[str, Any]:
    """Every type's schema by its full name (`io.k8s.api.core.v1.PodSpec`)."""
    defs: dict[str, Any] = _definitions(version)["$defs"]
    return defs


def _file_name(kind: str, api_version: str) -> str:
    # rbac.authorization.k8s.io/v1 -> rbac-v1; apps/v1 -> apps-v1; v1 -> v1
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{group_version}.json"


@lru_cache(maxsize=256)
def kind_schema(kind: str, api_version: str, version: str) -> dict[str, Any] | None:
    path = _schema_dir(version).joinpath(_file_name(kind, api_version))
    if not path.is_file():
        return None
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


@lru_cache(maxsize=256)
def validator(kind: str, api_version: str, version: str) -> jsonschema.Validator | None:
    """A cached validator for one kind, or None when no schema is bundled for it."""
    schema = kind_schema(kind, api_version, version)
    if schema is None:
        return None
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(_definitions(version)) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


class SchemaNode:
    """A position in a kind's schema, following `$ref`s, for strategic merge patch."""

    def __init__(self, schema: dict[str, Any] | None, defs: dict[str, Any]) -> None:
        self._defs = defs
        self.schema = self._resolve(schema)

    def _resolve(self, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        while schema is not None and "$ref" in schema:
            ref = schema["$ref"].rsplit("/", 1)[-1]
            target = self._defs.get(ref)
            merged = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**(target or {}), **merged}
        return schema

    def field(self, name: str) -> SchemaNode:
        if self.schema is None:
            return SchemaNode(None, self._defs)
        props = self.schema.get("properties") or {}
        if name in props:
            return SchemaNode(props[name], self._defs)
        extra = self.schema.get("additionalProperties")
        return SchemaNode(extra if isinstance(extra, dict) else None, self._defs)

    def items(self) -> SchemaNode:
        if self.schema is None:
            return SchemaNode(None, self._defs)
        return SchemaNode(self.schema.get("items"), self._defs)

    @property
    def strategy(self) -> str:
        return str((self.schema or {}).get("x-kubernetes-patch-strategy", ""))

    @property
    def merge_key(self) -> str | None:
        key = (self.schema or {}).get("x-kubernetes-patch-merge-key")
        return str(key) if key else None

    @property
    def known(self) -> bool:
        return self.schema is not None


def patch_root(kind: str, api_version: str, version: str) -> SchemaNode | None:
    """The root schema node of a built-in kind, or None when kubesim has no schema for it."""
    schema = kind_schema(kind, api_version, version)
    if schema is None:
        return None
    return SchemaNode(schema, definitions(version))
