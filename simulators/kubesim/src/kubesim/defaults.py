"""Defaults the real API server fills in on write, for the fields clients compare.

Only the defaults a client is likely to read back are applied (replicas, strategies,
restart policy, image pull policy, protocols, service type and target ports, a Secret's
type, with its write-only `stringData` folded into `data`…): enough that an object read
back from kubesim looks like one read back from a cluster.
"""

from __future__ import annotations

import base64
from typing import Any


def apply(kind: str, obj: dict[str, Any]) -> None:
    if kind == "Secret":
        _secret(obj)
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        if kind in ("Namespace",):
            obj["spec"] = {"finalizers": ["kubernetes"]}
        return
    if kind == "Namespace":
        spec.setdefault("finalizers", ["kubernetes"])
    elif kind == "Pod":
        _pod_spec(spec)
    elif kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        _workload(kind, spec)
    elif kind == "Job":
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completions", 1)
        spec.setdefault("parallelism", 1)
        _pod_spec(((spec.get("template") or {}).setdefault("spec", {})), restart="Never")
    elif kind == "Service":
        _service(spec)
    elif kind == "PersistentVolumeClaim":
        spec.setdefault("volumeMode", "Filesystem")


def new_pod_status(pod: dict[str, Any]) -> dict[str, Any]:
    """A new pod's status, as the API server writes it: Pending, with its QoS class."""
    return {"phase": "Pending", "qosClass": qos_class(pod)}


def qos_class(pod: dict[str, Any]) -> str:
    """Guaranteed (CPU and memory limits everywhere, requests equal to them), BestEffort
    (no requests or limits at all) or Burstable."""
    spec = pod.get("spec") or {}
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    resources = [c.get("resources") or {} for c in containers if isinstance(c, dict)]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for r in resources:
        limits, requests = r.get("limits") or {}, r.get("requests") or {}
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                return "Burstable"
    return "Guaranteed"


def _workload(kind: str, spec: dict[str, Any]) -> None:
    if kind != "DaemonSet":
        spec.setdefault("replicas", 1)
    if kind != "ReplicaSet":
        spec.setdefault("revisionHistoryLimit", 10)
    if kind == "Deployment":
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            strategy.setdefault("type", "RollingUpdate")
            strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
    elif kind == "StatefulSet":
        spec.setdefault("podManagementPolicy", "OrderedReady")
        spec.setdefault(
            "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
        )
        spec.setdefault(
            "persistentVolumeClaimRetentionPolicy",
            {"whenDeleted": "Retain", "whenScaled": "Retain"},
        )
    template = spec.get("template")
    if isinstance(template, dict):
        _pod_spec(template.setdefault("spec", {}))


def _pod_spec(spec: dict[str, Any], restart: str = "Always") -> None:
    spec.setdefault("restartPolicy", restart)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if not isinstance(container, dict):
                continue
            image = str(container.get("image") or "")
            tag = image.rsplit("/", 1)[-1]
            latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
            container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def _secret(obj: dict[str, Any]) -> None:
    """`type` defaults to Opaque; `stringData` is write-only, folded into `data` (base64)."""
    obj.setdefault("type", "Opaque")
    strings = obj.get("stringData")
    if not isinstance(strings, dict) or not all(isinstance(v, str) for v in strings.values()):
        return  # left for validation to refuse
    data = obj.get("data")
    data = dict(data) if isinstance(data, dict) else {}
    for key, value in strings.items():
        data[key] = base64.b64encode(value.encode()).decode()
    del obj["stringData"]
    if data:
        obj["data"] = data


def _service(spec: dict[str, Any]) -> None:
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])
