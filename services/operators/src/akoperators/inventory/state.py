"""The operator's picture of the cluster: nodes, pods, claims and storage classes, each a
table of what matters for the inventory, fed by kopf's watch events and by plain lists.

A list (at start, then every ``AP_INVENTORY_RESYNC``) makes the first full picture — kopf
says nothing when its own initial listing is over — and heals what a watch can miss (a
deletion during a gap). Both feed the same tables, so each row keeps the newest
``resourceVersion`` it came with: an older copy (a list answered before a watch event, a
late event of a deleted object) never replaces a newer one. Only the event loop touches
the tables; an event costs O(1), the inventory is rebuilt from them when asked for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from akkube.pods import Use, claim_of, is_default_class, pod_use
from akoperators.adapters.kube import Kube
from akoperators.domain.gpus import GPURegistry
from akoperators.domain.inventory import Discovery, InventoryConfig, build

log = logging.getLogger("akoperators.inventory")

Obj = dict[str, Any]
T = TypeVar("T")
MAX_TOMBSTONES = 50_000


def version_of(obj: Mapping[str, Any]) -> int | None:
    """An object's resourceVersion as a number (etcd's revision); None if it is not one."""
    text = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return int(text) if text.isdigit() else None


def node_row(node: Mapping[str, Any]) -> Obj:
    """What of a node the inventory reads: name, labels, cordon, allocatable, readiness
    (not heartbeats: a node's status changing every few seconds changes nothing here)."""
    meta, spec, status = (
        node.get("metadata") or {},
        node.get("spec") or {},
        node.get("status") or {},
    )
    ready = [
        {"type": "Ready", "status": c.get("status")}
        for c in status.get("conditions") or []
        if c.get("type") == "Ready"
    ]
    return {
        "metadata": {"name": meta.get("name"), "labels": dict(meta.get("labels") or {})},
        "spec": {"unschedulable": bool(spec.get("unschedulable"))},
        "status": {"allocatable": dict(status.get("allocatable") or {}), "conditions": ready},
    }


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def _uid(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return str(meta.get("uid") or f"{meta.get('namespace', '')}/{meta['name']}")


class Table(Generic[T]):
    """Rows of one kind by key, each from the newest version of its object seen."""

    def __init__(self, name: str, path: str, key: Callable[[Obj], str], row: Callable[[Obj], T]):
        self.name, self.path = name, path
        self._key, self._row = key, row
        self.rows: dict[str, T] = {}
        self._versions: dict[str, int | None] = {}
        self._gone: dict[str, int] = {}  # deleted keys, with the version they went at

    def _stale(self, key: str, version: int | None) -> bool:
        if version is None:
            return False
        known = max(
            (v for v in (self._versions.get(key), self._gone.get(key)) if v is not None),
            default=None,
        )
        return known is not None and version <= known

    def upsert(self, obj: Obj) -> bool:
        """Take ``obj`` unless a newer version is known; whether a row changed."""
        key, version = self._key(obj), version_of(obj)
        if self._stale(key, version):
            return False
        row = self._row(obj)
        self._versions[key] = version
        self._gone.pop(key, None)
        changed = key not in self.rows or self.rows[key] != row
        self.rows[key] = row
        return changed

    def delete(self, obj: Obj) -> bool:
        """Drop ``obj``'s row unless a newer version of it is known; whether one went."""
        key, version = self._key(obj), version_of(obj)
        known = self._versions.get(key)
        if version is not None and known is not None and version < known:
            return False
        self._bury(key, version)
        present = key in self.rows
        self.rows.pop(key, None)
        return present

    def _bury(self, key: str, version: int | None) -> None:
        self._versions.pop(key, None)
        if version is not None:
            self._gone[key] = version
            while len(self._gone) > MAX_TOMBSTONES:
                del self._gone[next(iter(self._gone))]

    def replace_all(self, items: Iterable[Obj], list_version: int | None) -> bool:
        """Take a full list: its objects, and drop rows older than it that it lacks."""
        changed, seen = False, set()
        for obj in items:
            seen.add(self._key(obj))
            changed |= self.upsert(obj)
        for key in [k for k in self.rows if k not in seen]:
            version = self._versions.get(key)
            if list_version is None or version is None or version < list_version:
                self.rows.pop(key)
                self._bury(key, list_version)
                changed = True
        return changed


class State:
    """The four tables, and an event set whenever one of them changed."""

    def __init__(self) -> None:
        self.nodes: Table[Obj] = Table("nodes", "/api/v1/nodes", _name, node_row)
        self.pods: Table[tuple[str, Use] | None] = Table("pods", "/api/v1/pods", _uid, pod_use)
        self.claims: Table[tuple[str | None, int]] = Table(
            "persistentvolumeclaims", "/api/v1/persistentvolumeclaims", _uid, claim_of
        )
        self.classes: Table[bool] = Table(
            "storageclasses", "/apis/storage.k8s.io/v1/storageclasses", _name, is_default_class
        )
        self.changed = asyncio.Event()
        self.listed = False  # a full list of every table was taken

    @property
    def tables(self) -> tuple[Table[Any], ...]:
        return (self.nodes, self.pods, self.claims, self.classes)

    def table(self, name: str) -> Table[Any]:
        return next(t for t in self.tables if t.name == name)

    def apply(self, table: str, event: str | None, obj: Obj) -> None:
        """A watch event (``None`` for kopf's initial listing, ``ADDED``, ``MODIFIED``,
        ``DELETED``) for an object of ``table``."""
        target = self.table(table)
        changed = target.delete(obj) if event == "DELETED" else target.upsert(obj)
        if changed:
            self.changed.set()

    async def list_all(self, kube: Kube) -> None:
        """List every table (KubeError when the API cannot answer)."""
        answers = await asyncio.gather(*(kube.request("GET", t.path) for t in self.tables))
        changed = False
        for table, answer in zip(self.tables, answers, strict=True):
            changed |= table.replace_all(answer.get("items") or [], version_of(answer))
        if changed or not self.listed:
            self.changed.set()
        self.listed = True

    def discovery(self, config: InventoryConfig, registry: GPURegistry) -> Discovery:
        used: dict[str, Use] = {}
        for row in self.pods.rows.values():
            if row is not None:
                used[row[0]] = used.get(row[0], Use()) + row[1]
        return build(
            self.nodes.rows.values(),
            used,
            self.claims.rows.values(),
            self.classes.rows,
            config=config,
            registry=registry,
        )
