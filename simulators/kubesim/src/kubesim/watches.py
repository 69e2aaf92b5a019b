"""Watches: the events a write records, each client's view of them, and the history.

Every write is one :class:`Event`, numbered by the resourceVersion it made. The
:class:`History` keeps the latest events, a bounded number of them (older ones are
compacted away, like etcd's), so that a watch can start from a resourceVersion and first
replay what it missed — or get 410 Gone when that was compacted — and it hands each new
event to the open watches, whose queues the API streams from.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kubesim import errors
from kubesim.objects import StoreKey, clone
from kubesim.selectors import Matcher


@dataclass(frozen=True)
class Event:
    rv: int
    key: StoreKey
    type: str  # ADDED, MODIFIED, DELETED
    obj: dict[str, Any]
    old: dict[str, Any] | None = None


@dataclass(eq=False)  # compared by identity: the store keeps its watches in a set
class Watch:
    """One client's watch: events matching its resource, namespace and selectors."""

    key: StoreKey
    namespace: str | None
    labels: Matcher
    fields: Matcher
    queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)

    def translate(self, event: Event) -> tuple[str, dict[str, Any]] | None:
        """The event as this watch sees it: objects moving in or out of its selectors."""
        if event.key != self.key:
            return None
        if self.namespace is not None and event.obj["metadata"].get("namespace") != self.namespace:
            return None
        now_in = self._selected(event.obj)
        was_in = event.old is not None and self._selected(event.old)
        if event.type == "MODIFIED":
            if now_in and was_in:
                return ("MODIFIED", event.obj)
            if now_in:
                return ("ADDED", event.obj)
            if was_in:
                return ("DELETED", event.obj)
            return None
        return (event.type, event.obj) if now_in else None

    def _selected(self, obj: dict[str, Any]) -> bool:
        return self.labels(obj) and self.fields(obj)


class History:
    """The latest events, for watches that start from a resourceVersion, and the open
    watches, each told of every new event."""

    def __init__(self, size: int) -> None:
        self.compacted = 0  # the version the history starts after: older ones are gone
        self._size = size
        self._events: deque[Event] = deque()
        self._watches: set[Watch] = set()

    def record(self, event: Event) -> None:
        self._events.append(event)
        while len(self._events) > self._size:
            self.compacted = self._events.popleft().rv
        for watch in self._watches:
            watch.queue.put_nowait(event)

    def replay(self, watch: Watch, start: int) -> list[tuple[str, dict[str, Any]]]:
        """What ``watch`` sees of the events after version ``start``; 410 Gone when they
        are compacted away."""
        if start < self.compacted:
            raise errors.expired(f"too old resource version: {start} ({self.compacted + 1})")
        return [
            (seen[0], clone(seen[1]))
            for event in self._events
            if event.rv > start and (seen := watch.translate(event)) is not None
        ]

    def add(self, watch: Watch) -> None:
        self._watches.add(watch)

    def discard(self, watch: Watch) -> None:
        self._watches.discard(watch)

    def close(self) -> None:
        """End every open watch."""
        for watch in list(self._watches):
            watch.queue.put_nowait(None)
        self._watches.clear()

    def compact(self, rv: int) -> int:
        """Forget every event, like an etcd compaction at version ``rv`` (the store's
        latest); returns it."""
        self._events.clear()
        self.compacted = rv
        return self.compacted
