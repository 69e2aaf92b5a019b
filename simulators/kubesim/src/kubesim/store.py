"""The object store: every object, one global resourceVersion, and the watch history.

All reads and writes run on one event loop and never await in the middle, so each write is
atomic without locks. A write stamps the object with the next resourceVersion, records a
watch event in a bounded history (older events are compacted away, and a watch or `continue`
from before the compaction gets 410 Gone), and wakes the watches and the controllers.

The rules of the real server live here: uid/creationTimestamp/generation, optimistic
concurrency on `resourceVersion`, the status subresource (each side ignores the other's
changes), finalizers and `deletionTimestamp`, namespaces that must exist and must not be
terminating, and CRDs that start serving their resources when created.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import json
import random
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from kubesim import crd, decoding, defaults, errors, patch, schemas, services, validation
from kubesim.catalog import Catalog, ResourceType
from kubesim.decoding import FieldValidation
from kubesim.selectors import Matcher

T = TypeVar("T")

StoreKey = tuple[str, str]  # (group, plural)
ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects

NAMESPACES: StoreKey = ("", "namespaces")
CRDS: StoreKey = ("apiextensions.k8s.io", "customresourcedefinitions")
SERVICES: StoreKey = ("", "services")
PVCS: StoreKey = ("", "persistentvolumeclaims")
STORAGE_CLASSES: StoreKey = ("storage.k8s.io", "storageclasses")
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
MAX_OBJECT = 3 * 2**19  # 1.5 MiB: what etcd takes in one request
# generated names come from a generator of their own: the process's global one is its
# users' (a test's seeded or property-based draws must not see kubesim's threads use it)
_SUFFIXES = random.Random()  # noqa: S311 - names, not secrets


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


class Store:
    def __init__(
        self,
        catalog: Catalog | None = None,
        *,
        kube_version: str = "1.32",
        history: int = 10_000,
    ) -> None:
        self.catalog = catalog or Catalog()
        self.kube_version = kube_version
        self.rv = 0
        self.compacted = 0
        self._history_size = history
        self._history: deque[Event] = deque()
        self._objects: dict[StoreKey, dict[ObjKey, dict[str, Any]]] = {}
        # each kind's keys, in order, everywhere (None) and per namespace
        self._sorted: dict[tuple[StoreKey, str | None], list[ObjKey]] = {}
        # per kind and namespace, the keys there: reads of one namespace cost its size,
        # not the cluster's (controllers read one owner's objects at a time)
        self._in_namespace: dict[StoreKey, dict[str, set[ObjKey]]] = {}
        self._watches: set[Watch] = set()
        self._allocations = services.Allocations()  # what the stored Services hold
        self.listeners: list[Callable[[Event], None]] = []
        schemas.schema_version(kube_version)  # refuse an unsupported version early

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
        if rv < self.compacted:
            raise errors.expired(
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter."
            )
        return (start[0], start[1])

    # -- writes ------------------------------------------------------------------
    def create(
        self,
        rtype: ResourceType,
        namespace: str,
        body: dict[str, Any],
        *,
        dry_run: bool = False,
        system: bool = False,
        fields: FieldValidation | None = None,
    ) -> dict[str, Any]:
        obj = clone(body)
        decoding.check_type(rtype, obj)
        if not system:
            obj = decoding.decode_object(rtype, obj, self.kube_version, fields)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(_SUFFIXES.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
            meta["name"] = meta["generateName"] + suffix
        name = meta.get("name") or ""
        if rtype.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta["namespace"] = namespace
            self._check_namespace(rtype, namespace, name)
        else:
            meta.pop("namespace", None)
        for server_field in (
            "uid",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            meta.pop(server_field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if rtype.has_spec:
            meta["generation"] = 1
        if "status" in rtype.subresources and not system:
            obj.pop("status", None)
        if rtype.kind == "Pod" and not rtype.custom and not obj.get("status"):
            obj["status"] = defaults.new_pod_status(obj)
        self._prepare(rtype, obj, None, system=system)
        # as the real server does, an invalid object is refused (422) before its name is
        # found taken (409)
        key = (namespace if rtype.namespaced else "", name)
        if key in self._objects.get(rtype.store_key, {}):
            raise errors.already_exists(rtype, name)
        if dry_run:
            return obj
        self._commit(rtype, key, obj, None)
        return clone(obj)

    def update(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        system: bool = False,
        fields: FieldValidation | None = None,
    ) -> dict[str, Any]:
        key, old = self._stored(rtype, namespace, name)
        new = clone(body)
        decoding.check_type(rtype, new)
        if not system:
            new = decoding.decode_object(rtype, new, self.kube_version, fields)
        meta = new.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on "
                f"the URL ({name})"
            )
        if rtype.namespaced and meta.get("namespace") not in (None, "", namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )
        given = meta.get("resourceVersion")
        if given and given != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rtype, name)
        if not given and rtype.custom and not system:
            raise errors.invalid(
                rtype,
                name,
                [
                    (
                        "metadata.resourceVersion",
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        new = self._merge_subresource(rtype, old, new, subresource)
        return self._replace(rtype, key, old, new, dry_run=dry_run, system=system)

    def patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        fields: FieldValidation | None = None,
    ) -> dict[str, Any]:
        key, old = self._stored(rtype, namespace, name)
        current = clone(old)
        if patch_type == patch.JSON_PATCH:
            new = patch.json_patch(current, body)
        elif patch_type == patch.MERGE_PATCH:
            if not isinstance(body, dict | list):
                raise errors.bad_request("Invalid JSON Patch: a merge patch must be an object")
            new = patch.merge_patch(current, body)
        elif patch_type == patch.STRATEGIC_MERGE_PATCH:
            root = (
                None
                if rtype.custom
                else schemas.patch_root(rtype.kind, rtype.api_version, self.kube_version)
            )
            if root is None:
                raise errors.unsupported_media_type(
                    "the body of the request was in an unknown format - accepted media types "
                    f"include: {patch.JSON_PATCH}, {patch.MERGE_PATCH}"
                )
            new = patch.strategic_merge_patch(current, body, root)
        else:
            raise errors.unsupported_media_type(
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{patch.JSON_PATCH}, {patch.MERGE_PATCH}, {patch.STRATEGIC_MERGE_PATCH}"
            )
        new = decoding.decode_object(rtype, new, self.kube_version, fields, patched=name)
        decoding.check_type(rtype, new)
        meta = new.setdefault("metadata", {})
        if meta.get("resourceVersion") not in (None, old["metadata"]["resourceVersion"]):
            raise errors.conflict(rtype, name)
        if meta.get("name", name) != name:
            raise errors.bad_request("metadata.name cannot be changed by a patch")
        new = self._merge_subresource(rtype, old, new, subresource)
        return self._replace(rtype, key, old, new, dry_run=dry_run, system=False)

    def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        options: dict[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        key, old = self._stored(rtype, namespace, name)
        options = options or {}
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
            raise errors.ApiError(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {pre['uid']}, "
                f"UID in object meta: {old['metadata']['uid']}",
            )
        if (
            pre.get("resourceVersion")
            and pre["resourceVersion"] != old["metadata"]["resourceVersion"]
        ):
            raise errors.conflict(rtype, name)
        if dry_run:
            return clone(old)
        if options.get("propagationPolicy") == "Orphan":
            self._orphan(old["metadata"]["uid"])
        if rtype.store_key == CRDS:
            self._drop_custom_resources(old)
        finalizers = list(old["metadata"].get("finalizers") or [])
        terminating = rtype.store_key == NAMESPACES
        if finalizers or terminating:
            if old["metadata"].get("deletionTimestamp"):
                return clone(old)
            new = clone(old)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if terminating:
                new.setdefault("status", {})["phase"] = "Terminating"
            self._commit(rtype, key, new, old)
            return clone(new)
        gone = clone(old)
        self._commit(rtype, key, None, old)
        return gone

    def remove(self, key: StoreKey, namespace: str, name: str) -> None:
        """Delete for the controllers: as a client would, honouring finalizers."""
        rtype = self.catalog.by_store_key(key)
        if rtype is not None and (namespace, name) in self._objects.get(key, {}):
            self.delete(rtype, namespace, name)

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
            if start < self.compacted:
                raise errors.expired(f"too old resource version: {start} ({self.compacted + 1})")
            for event in self._history:
                if event.rv > start and (seen := watch.translate(event)) is not None:
                    initial.append((seen[0], clone(seen[1])))
        self._watches.add(watch)
        return watch, initial

    def unwatch(self, watch: Watch) -> None:
        self._watches.discard(watch)

    def close_watches(self) -> None:
        for watch in list(self._watches):
            watch.queue.put_nowait(None)
        self._watches.clear()

    def compact(self) -> int:
        """Forget the watch history, like an etcd compaction; returns the compacted version."""
        self._history.clear()
        self.compacted = self.rv
        return self.compacted

    # -- internals ---------------------------------------------------------------
    def _check_namespace(self, rtype: ResourceType, namespace: str, name: str) -> None:
        ns = self._objects.get(NAMESPACES, {}).get(("", namespace))
        if ns is None:
            raise errors.ApiError(
                404,
                "NotFound",
                f'namespaces "{namespace}" not found',
                {"name": namespace, "kind": "namespaces"},
            )
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                f'{rtype.qualified} "{name}" is forbidden: unable to create new content in '
                f"namespace {namespace} because it is being terminated"
            )

    def _merge_subresource(
        self, rtype: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> dict[str, Any]:
        if subresource == "status":
            if "status" not in rtype.subresources:
                raise errors.not_found(rtype, f"{old['metadata']['name']}/status")
            merged = clone(old)
            merged["status"] = new.get("status")
            if merged["status"] is None:
                merged.pop("status")
            return merged
        if subresource is not None:
            raise errors.method_not_allowed(f"subresource {subresource} cannot be written")
        if "status" in rtype.subresources:
            new.pop("status", None)
            if "status" in old:
                new["status"] = clone(old["status"])
        return new

    def _replace(
        self,
        rtype: ResourceType,
        key: ObjKey,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        dry_run: bool,
        system: bool,
    ) -> dict[str, Any]:
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        for fixed in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
            "name",
        ):
            if fixed in old_meta:
                meta[fixed] = old_meta[fixed]
            else:
                meta.pop(fixed, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if "generation" in old_meta:
            meta["generation"] = old_meta["generation"]
            if _content(rtype, new) != _content(rtype, old):
                meta["generation"] += 1
        self._prepare(rtype, new, old, system=system)
        if new == old:
            return clone(old)  # a no-op write does not bump the resourceVersion
        if dry_run:
            return new
        finalized = not meta.get("finalizers") and (
            rtype.store_key != NAMESPACES or not (new.get("spec") or {}).get("finalizers")
        )
        if old_meta.get("deletionTimestamp") and finalized:
            gone = clone(new)
            self._commit(rtype, key, None, old)
            return gone
        self._commit(rtype, key, new, old)
        return clone(new)

    def _default_storage_class(self, pvc: dict[str, Any]) -> None:
        """The DefaultStorageClass admission: a new claim that names no class gets the one
        annotated ``storageclass.kubernetes.io/is-default-class: "true"`` (the newest, if
        several are)."""
        spec = pvc.setdefault("spec", {})
        if spec.get("storageClassName") is not None:
            return
        marked = [
            c
            for c in self._objects.get(STORAGE_CLASSES, {}).values()
            if (c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) == "true"
        ]
        if marked:
            newest = max(marked, key=lambda c: c["metadata"].get("creationTimestamp", ""))
            spec["storageClassName"] = newest["metadata"]["name"]

    def _prepare(
        self,
        rtype: ResourceType,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        system: bool,
    ) -> None:
        """Defaults and validation of an object about to be written."""
        name = obj["metadata"].get("name", "")
        if rtype.custom:
            causes = (
                []
                if system
                else validation.check_metadata(rtype, obj) + crd.check_custom(rtype, obj)
            )
        else:
            defaults.apply(rtype.kind, obj)
            causes = [] if system else validation.check_builtin(rtype, obj, self.kube_version)
        if rtype.store_key == CRDS and not system:
            causes += crd.check_crd(obj)
            if old is not None and old["spec"].get("group") != obj["spec"].get("group"):
                causes.append(
                    ("spec.group", "FieldValueInvalid", "Invalid value: field is immutable")
                )
        if rtype.store_key == NAMESPACES:
            obj.setdefault("status", {}).setdefault("phase", "Active")
        if rtype.store_key == PVCS and old is None:
            self._default_storage_class(obj)
        if rtype.store_key == SERVICES:
            causes += self._allocations.allocate(obj, old)
        if causes:
            raise errors.invalid(rtype, name, causes)
        if not system and (size := len(json.dumps(obj, separators=(",", ":")))) > MAX_OBJECT:
            raise errors.ApiError(
                413,
                "RequestEntityTooLarge",
                f"etcdserver: request is too large: {rtype.kind} {name!r} is {size} bytes, "
                f"more than the {MAX_OBJECT} etcd takes",
            )
        if rtype.store_key == CRDS:
            obj["status"] = crd.crd_status(obj, (old or obj)["metadata"]["creationTimestamp"])

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
        self._history.append(event)
        while len(self._history) > self._history_size:
            self.compacted = self._history.popleft().rv
        for watch in self._watches:
            watch.queue.put_nowait(event)
        for listener in self.listeners:
            listener(event)

    def _orphan(self, uid: str) -> None:
        for key, objects in self._objects.items():
            rtype = self.catalog.by_store_key(key)
            for obj in list(objects.values()):
                refs = obj["metadata"].get("ownerReferences") or []
                if rtype is not None and any(r.get("uid") == uid for r in refs):
                    new = clone(obj)
                    new["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
                    self.update(
                        rtype,
                        obj["metadata"].get("namespace", ""),
                        obj["metadata"]["name"],
                        new,
                        system=True,
                    )

    def _drop_custom_resources(self, definition: dict[str, Any]) -> None:
        key = (definition["spec"]["group"], definition["spec"]["names"]["plural"])
        rtype = self.catalog.by_store_key(key)
        if rtype is None:
            return
        for obj_key in list(self._objects.get(key, {})):
            self._commit(rtype, obj_key, None, self._objects[key][obj_key])

    def all_objects(self) -> Iterable[tuple[StoreKey, dict[str, Any]]]:
        """Every stored object (not copies: for the controllers' read-only scans)."""
        for key, objects in self._objects.items():
            for obj in objects.values():
                yield key, obj


def _content(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an object whose changes bump `metadata.generation`: all but metadata and
    status — and status too, for a custom resource whose CRD has no status subresource."""
    own_status = not rtype.custom or "status" in rtype.subresources
    skip = ("metadata", "status") if own_status else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skip}
