"""Events expire: an Event is deleted ``event_ttl`` seconds after its last write, as
kube-apiserver stores every Event under an etcd lease of ``--event-ttl`` (1h by default)
that each create or update starts again.

The clock of each Event is set by the store's writes (:meth:`EventTTL.written`, a store
listener), not by the timestamps the writer put in it; a pass deletes the Events whose time
has come and asks for a wake-up at the next one. Deleting one is an ordinary delete: its
watchers see ``DELETED``.
"""

from __future__ import annotations

import heapq

from kubesim.controllers.base import EVENTS, Context, monotonic
from kubesim.objects import ObjKey
from kubesim.watches import Event


class EventTTL:
    """When each stored Event was last written, and the deletion of the expired ones."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._due: dict[ObjKey, tuple[float, str]] = {}  # (namespace, name) -> (due, version)
        self._queue: list[tuple[float, ObjKey]] = []  # (due, key), stale ones skipped

    def written(self, event: Event) -> None:
        """A store write: an Event created or updated starts its TTL again."""
        if event.key != EVENTS:
            return
        meta = event.obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if event.type == "DELETED":
            self._due.pop(key, None)
            return
        due = monotonic() + self.ttl
        self._due[key] = (due, str(meta.get("resourceVersion")))
        heapq.heappush(self._queue, (due, key))

    def __call__(self, ctx: Context) -> None:
        now = monotonic()
        while self._queue and self._queue[0][0] <= now:
            due, key = heapq.heappop(self._queue)
            current = self._due.get(key)
            if current is None or current[0] != due:
                continue  # written again since, or gone: a later entry decides
            del self._due[key]
            stored = ctx.store.find(EVENTS, *key)
            if stored is not None and stored["metadata"].get("resourceVersion") == current[1]:
                ctx.delete(EVENTS, stored)
        if self._queue:
            ctx.wake_at(self._queue[0][0])
