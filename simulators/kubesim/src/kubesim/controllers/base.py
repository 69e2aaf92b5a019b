"""What every controller uses: typed access to the store, status writes, Event objects.

Controllers are level-triggered: each pass reads the whole state and writes only what
differs, so a pass that finds nothing to do writes nothing and the loop comes to rest.
Writes here are the system's own (`system=True`): no validation, statuses included.

Each controller handles each object inside `Context.isolated`: an object it cannot handle
(one that got into the store without the API's checks) is logged and recorded as a
`FailedSync` Warning event on it, once per version of it, and the controller goes on with
the others.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kubesim.cluster import ClusterSpec
from kubesim.faults import Faults
from kubesim.objects import StoreKey, now
from kubesim.store import Store

PODS: StoreKey = ("", "pods")
NODES: StoreKey = ("", "nodes")
EVENTS: StoreKey = ("", "events")
PVCS: StoreKey = ("", "persistentvolumeclaims")
PVS: StoreKey = ("", "persistentvolumes")
NAMESPACES: StoreKey = ("", "namespaces")
STORAGE_CLASSES: StoreKey = ("storage.k8s.io", "storageclasses")
DEPLOYMENTS: StoreKey = ("apps", "deployments")
REPLICASETS: StoreKey = ("apps", "replicasets")
STATEFULSETS: StoreKey = ("apps", "statefulsets")

log = logging.getLogger("kubesim.controllers")

CONTROLLERS = (
    "namespaces",
    "garbage-collector",
    "nodes",
    "deployments",
    "replicasets",
    "statefulsets",
    "scheduler",
    "kubelet",
    "volumes",
    "events",
)


@dataclass
class ControllerSettings:
    """Which controllers run and how fast the simulated cluster moves."""

    enabled: frozenset[str] = frozenset(CONTROLLERS)
    pod_start_delay: float = 0.2  # scheduled -> Running and Ready
    crash_interval: float = 1.0  # a crash-looping container restarts this often
    event_ttl: float = 3600.0  # an Event is deleted this long after its last write


@dataclass
class Context:
    store: Store
    faults: Faults
    cluster: ClusterSpec
    settings: ControllerSettings
    timers: list[float] = field(default_factory=list)
    # (controller, uid) -> the resourceVersion it failed on, so each failure is told once
    failures: dict[tuple[str, str], str] = field(default_factory=dict)

    @contextlib.contextmanager
    def isolated(self, controller: str, obj: dict[str, Any]) -> Iterator[None]:
        """Run a controller's work on one object; if it fails, record it and go on."""
        try:
            yield
        except Exception as exc:  # one bad object must not stop the others
            self._failed(controller, obj, exc)

    def _failed(self, controller: str, obj: dict[str, Any], exc: Exception) -> None:
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        key = (controller, str(meta.get("uid")))
        version = str(meta.get("resourceVersion"))
        if self.failures.get(key) == version:
            return
        if len(self.failures) >= 10_000:
            self.failures.clear()
        self.failures[key] = version
        where = f"{obj.get('kind')} {meta.get('namespace') or ''}/{meta.get('name')}"
        log.warning("controller %s failed on %s: %s", controller, where, exc, exc_info=exc)
        message = f"{controller} could not handle this object: {exc}"[:1024]
        try:
            self.event(obj, "FailedSync", message, warning=True, component=controller)
        except Exception:
            log.exception("controller %s could not record its failure on %s", controller, where)

    def wake_at(self, when: float) -> None:
        """Ask for another pass at monotonic time `when`."""
        self.timers.append(when)

    def items(self, key: StoreKey, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.store.items(key, namespace)

    def scan(self, key: StoreKey, namespace: str | None = None) -> list[dict[str, Any]]:
        """Every object of a kind (in one namespace) as stored, not copied — a pass over ten
        thousand of them costs the reading: read only, `clone` one before changing it."""
        return self.store.stored(key, namespace)

    def _rtype(self, key: StoreKey) -> Any:
        rtype = self.store.catalog.by_store_key(key)
        if rtype is None:
            raise LookupError(f"no resource type for {key}")
        return rtype

    def create(self, key: StoreKey, obj: dict[str, Any]) -> dict[str, Any]:
        namespace = obj["metadata"].get("namespace", "")
        return self.store.create(self._rtype(key), namespace, obj, system=True)

    def update(self, key: StoreKey, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return self.store.update(
            self._rtype(key), meta.get("namespace", ""), meta["name"], obj, system=True
        )

    def set_status(self, key: StoreKey, obj: dict[str, Any], status: dict[str, Any]) -> bool:
        """Write `status` if it differs; returns whether it did."""
        if obj.get("status") == status:
            return False
        new = dict(obj)
        new["status"] = status
        meta = obj["metadata"]
        rtype = self._rtype(key)
        sub = "status" if "status" in rtype.subresources else None
        self.store.update(
            rtype, meta.get("namespace", ""), meta["name"], new, subresource=sub, system=True
        )
        return True

    def delete(self, key: StoreKey, obj: dict[str, Any]) -> None:
        self.store.remove(key, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    def event(
        self,
        obj: dict[str, Any],
        reason: str,
        message: str,
        *,
        warning: bool = False,
        component: str = "kubesim",
        field_path: str = "",
    ) -> None:
        """Record a core/v1 Event about `obj` (its part `field_path`, a container's
        `spec.containers{name}`); a repeat bumps its count, like the real recorder."""
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        home = self.store.find(NAMESPACES, "", namespace)
        if home is None or home["metadata"].get("deletionTimestamp"):
            return  # no events in a namespace that is gone or going
        seed = f"{meta.get('uid')}/{field_path + '/' if field_path else ''}{reason}/{message}"
        digest = hashlib.sha1(seed.encode()).hexdigest()[:16]  # noqa: S324 - a name, not a secret
        name = f"{meta['name']}.{digest}"
        stamp = now()
        existing = self.store.find(EVENTS, namespace, name)
        if existing is not None:
            existing["count"] = existing.get("count", 1) + 1
            existing["lastTimestamp"] = stamp
            self.update(EVENTS, existing)
            return
        self.create(
            EVENTS,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {
                    "kind": obj.get("kind"),
                    "apiVersion": obj.get("apiVersion"),
                    "name": meta["name"],
                    "namespace": meta.get("namespace"),
                    "uid": meta.get("uid"),
                    "resourceVersion": meta.get("resourceVersion"),
                    **({"fieldPath": field_path} if field_path else {}),
                },
                "reason": reason,
                "message": message,
                "type": "Warning" if warning else "Normal",
                "source": {"component": component},
                "reportingComponent": component,
                "reportingInstance": "kubesim",
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "count": 1,
            },
        )


def owner_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    uid = owner["metadata"]["uid"]
    return any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])


def condition(
    kind: str,
    status: bool,
    reason: str = "",
    message: str = "",
    previous: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A condition that keeps its lastTransitionTime while its status does not change."""
    value = "True" if status else "False"
    before = next((c for c in previous or [] if c.get("type") == kind), None)
    stamp = (
        before["lastTransitionTime"]
        if before and before.get("status") == value and before.get("lastTransitionTime")
        else now()
    )
    cond = {"type": kind, "status": value, "lastTransitionTime": stamp}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def monotonic() -> float:
    return time.monotonic()


def terminating(obj: dict[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))
