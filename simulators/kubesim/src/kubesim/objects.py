"""What the store's modules share about objects: their keys, deep copies and timestamps.

Objects are JSON-shaped data (dicts, lists, scalars) kept per kind under a store key
``(group, plural)`` and per object under ``(namespace, name)``. The kinds named here are the
ones the store has rules for.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar, cast

T = TypeVar("T")

StoreKey = tuple[str, str]  # (group, plural)
ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects

NAMESPACES: StoreKey = ("", "namespaces")
CRDS: StoreKey = ("apiextensions.k8s.io", "customresourcedefinitions")
SERVICES: StoreKey = ("", "services")
PVCS: StoreKey = ("", "persistentvolumeclaims")
STORAGE_CLASSES: StoreKey = ("storage.k8s.io", "storageclasses")


def clone(obj: T) -> T:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), three times faster than
    :func:`copy.deepcopy`: the store copies every object it hands out or keeps."""
    data: Any = obj
    if type(data) is dict:
        return cast(T, {k: clone(v) for k, v in data.items()})
    if type(data) is list:
        return cast(T, [clone(v) for v in data])
    return obj


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
