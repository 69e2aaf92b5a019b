"""The ``kube`` inventory backend: the cluster's capacity, read from the Kubernetes API.

The Go provider asks its inventory operator, which watches nodes and pods; here the cluster
service watches them itself, with the official synchronous ``kubernetes`` client. Four
resources are listed, then watched from the list's version — nodes, pods and persistent
volume claims in every namespace, storage classes — each by a task of its own whose
blocking reads run on worker threads (a list) or a thread per watch connection, handing
events to the event loop (:mod:`akkube.watch`). Only the loop touches the state: per
resource a table of what matters for capacity, keyed by name or uid, so an event costs
O(1); an :class:`Inventory` is rebuilt from the tables when asked for and, debounced,
pushed to ``on_change``.

Rules, with the Go operator's quirks fixed:

- a node counts if it is Ready, not cordoned and (by default) labelled ``akash.network=true``;
- a pod takes what the scheduler reserves for it — the larger of its containers' and its
  init containers' requests (sidecars included), plus overhead and memory-backed emptyDir
  size limits — while it is bound to a node and not finished (Go counts finished pods until
  they are deleted);
- a storage pool's size comes from the operator's configuration, and is reported while its
  StorageClass exists; claims of that class (the default class for claims naming none) use it.

Failures never stop it: a failed list or watch is retried with jittered exponential backoff
(reported through :attr:`KubeInventory.error` meanwhile), a watch resumes from the last
version it saw, and one answered 410 Gone lists again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from kubernetes.client import ApiClient

from akcluster.adapters.kube_objects import (
    Obj,
    name_of,
    node_of,
    pod_use,
    uid_of,
)
from akcluster.domain.inventory import Capacity, Inventory, Node, StoragePool
from akkube.client import api_client
from akkube.pods import claim_of, is_default_class
from akkube.watch import ListWatch, describe

log = logging.getLogger("akcluster.kube")
V = TypeVar("V")
_NO_POOLS: Mapping[str, int] = MappingProxyType({})


@dataclass
class _Table(Generic[V]):
    """One watched resource: how to list it, and what of each object the inventory keeps."""

    name: str
    path: str  # where the API lists it (in every namespace)
    key: Callable[[Obj], str]
    derive: Callable[[Obj], V | None]  # None: the object does not count
    rows: dict[str, V] = field(default_factory=dict)

    def rows_of(self, items: list[Obj]) -> dict[str, V]:
        rows = {}
        for obj in items:
            value = self._derive(obj)
            if value is not None:
                rows[self.key(obj)] = value
        return rows

    def replace(self, rows: dict[str, V]) -> bool:
        changed, self.rows = rows != self.rows, rows
        return changed

    def apply(self, kind: str, obj: Obj) -> bool:
        """Apply one watch event; True if what the inventory keeps changed."""
        key = self.key(obj)
        value = None if kind == "DELETED" else self._derive(obj)
        old = self.rows.pop(key, None) if value is None else self.rows.get(key)
        if value is not None:
            self.rows[key] = value
        return old != value

    def _derive(self, obj: Obj) -> V | None:
        try:
            return self.derive(obj)
        except Exception:  # one malformed object must not stop the inventory
            log.exception("cannot read %s %s", self.name, obj.get("metadata"))
            return None


class KubeInventory:
    """Nodes, pods, claims and storage classes, watched; the :class:`Inventory` they make.

    ``run`` follows the cluster until cancelled; ``snapshot`` is the inventory now (None
    until every resource has been listed once); ``on_change`` gets each new inventory,
    at most one per ``debounce_s``.
    """

    def __init__(
        self,
        api_client: ApiClient,
        *,
        storage_pools: Mapping[str, int] = _NO_POOLS,
        on_change: Callable[[Inventory], None] | None = None,
        debounce_s: float = 0.05,
        require_akash_label: bool = True,
        page_size: int = 500,
        backoff_s: tuple[float, float] = (0.1, 10.0),
        request_timeout_s: float = 30.0,
        watch_timeout_s: float = 300.0,
    ) -> None:
        self.api_client = api_client
        self.storage_pools = dict(storage_pools)
        self.on_change = on_change
        self.debounce_s = debounce_s
        self.require_akash_label = require_akash_label
        self._watches = ListWatch(
            api_client,
            page_size=page_size,
            backoff_s=backoff_s,
            request_timeout_s=request_timeout_s,
            watch_timeout_s=watch_timeout_s,
            log=log,
        )
        self._nodes: _Table[Node] = _Table("nodes", "/api/v1/nodes", name_of, self._node)
        self._pods: _Table[tuple[str, Capacity]] = _Table("pods", "/api/v1/pods", uid_of, pod_use)
        self._claims: _Table[tuple[str | None, int]] = _Table(
            "persistentvolumeclaims", "/api/v1/persistentvolumeclaims", uid_of, claim_of
        )
        self._classes: _Table[bool] = _Table(
            "storageclasses", "/apis/storage.k8s.io/v1/storageclasses", name_of, is_default_class
        )
        self._tables: tuple[_Table[Any], ...] = (
            self._nodes,
            self._pods,
            self._claims,
            self._classes,
        )
        self._listed: set[str] = set()
        self._synced = asyncio.Event()
        self._errors: dict[str, str] = {}
        self._current: Inventory | None = None  # None: rebuild on the next snapshot()
        self._published: Inventory | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._owns_client = False

    @classmethod
    def from_kubeconfig(cls, path: Path | None = None, **kw: Any) -> KubeInventory:
        """From a kubeconfig file; with None, ``$KUBECONFIG`` or ``~/.kube/config``, else
        the in-cluster service account. The inventory closes the client in ``close``."""
        inventory = cls(api_client(path), **kw)
        inventory._owns_client = True
        return inventory

    def close(self) -> None:
        """Close the API client if ``from_kubeconfig`` made it."""
        if self._owns_client:
            self.api_client.close()  # type: ignore[no-untyped-call]

    @property
    def error(self) -> str:
        """The last list or watch failure of each resource still failing; '' when healthy."""
        return "; ".join(f"{name}: {error}" for name, error in sorted(self._errors.items()))

    def snapshot(self) -> Inventory | None:
        if not self._synced.is_set():
            return None
        if self._current is None:
            self._current = self._build()
        return self._current

    async def wait_synced(self, timeout: float) -> Inventory:
        """The inventory once every resource has been listed; TimeoutError naming what
        failed if that takes longer than ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                await self._synced.wait()
        except TimeoutError:
            raise TimeoutError(
                f"the Kubernetes inventory did not sync within {timeout}s"
                + (f": {self.error}" if self.error else "")
            ) from None
        inventory = self.snapshot()
        if inventory is None:  # pragma: no cover - synced means built
            raise RuntimeError("synced without an inventory")
        return inventory

    async def run(self) -> None:
        """List, then watch, every resource until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                for table in self._tables:
                    group.create_task(
                        self._watches.follow(_Follower(self, table)),
                        name=f"kube-inventory-{table.name}",
                    )
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    # -- state -------------------------------------------------------------------
    def _node(self, obj: Obj) -> Node | None:
        return node_of(obj, require_akash_label=self.require_akash_label)

    def _build(self) -> Inventory:
        used: dict[str, Capacity] = {}
        for node, requests in self._pods.rows.values():
            used[node] = used.get(node, Capacity()) + requests
        nodes = tuple(
            replace(node, allocated=used.get(name, Capacity()))
            for name, node in sorted(self._nodes.rows.items())
        )
        default = next((name for name, d in sorted(self._classes.rows.items()) if d), None)
        claimed: dict[str, int] = {}
        for named, size in self._claims.rows.values():
            cls = default if named is None else named
            if cls:
                claimed[cls] = claimed.get(cls, 0) + size
        storage = {
            cls: StoragePool(capacity, claimed.get(cls, 0))
            for cls, capacity in sorted(self.storage_pools.items())
            if cls in self._classes.rows
        }
        return Inventory(nodes, storage)

    def _changed(self) -> None:
        self._current = None
        if self._synced.is_set() and self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.debounce_s, self._publish)

    def _publish(self) -> None:
        self._timer = None
        inventory = self.snapshot()
        if inventory is None or inventory == self._published:
            return
        self._published = inventory
        if self.on_change is not None:
            try:
                self.on_change(inventory)
            except Exception:
                log.exception("inventory on_change callback failed")

    def _listed_once(self, table: _Table[Any]) -> None:
        self._listed.add(table.name)
        if not self._synced.is_set() and len(self._listed) == len(self._tables):
            self._synced.set()
            inventory = self.snapshot()
            log.info(
                "kubernetes inventory synced: %d nodes",
                len(inventory.nodes) if inventory else 0,
                extra={"nodes": [n.name for n in inventory.nodes] if inventory else []},
            )
            self._changed()

    # -- list and watch ----------------------------------------------------------
    def _failed(self, table: _Table[Any], exc: Exception) -> None:
        """Report a failure: a warning when it is new, quietly while it lasts."""
        error = describe(exc)
        level = logging.DEBUG if self._errors.get(table.name) == error else logging.WARNING
        log.log(
            level, "%s: list or watch failed: %s", table.name, error, extra={"resource": table.name}
        )
        self._errors[table.name] = error

    def _recovered(self, table: _Table[Any]) -> None:
        if self._errors.pop(table.name, None) is not None:
            log.info("%s: connected again", table.name, extra={"resource": table.name})


@dataclass
class _Follower:
    """One table as :class:`akkube.watch.ListWatch` follows it, for the inventory."""

    inventory: KubeInventory
    table: _Table[Any]

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def path(self) -> str:
        return self.table.path

    def rows_of(self, items: list[Obj]) -> dict[str, Any]:
        return self.table.rows_of(items)

    def listed(self, rows: dict[str, Any]) -> None:
        if self.table.replace(rows):
            self.inventory._changed()
        self.inventory._recovered(self.table)
        self.inventory._listed_once(self.table)

    def changed(self, kind: str, obj: Obj) -> None:
        if self.table.apply(kind, obj):
            self.inventory._changed()

    def connected(self) -> None:
        self.inventory._recovered(self.table)

    def failed(self, exc: Exception) -> None:
        self.inventory._failed(self.table, exc)
