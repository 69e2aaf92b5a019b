"""The Events of every lease namespace, as they come: two follows through
:class:`akkube.watch.ListWatch` (a list, then a watch from its version; a 410 lists again).

- Namespaces, every one: each lease namespace's lease, from its ``akash.network/lease.id.*``
  labels (:func:`akcluster.domain.leaseevents.lease_of`); other namespaces are known as
  not a lease's.
- Events, in every namespace, once the namespaces are listed: each Event created or updated
  in a lease namespace is handed to ``sink(lease_id, event)`` on the event loop. An Event
  whose namespace is not known yet (its watch event came before the namespace's) waits for
  it, a few per namespace, in a few namespaces; deletions are not told (the history keeps
  what Kubernetes drops).

One watch of each kind for the whole cluster, not one per lease: ten thousand leases are two
connections. Each list is paged and reduced on its worker thread to what is kept
(:func:`aktypes.leaseevents.kept` and the uid).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from akcluster.domain.leaseevents import lease_of
from akkube.calls import Obj
from akkube.client import ApiClient, api_client
from akkube.watch import ListWatch, describe
from aktypes.ids import LeaseID
from aktypes.leaseevents import kept

log = logging.getLogger("akcluster.lease_events")

Sink = Callable[[LeaseID, Obj], None]
PARKED_PER_NAMESPACE = 64
PARKED_NAMESPACES = 256


class _Namespaces:
    """Which lease each namespace holds (None: not a lease's)."""

    name = "namespaces"
    path = "/api/v1/namespaces"

    def __init__(self, on_namespace: Callable[[str, LeaseID | None], None]) -> None:
        self.leases: dict[str, LeaseID | None] = {}
        self.ready = asyncio.Event()
        self._on_namespace = on_namespace

    def rows_of(self, items: list[Obj]) -> dict[str, Any]:
        return {i["metadata"]["name"]: lease_of(i) for i in items if i.get("metadata")}

    def listed(self, rows: dict[str, Any]) -> None:
        self.leases = dict(rows)
        for name, lease in rows.items():
            self._on_namespace(name, lease)
        self.ready.set()

    def changed(self, kind: str, obj: Obj) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            return
        if kind == "DELETED":
            self.leases.pop(name, None)
            return
        lease = lease_of(obj)
        self.leases[name] = lease
        self._on_namespace(name, lease)

    def connected(self) -> None:
        pass

    def failed(self, exc: Exception) -> None:
        log.warning("lease events: listing namespaces failed: %s", describe(exc))


class _Events:
    """Events everywhere, handed on when their namespace is a lease's."""

    name = "events"
    path = "/api/v1/events"

    def __init__(self, namespaces: _Namespaces, sink: Sink) -> None:
        self.namespaces = namespaces
        self.sink = sink
        self.parked: OrderedDict[str, deque[Obj]] = OrderedDict()

    def rows_of(self, items: list[Obj]) -> dict[str, Any]:
        reduced = (reduce(i) for i in items)
        return {r["metadata"]["uid"]: r for r in reduced if r["metadata"].get("uid")}

    def listed(self, rows: dict[str, Any]) -> None:
        for event in rows.values():
            self.take(event)

    def changed(self, kind: str, obj: Obj) -> None:
        if kind in ("ADDED", "MODIFIED"):
            self.take(reduce(obj))

    def take(self, event: Obj) -> None:
        namespace = (event.get("metadata") or {}).get("namespace") or ""
        if namespace in self.namespaces.leases:
            lease = self.namespaces.leases[namespace]
            if lease is not None:
                self.sink(lease, event)
            return
        waiting = self.parked.get(namespace)
        if waiting is None:
            if len(self.parked) >= PARKED_NAMESPACES:
                self.parked.popitem(last=False)
            waiting = self.parked[namespace] = deque(maxlen=PARKED_PER_NAMESPACE)
        waiting.append(event)

    def namespace_known(self, namespace: str, lease: LeaseID | None) -> None:
        for event in self.parked.pop(namespace, ()):
            if lease is not None:
                self.sink(lease, event)

    def connected(self) -> None:
        pass

    def failed(self, exc: Exception) -> None:
        log.warning("lease events: watching events failed: %s", describe(exc))


def reduce(event: Obj) -> Obj:
    """What is kept of an Event, with its uid and namespace: a list of every Event of a
    big cluster is held as these, not as the Events."""
    meta = event.get("metadata") or {}
    return {**kept(event), "metadata": {"uid": meta.get("uid"), "namespace": meta.get("namespace")}}


class KubeLeaseEvents:
    """Follows the Events of lease namespaces until cancelled."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client

    @classmethod
    def from_kubeconfig(cls, path: Path | None) -> KubeLeaseEvents:
        return cls(api_client(path))

    async def follow(self, sink: Sink) -> None:
        """Tell ``sink`` every Event created or updated in a lease namespace (those there
        now first), until cancelled; failures are retried with a backoff."""
        events: _Events | None = None

        def on_namespace(name: str, lease: LeaseID | None) -> None:
            if events is not None:
                events.namespace_known(name, lease)

        namespaces = _Namespaces(on_namespace)
        events = _Events(namespaces, sink)
        watch = ListWatch(self.client, log=log)
        following = asyncio.create_task(watch.follow(namespaces), name="lease-namespaces")
        try:
            await namespaces.ready.wait()
            await watch.follow(events)
        finally:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)

    async def __aenter__(self) -> KubeLeaseEvents:
        return self

    async def __aexit__(self, *_: object) -> None:
        self.client.close()  # type: ignore[no-untyped-call]
