"""The storage under the API: every object, one global resourceVersion, reads and commits.

All reads and writes run on one event loop and never await in the middle, so each write is
atomic without locks. A commit stamps the object with the next resourceVersion, records a
watch event in the history (:mod:`kubesim.watches`) and wakes the watches and the
controllers; it also keeps in step what stored objects hold — the ClusterIPs and node ports
of Services, the resources CRDs serve. Lists come in pages, whose `continue` tokens expire
with the history (410 Gone).

The rules a write follows before it is committed are the API's, in :mod:`kubesim.store`.
"""

from __future__ import annotations

import base64
import bisect
import json
from collections.abc import Callable, Iterable
from typing import Any

from kubesim import errors, services
from kubesim.catalog import Catalog, ResourceType
from kubesim.objects import CRDS, SERVICES, ObjKey, StoreKey, clone
from kubesim.selectors import Matcher
from kubesim.watches import Event, History, Watch


class Storage:
    def __init__(self, catalog: Catalog | None = None, *, history: int = 10_000) -> None:
        self.catalog = catalog or Catalog()
        self.rv = 0
        self.history = History(history)
        self._objects: dict[StoreKey, dict[ObjKey, dict[str, Any]]] = {}
        # each kind's keys, in order, everywhere (None) and per namespace
        self._sorted: dict[tuple[StoreKey, str | None], list[ObjKey]] = {}
        # per kind and namespace, the keys there: reads of one namespace cost its size,
        # not the cluster's (controllers read one owner's objects at a time)
        self._in_namespace: dict[StoreKey, dict[str, set[ObjKey]]] = {}
        self._allocations = services.Allocations()  # what the stored Services hold
        self.listeners: list[Callable[[Event], None]] = []

    # -- reads -------------------------------------------------------------------
    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        return clone(self._stored(rtype, namespace, name)[1])

    def _stored(
        self, rtype: ResourceType, namespace: str, name: str
    ) -> tuple[ObjKey, dict[str, Any]]:
        """The key and the stored object itself (not a copy); 404 when there is none."""
        key = (namespace if rtype.namespaced else "", name)
        obj = self._objects.get(rtype.store_key, {}).get(key)
        if obj is None:
            raise errors.not_found(rtype, name)
        return key, obj

    def find(self, key: StoreKey, namespace: str, name: str) -> dict[str, Any] | None:
        obj = self._objects.get(key, {}).get((namespace, name))
        return clone(obj) if obj is not None else None

    def items(self, key: StoreKey, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of every object of a kind (in one namespace), ordered by namespace and name."""
        objects = self._objects.get(key, {})
        return [clone(objects[k]) for k in self._keys(key, namespace)]

    def stored(self, key: StoreKey, namespace: str | None = None) -> list[dict[str, Any]]:
        """The stored objects of a kind (in one namespace) themselves, not copies, ordered
        by namespace and name: for the controllers' read-only scans, which copy what they
        change."""
        objects = self._objects.get(key, {})
        return [objects[k] for k in self._keys(key, namespace)]

    def _keys(self, key: StoreKey, namespace: str | None) -> list[ObjKey]:
        """The keys of a kind's objects (in one namespace), sorted; kept sorted until a key
        comes or goes, so a page of a long list costs a page."""
        if (key, namespace) not in self._sorted:
            keys = (
                self._objects.get(key, {})
                if namespace is None
                else self._in_namespace.get(key, {}).get(namespace, ())
            )
            self._sorted[key, namespace] = sorted(keys)
        return self._sorted[key, namespace]

    def select(
        self,
        rtype: ResourceType,
        namespace: str | None,
        labels: Matcher,
        fields: Matcher,
        *,
        limit: int = 0,
        token: str | None = None,
        copy: bool = True,
    ) -> tuple[list[dict[str, Any]], str | None, int]:
        """One page of matching objects: (items, continue token, remaining count); with
        ``copy=False`` the stored objects themselves, to be read only (a page to send)."""
        share: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] = clone if copy else list
        start: ObjKey | None = None
        if token:
            start = self._read_token(token)
        objects = self._objects.get(rtype.store_key, {})
        keys = self._keys(rtype.store_key, namespace)
        if start is not None:
            keys = keys[bisect.bisect_right(keys, start) :]
        found: list[dict[str, Any]] = []
        for position, key in enumerate(keys):
            obj = objects[key]
            if not (labels(obj) and fields(obj)):
                continue
            if limit and len(found) == limit:  # one more: the page ends before it
                last = found[-1]["metadata"]
                cont = self._make_token((last.get("namespace", ""), last["name"]))
                return share(found), cont, len(keys) - position  # exact without selectors
            found.append(obj)
        return share(found), None, 0

    def _make_token(self, start: ObjKey) -> str:
        raw = json.dumps({"rv": self.rv, "start": list(start)}).encode()
        return base64.urlsafe_b64encode(raw).decode()

    def _read_token(self, token: str) -> ObjKey:
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            rv, start = int(data["rv"]), data["start"]
        except (ValueError, KeyError, TypeError, OverflowError):
            raise errors.bad_request("invalid continue token") from None
        if not (
            isinstance(start, list) and len(start) == 2 and all(isinstance(s, str) for s in start)
        ):
            raise errors.bad_request("invalid continue token")
        if rv < self.history.compacted:
            raise errors.expired(
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter."
            )
        return (start[0], start[1])

    # -- watches -----------------------------------------------------------------
    def watch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        since: str | None,
        labels: Matcher,
        fields: Matcher,
    ) -> tuple[Watch, list[tuple[str, dict[str, Any]]]]:
        """Register a watch; returns it with the events it must send first."""
        watch = Watch(rtype.store_key, namespace, labels, fields)
        initial: list[tuple[str, dict[str, Any]]] = []
        if since in (None, "", "0"):
            items, _, _ = self.select(rtype, namespace, labels, fields)
            initial = [("ADDED", obj) for obj in items]
        else:
            try:
                start = int(str(since))
            except ValueError:
                raise errors.bad_request(f'invalid resource version "{since}"') from None
            initial = self.history.replay(watch, start)
        self.history.add(watch)
        return watch, initial

    def unwatch(self, watch: Watch) -> None:
        self.history.discard(watch)

    def close_watches(self) -> None:
        self.history.close()

    def compact(self) -> int:
        """Forget the watch history, like an etcd compaction; returns the compacted version."""
        return self.history.compact(self.rv)

    # -- commits -----------------------------------------------------------------
    def _commit(
        self,
        rtype: ResourceType,
        key: ObjKey,
        new: dict[str, Any] | None,
        old: dict[str, Any] | None,
    ) -> None:
        self.rv += 1
        if rtype.store_key == SERVICES:
            if old is not None:
                self._allocations.release(old)
            if new is not None:
                self._allocations.hold(new)
        if old is None or new is None:
            self._sorted.pop((rtype.store_key, None), None)
            self._sorted.pop((rtype.store_key, key[0]), None)
        objects = self._objects.setdefault(rtype.store_key, {})
        index = self._in_namespace.setdefault(rtype.store_key, {})
        if new is None:
            if old is None:
                raise ValueError("a commit needs an old or a new object")
            del objects[key]
            index[key[0]].discard(key)
            if not index[key[0]]:
                del index[key[0]]
            shown = clone(old)
            shown["metadata"]["resourceVersion"] = str(self.rv)
            event = Event(self.rv, rtype.store_key, "DELETED", shown, old)
        else:
            new["metadata"]["resourceVersion"] = str(self.rv)
            objects[key] = new
            index.setdefault(key[0], set()).add(key)
            event = Event(
                self.rv,
                rtype.store_key,
                "ADDED" if old is None else "MODIFIED",
                clone(new),
                old,
            )
        if rtype.store_key == CRDS:
            if new is None:
                self.catalog.unregister_crd(key[1])
            else:
                self.catalog.register_crd(new)
        self.history.record(event)
        for listener in self.listeners:
            listener(event)

    def all_objects(self) -> Iterable[tuple[StoreKey, dict[str, Any]]]:
        """Every stored object (not copies: for the controllers' read-only scans)."""
        for key, objects in self._objects.items():
            for obj in objects.values():
                yield key, obj
