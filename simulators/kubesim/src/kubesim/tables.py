"""Server-side printing: `meta.k8s.io/v1` Table answers, which `kubectl get` asks for.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io, application/json`; the
real server then answers with the columns of `kubectl get` already filled in. Common kinds
get their familiar columns; any other kind gets Name and Age. Watches are not served as
tables (`kubectl get -w` is not supported).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

Row = list[Any]
Columns = list[tuple[str, str]]  # (name, type)


def wanted(accept: str) -> bool:
    return any(
        "as=Table" in part and "g=meta.k8s.io" in part and "v=v1" in part
        for part in accept.split(",")
    )


def age(stamp: str | None, clock: datetime | None = None) -> str:
    """kubectl's short human duration since `stamp` ("45s", "3m12s", "5h", "12d")."""
    if not stamp:
        return "<unknown>"
    then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = int(((clock or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "0s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = obj.get("status") or {}
    return status


def _created(obj: dict[str, Any]) -> str:
    return age(_meta(obj).get("creationTimestamp"))


def _node(obj: dict[str, Any]) -> Row:
    conditions = {c.get("type"): c.get("status") for c in _status(obj).get("conditions") or []}
    state = "Ready" if conditions.get("Ready") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    prefix = "node-role.kubernetes.io/"
    roles = [k[len(prefix) :] for k in _meta(obj).get("labels") or {} if k.startswith(prefix)]
    version = (_status(obj).get("nodeInfo") or {}).get("kubeletVersion", "")
    return [_meta(obj)["name"], state, ",".join(roles) or "<none>", _created(obj), version]


def _pod(obj: dict[str, Any]) -> Row:
    status = _status(obj)
    containers = (obj.get("spec") or {}).get("containers") or []
    states = status.get("containerStatuses") or []
    ready = sum(1 for s in states if s.get("ready"))
    reason = status.get("reason") or status.get("phase") or "Pending"
    for s in states:
        waiting = (s.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
    if _meta(obj).get("deletionTimestamp"):
        reason = "Terminating"
    restarts = sum(int(s.get("restartCount") or 0) for s in states)
    return [
        _meta(obj)["name"],
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        _created(obj),
        status.get("podIP") or "<none>",
        (obj.get("spec") or {}).get("nodeName") or "<none>",
    ]


def _deployment(obj: dict[str, Any]) -> Row:
    status = _status(obj)
    wanted_replicas = (obj.get("spec") or {}).get("replicas", 1)
    return [
        _meta(obj)["name"],
        f"{status.get('readyReplicas', 0)}/{wanted_replicas}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _created(obj),
    ]


def _replicaset(obj: dict[str, Any]) -> Row:
    status = _status(obj)
    return [
        _meta(obj)["name"],
        (obj.get("spec") or {}).get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _created(obj),
    ]


def _statefulset(obj: dict[str, Any]) -> Row:
    wanted_replicas = (obj.get("spec") or {}).get("replicas", 1)
    ready = _status(obj).get("readyReplicas", 0)
    return [_meta(obj)["name"], f"{ready}/{wanted_replicas}", _created(obj)]


def _service(obj: dict[str, Any]) -> Row:
    spec = obj.get("spec") or {}
    ingress = (_status(obj).get("loadBalancer") or {}).get("ingress") or []
    external = [i.get("ip") or i.get("hostname") for i in ingress] or spec.get("externalIPs") or []
    ports = [
        f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}"
        f"/{p.get('protocol', 'TCP')}"
        for p in spec.get("ports") or []
    ]
    return [
        _meta(obj)["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        ",".join(external) or ("<pending>" if spec.get("type") == "LoadBalancer" else "<none>"),
        ",".join(ports) or "<none>",
        _created(obj),
    ]


def _namespace(obj: dict[str, Any]) -> Row:
    return [_meta(obj)["name"], _status(obj).get("phase", "Active"), _created(obj)]


def _claim(obj: dict[str, Any]) -> Row:
    spec, status = obj.get("spec") or {}, _status(obj)
    return [
        _meta(obj)["name"],
        status.get("phase", "Pending"),
        spec.get("volumeName", ""),
        (status.get("capacity") or {}).get("storage", ""),
        ",".join(
            {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX"}.get(m, m)
            for m in status.get("accessModes") or spec.get("accessModes") or []
        ),
        spec.get("storageClassName") or "<unset>",
        _created(obj),
    ]


def _event(obj: dict[str, Any]) -> Row:
    involved = obj.get("involvedObject") or {}
    return [
        age(obj.get("lastTimestamp") or _meta(obj).get("creationTimestamp")),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        obj.get("message", ""),
    ]


def _default(obj: dict[str, Any]) -> Row:
    return [_meta(obj)["name"], _created(obj)]


AGE = ("Age", "string")
PRINTERS: dict[str, tuple[Columns, Callable[[dict[str, Any]], Row]]] = {
    "Node": (
        [("Name", "string"), ("Status", "string"), ("Roles", "string"), AGE, ("Version", "string")],
        _node,
    ),
    "Pod": (
        [
            ("Name", "string"),
            ("Ready", "string"),
            ("Status", "string"),
            ("Restarts", "integer"),
            AGE,
            ("IP", "string"),
            ("Node", "string"),
        ],
        _pod,
    ),
    "Deployment": (
        [
            ("Name", "string"),
            ("Ready", "string"),
            ("Up-to-date", "integer"),
            ("Available", "integer"),
            AGE,
        ],
        _deployment,
    ),
    "ReplicaSet": (
        [
            ("Name", "string"),
            ("Desired", "integer"),
            ("Current", "integer"),
            ("Ready", "integer"),
            AGE,
        ],
        _replicaset,
    ),
    "StatefulSet": ([("Name", "string"), ("Ready", "string"), AGE], _statefulset),
    "Service": (
        [
            ("Name", "string"),
            ("Type", "string"),
            ("Cluster-IP", "string"),
            ("External-IP", "string"),
            ("Port(s)", "string"),
            AGE,
        ],
        _service,
    ),
    "Namespace": ([("Name", "string"), ("Status", "string"), AGE], _namespace),
    "PersistentVolumeClaim": (
        [
            ("Name", "string"),
            ("Status", "string"),
            ("Volume", "string"),
            ("Capacity", "string"),
            ("Access Modes", "string"),
            ("StorageClass", "string"),
            AGE,
        ],
        _claim,
    ),
    "Event": (
        [
            ("Last Seen", "string"),
            ("Type", "string"),
            ("Reason", "string"),
            ("Object", "string"),
            ("Message", "string"),
        ],
        _event,
    ),
}
WIDE_ONLY = {("Pod", "IP"), ("Pod", "Node")}  # shown by `-o wide` only (priority 1)


def table(
    kind: str, items: list[dict[str, Any]], list_meta: dict[str, Any], include: str = "Metadata"
) -> dict[str, Any]:
    """The Table for `items` of `kind`; `include` is the includeObject query parameter."""
    columns, printer = PRINTERS.get(kind, ([("Name", "string"), AGE], _default))
    definitions = [
        {
            "name": name,
            "type": kind_of,
            "format": "name" if name == "Name" else "",
            "description": name,
            "priority": 1 if (kind, name) in WIDE_ONLY else 0,
        }
        for name, kind_of in columns
    ]
    rows = []
    for obj in items:
        row: dict[str, Any] = {"cells": printer(obj)}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": _meta(obj),
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": definitions,
        "rows": rows,
    }
