"""What the ``kube`` deployment backend decides without talking to the server: whether an
object held by the server is up to date with the desired one, what to write instead, and
how a lease's workloads, Services, Ingresses and pods read as Akash's status (pure
functions over the objects' JSON, tested on their own).
"""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from akcluster.domain.objects.base import MANAGED, MANIFEST_SERVICE
from aktypes.events import ForwardedPort, LeasedIPStatus, ServiceStatus, Termination

Obj = dict[str, Any]

APPLIED = "akash.network/applied"  # fingerprint of the desired object last written
_NODE_PORT_SUFFIX = "-np"
_WAITING_FAILURES = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
_RESTARTS = 3  # a container not ready after this many restarts keeps failing


_NOT_BODY = frozenset({"apiVersion", "kind", "metadata", "status"})
_SCALARS = (str, int, bool, float, type(None))


def fingerprint(desired: Mapping[str, Any]) -> str:
    """A short hash of the desired object, written in :data:`APPLIED`: of its compact JSON
    with sorted keys (orjson: recovery stamps every object of every lease, and the standard
    encoder took most of that time)."""
    text = orjson.dumps(desired, option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(text).hexdigest()[:32]


def _prefix(key: str) -> str:
    """A key's prefix (``akash.network/x`` → ``akash.network``); an unprefixed key is its
    own (``akash.network``, the label every Akash object carries)."""
    return key.split("/", 1)[0]


def owned_merge(current: Mapping[str, str] | None, desired: Mapping[str, str]) -> dict[str, str]:
    """Labels (or annotations) to write: the desired ones, plus those of ``current`` whose
    prefix is not ours (``akash.network`` and every prefix the desired ones use)."""
    owned = {_prefix(key) for key in desired} | {MANAGED}
    kept = {k: v for k, v in (current or {}).items() if _prefix(k) not in owned}
    return kept | dict(desired)


def covers(actual: Any, wanted: Any) -> bool:
    """Whether ``actual`` (the server's) holds everything ``wanted`` says: dict keys the
    server added are defaults; lists must match element by element; a missing value
    equals an empty or zero one (Go leaves those out); JSON null means "not set".

    Exact types are tried first, and an equal part is taken whole: recovery runs this on
    every object of every lease at start."""
    kind = type(wanted)
    if kind is dict or (kind not in _SCALARS and kind is not list and isinstance(wanted, Mapping)):
        if actual is None:
            return all(covers(None, value) for value in wanted.values())
        if actual == wanted:
            return True
        if type(actual) is not dict and not isinstance(actual, Mapping):
            return False
        for key, value in wanted.items():  # noqa: SIM110 - a loop: all() of a generator is slower
            if not covers(actual.get(key), value):
                return False
        return True
    if kind is list:
        if actual is None:
            return not wanted
        if type(actual) is not list or len(actual) != len(wanted):
            return False
        for a, w in zip(actual, wanted, strict=True):  # noqa: SIM110 - as above
            if not covers(a, w):
                return False
        return True
    if wanted is None:
        return True
    if actual is None:
        return wanted == "" or wanted is False or (wanted == 0 and kind is not bool)
    return type(actual) is kind and bool(actual == wanted)


def _annotations(desired: Mapping[str, Any], stamp: str) -> dict[str, str]:
    return dict((desired.get("metadata") or {}).get("annotations") or {}) | {APPLIED: stamp}


def up_to_date(current: Mapping[str, Any], desired: Mapping[str, Any], stamp: str) -> bool:
    """Whether writing ``desired`` would change nothing that matters in ``current``."""
    have, want = current.get("metadata") or {}, desired.get("metadata") or {}
    labels = want.get("labels") or {}
    if owned_merge(have.get("labels"), labels) != (have.get("labels") or {}):
        return False
    annotations = _annotations(desired, stamp)
    if owned_merge(have.get("annotations"), annotations) != (have.get("annotations") or {}):
        return False
    body = _as_stored(desired)
    return all(covers(current.get(k), v) for k, v in body.items() if k not in _NOT_BODY)


def _as_stored(desired: Mapping[str, Any]) -> Mapping[str, Any]:
    """``desired`` as the server stores it, where that differs: a Secret's ``stringData``
    is kept base64-encoded in ``data``."""
    strings = desired.get("stringData") if desired.get("kind") == "Secret" else None
    if not strings:
        return desired
    encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in strings.items()}
    data = dict(desired.get("data") or {}) | encoded
    return {k: v for k, v in desired.items() if k != "stringData"} | {"data": data}


def created(desired: Mapping[str, Any], stamp: str) -> Obj:
    body = copy.deepcopy(dict(desired))
    body["metadata"] = dict(body.get("metadata") or {}) | {
        "annotations": _annotations(desired, stamp)
    }
    return body


def merged(current: Mapping[str, Any], desired: Mapping[str, Any], stamp: str) -> Obj:
    """The object to PUT: the server's, with the desired labels, annotations and fields
    (at its ``resourceVersion``, so a concurrent change is a 409); a Service keeps its
    cluster IPs and node ports."""
    body = copy.deepcopy(dict(current))
    meta = body.setdefault("metadata", {})
    meta["labels"] = owned_merge(
        meta.get("labels"), (desired.get("metadata") or {}).get("labels") or {}
    )
    meta["annotations"] = owned_merge(meta.get("annotations"), _annotations(desired, stamp))
    for key, value in desired.items():
        if key not in _NOT_BODY:
            body[key] = copy.deepcopy(value)
    if desired.get("kind") == "Service" and desired.get("apiVersion") == "v1":
        _keep_allocated(body.setdefault("spec", {}), current.get("spec") or {})
    return body


def _keep_allocated(spec: Obj, old: Mapping[str, Any]) -> None:
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if key not in spec and key in old:
            spec[key] = copy.deepcopy(old[key])
    if spec.get("type") not in ("NodePort", "LoadBalancer"):
        return
    assigned = {
        (p.get("port"), p.get("protocol") or "TCP"): p["nodePort"]
        for p in old.get("ports") or ()
        if p.get("nodePort")
    }
    for port in spec.get("ports") or ():
        if not port.get("nodePort"):
            node_port = assigned.get((port.get("port"), port.get("protocol") or "TCP"))
            if node_port:
                port["nodePort"] = node_port


# -- reading status (pure) -------------------------------------------------------------------
def service_status(workload: Mapping[str, Any]) -> ServiceStatus:
    status = workload.get("status") or {}
    ready = int(status.get("readyReplicas") or 0)
    if workload.get("kind") == "StatefulSet":
        available = ready
        available_replicas = int(status.get("availableReplicas") or ready)
    else:
        available = available_replicas = int(status.get("availableReplicas") or 0)
    return ServiceStatus(
        name=str(workload["metadata"]["name"]),
        available=available,
        total=int(status.get("replicas") or 0),
        observed_generation=int(status.get("observedGeneration") or 0),
        replicas=int(status.get("replicas") or 0),
        updated_replicas=int(status.get("updatedReplicas") or 0),
        ready_replicas=ready,
        available_replicas=available_replicas,
    )


def restarts(pods: Iterable[Mapping[str, Any]]) -> dict[str, ServiceStatus]:
    """Per manifest service, its containers' restarts (every pod's ``restartCount``
    added up) and the latest of their last terminations (by ``finishedAt``), as the
    ``restarts`` and ``last_termination`` of a :class:`ServiceStatus` (its other fields
    left at zero)."""
    found: dict[str, tuple[int, Termination | None]] = {}
    for pod in pods:
        service = str(((pod.get("metadata") or {}).get("labels") or {}).get(MANIFEST_SERVICE, ""))
        if not service:
            continue
        count, last = found.get(service, (0, None))
        status = pod.get("status") or {}
        for container in (
            *(status.get("initContainerStatuses") or ()),
            *(status.get("containerStatuses") or ()),
        ):
            count += int(container.get("restartCount") or 0)
            ended = (container.get("lastState") or {}).get("terminated")
            if not ended:
                continue
            termination = Termination(
                reason=str(ended.get("reason") or ""),
                exit_code=int(ended.get("exitCode") or 0),
                finished_at=str(ended.get("finishedAt") or ""),
            )
            if last is None or termination.finished_at > last.finished_at:
                last = termination
        found[service] = (count, last)
    return {
        name: ServiceStatus(name=name, restarts=count, last_termination=last)
        for name, (count, last) in found.items()
    }


def forwarded_ports(
    services: Iterable[Mapping[str, Any]], public_hostname: str
) -> dict[str, list[ForwardedPort]]:
    """The node ports of every ``<svc>-np`` Service, by manifest service (Akash's)."""
    forwarded: dict[str, list[ForwardedPort]] = {}
    for service in sorted(services, key=lambda s: str(s["metadata"]["name"])):
        spec, meta = service.get("spec") or {}, service["metadata"]
        name = str(meta["name"])
        if spec.get("type") != "NodePort" or not name.endswith(_NODE_PORT_SUFFIX):
            continue
        owner = (meta.get("labels") or {}).get(MANIFEST_SERVICE) or name[: -len(_NODE_PORT_SUFFIX)]
        ports = []
        for port in spec.get("ports") or ():
            proto = port.get("protocol") or "TCP"
            if not port.get("nodePort") or proto not in ("TCP", "UDP"):
                continue
            target = port.get("targetPort")
            ports.append(
                ForwardedPort(
                    host=public_hostname,
                    port=target if isinstance(target, int) else int(port["port"]),
                    external_port=int(port["nodePort"]),
                    proto=proto,
                    name=str(owner),
                )
            )
        if ports:
            forwarded[str(owner)] = ports
    return forwarded


def leased_ips(services: Iterable[Mapping[str, Any]]) -> dict[str, list[LeasedIPStatus]]:
    """The leased-IP ports of the IP operator's LoadBalancer Services (``metal-lb``), by
    manifest service, as Akash's IP operator reads them: the Service's one port (its target
    is the service's port) and the address MetalLB gave it. A Service MetalLB has not given
    an address yet is reported with ``IP: ""`` (Akash's operator fails the whole lease status
    with "service has 0 load balancers and is invalid" until it has one)."""
    found: dict[str, list[LeasedIPStatus]] = {}
    for service in sorted(services, key=lambda s: str(s["metadata"]["name"])):
        spec = service.get("spec") or {}
        ports = spec.get("ports") or []
        owner = (spec.get("selector") or {}).get(MANIFEST_SERVICE)
        if spec.get("type") != "LoadBalancer" or not owner or len(ports) != 1:
            continue
        [port] = ports
        target = port.get("targetPort")
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        found.setdefault(str(owner), []).append(
            LeasedIPStatus(
                port=target if isinstance(target, int) else int(port["port"]),
                external_port=int(port["port"]),
                protocol=str(port.get("protocol") or "TCP"),
                ip=next((str(i["ip"]) for i in ingress if i.get("ip")), ""),
            )
        )
    return found


def pod_failure(pod: Mapping[str, Any]) -> str | None:
    """Why a pod keeps failing, or None while it runs or is only starting."""
    status = pod.get("status") or {}
    if status.get("phase") == "Failed":
        return f"failed ({status.get('reason') or status.get('message') or 'no reason given'})"
    for condition in status.get("conditions") or ():
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return f"unschedulable: {condition.get('message') or 'no node fits'}"
    containers = [
        *(status.get("initContainerStatuses") or ()),
        *(status.get("containerStatuses") or ()),
    ]
    for container in containers:
        name, restarts = container.get("name"), int(container.get("restartCount") or 0)
        waiting = (container.get("state") or {}).get("waiting") or {}
        again = f", {restarts} restarts" if restarts else ""
        if waiting.get("reason") in _WAITING_FAILURES:
            last = ((container.get("lastState") or {}).get("terminated") or {}).get("exitCode")
            exit_code = f", last exit code {last}" if last is not None else ""
            return f"container {name}: {waiting['reason']}{again}{exit_code}"
        if restarts >= _RESTARTS and not container.get("ready"):
            return f"container {name}: not ready{again}"
    return None


# -- errors ----------------------------------------------------------------------------------
