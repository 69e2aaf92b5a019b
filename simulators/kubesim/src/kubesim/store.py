"""The object store: the API's writes (create, update, patch, delete) by the real server's rules.

The rules live here: uid/creationTimestamp/generation, optimistic concurrency on
`resourceVersion`, the status subresource (each side ignores the other's changes),
finalizers and `deletionTimestamp`, namespaces that must exist and must not be terminating,
defaults and validation, orphaning and the custom resources of a deleted CRD. A write that
passes them is committed by the storage under the store (:mod:`kubesim.storage`), which
holds the reads, the resourceVersions and the watches too; :class:`Store` is what the API
and the controllers use.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

from kubesim import crd, decoding, defaults, errors, patch, schemas, validation
from kubesim.catalog import Catalog, ResourceType
from kubesim.decoding import FieldValidation
from kubesim.objects import (
    CRDS,
    NAMESPACES,
    PVCS,
    SERVICES,
    STORAGE_CLASSES,
    ObjKey,
    StoreKey,
    clone,
    now,
)
from kubesim.storage import Storage

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
MAX_OBJECT = 3 * 2**19  # 1.5 MiB: what etcd takes in one request
# generated names come from a generator of their own: the process's global one is its
# users' (a test's seeded or property-based draws must not see kubesim's threads use it)
_SUFFIXES = random.Random()  # noqa: S311 - names, not secrets


class Store(Storage):
    def __init__(
        self,
        catalog: Catalog | None = None,
        *,
        kube_version: str = "1.32",
        history: int = 10_000,
    ) -> None:
        super().__init__(catalog, history=history)
        self.kube_version = kube_version
        schemas.schema_version(kube_version)  # refuse an unsupported version early

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
        self._prepare(rtype, new, old, system=system)
        if "generation" in old_meta:  # compared with the defaults in, as the API server does
            meta["generation"] = old_meta["generation"]
            if _content(rtype, new) != _content(rtype, old):
                meta["generation"] += 1
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


def _content(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an object whose changes bump `metadata.generation`: all but metadata and
    status — and status too, for a custom resource whose CRD has no status subresource."""
    own_status = not rtype.custom or "status" in rtype.subresources
    skip = ("metadata", "status") if own_status else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skip}
