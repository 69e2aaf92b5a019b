"""The scheduler and the kubelets: pods placed on nodes that fit them, then run.

Scheduler: a pod without `spec.nodeName` goes to the ready node that satisfies its
`nodeSelector`, required node affinity, taints and resource requests (CPU, memory,
ephemeral storage, GPUs, pod count) with the most room left — scored like the default
scheduler's LeastAllocated, which counts a pod without requests as 100m CPU and 200Mi
memory, so such pods spread over the nodes too; when none fits, it stays
Pending with `PodScheduled=False/Unschedulable` and the scheduler's message
("0/2 nodes are available: 2 Insufficient cpu.") and a FailedScheduling event.

Kubelet: a scheduled pod is ContainerCreating, then Running and Ready after the configured
delay (each container's Pulled, Created and Started events); a pod under the crash-loop
fault restarts every `crash_interval` in CrashLoopBackOff and is never ready: each restart
counts up its containers' `restartCount` and repeats their Pulled, Created and Started
events (their `count` going up, as the real recorder aggregates them), and from the second
on a Warning `BackOff` ("Back-off restarting failed container web in pod
web-…_ns(uid)"), as the kubelet words it; a pod on a NotReady node loses its readiness.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kubesim import defaults, quantity
from kubesim.controllers.base import NODES, PODS, PVCS, Context, condition, monotonic, terminating
from kubesim.objects import clone, now
from kubesim.selectors import match_node_selector_terms

# what the default scheduler's scoring assumes for a container that requests nothing
SCORING_DEFAULTS = {"cpu": Decimal("0.1"), "memory": Decimal(200 * 2**20)}


def pod_requests(pod: dict[str, Any]) -> dict[str, Decimal]:
    """Requests of a pod (a container's limits stand in for requests it leaves unset)."""
    total: dict[str, Decimal] = {}
    for container in pod["spec"].get("containers") or []:
        res = container.get("resources") or {}
        asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, value in asked.items():
            total[name] = total.get(name, Decimal(0)) + quantity.parse(value)
    return total


def _add(used: defaultdict[str, Decimal], requests: dict[str, Decimal]) -> None:
    """Count a pod on a node: its requests, one pod, and its load as the scorer sees it."""
    for name, value in requests.items():
        used[name] += value
    used["pods"] += 1
    for name, default in SCORING_DEFAULTS.items():
        used[f"score:{name}"] += requests.get(name) or default


def _allocatable(node: dict[str, Any]) -> dict[str, Decimal]:
    """What a node offers; a quantity that does not parse fails the node, not the pass."""
    found = ((node.get("status") or {}).get("allocatable")) or {}
    offered = {name: quantity.parse(value) for name, value in found.items()}
    offered.setdefault("pods", Decimal(110))
    return offered


def _fits_selector(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod["spec"].get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    return not terms or match_node_selector_terms(terms, node)


def _tolerated(pod: dict[str, Any], node: dict[str, Any]) -> str | None:
    """The first taint of the node that the pod does not tolerate."""
    tolerations = pod["spec"].get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(
            (t.get("operator") == "Exists" and t.get("key") in (None, "", taint["key"]))
            or (t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""))
            for t in tolerations
        ):
            return str(taint["key"])
    return None


def _tolerates_cordon(pod: dict[str, Any]) -> bool:
    """A cordoned node (``spec.unschedulable``) takes only pods that tolerate
    ``node.kubernetes.io/unschedulable`` (DaemonSets' pods do), as the real scheduler."""
    return any(
        t.get("key") == "node.kubernetes.io/unschedulable"
        or (t.get("operator") == "Exists" and not t.get("key"))
        for t in pod["spec"].get("tolerations") or []
    )


def scheduler(ctx: Context) -> None:
    nodes: list[dict[str, Any]] = []
    offered: dict[str, dict[str, Decimal]] = {}
    for node in ctx.items(NODES):
        with ctx.isolated("scheduler", node):
            offered[node["metadata"]["name"]] = _allocatable(node)
            nodes.append(node)
    pods = ctx.scan(PODS)  # read only: a pod is copied before it is placed
    requests: dict[str, dict[str, Decimal]] = {}
    for pod in pods:
        with ctx.isolated("scheduler", pod):
            requests[pod["metadata"]["uid"]] = pod_requests(pod)
    room = _Room(nodes, offered, {name: defaultdict(Decimal) for name in offered})
    for pod in pods:
        on = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        asked = requests.get(pod["metadata"].get("uid"))
        if on in room.used and asked is not None and phase not in ("Succeeded", "Failed"):
            _add(room.used[on], asked)
    for pod in pods:
        asked = requests.get(pod["metadata"].get("uid"))
        if asked is None or pod["spec"].get("nodeName") or terminating(pod):
            continue
        if pod["spec"].get("schedulerName", "default-scheduler") != "default-scheduler":
            continue
        with ctx.isolated("scheduler", pod):
            _schedule(ctx, clone(pod), asked, room)


@dataclass
class _Room:
    """The nodes a pass may use: what each offers and what its pods already take."""

    nodes: list[dict[str, Any]]
    offered: dict[str, dict[str, Decimal]]
    used: dict[str, defaultdict[str, Decimal]]


def _schedule(ctx: Context, pod: dict[str, Any], asked: dict[str, Decimal], room: _Room) -> None:
    chosen, reasons = _place(ctx, pod, asked, room)
    if chosen is None:
        message = (
            f"0/{len(room.nodes)} nodes are available: "
            + ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
            + "."
        )
        status = dict(pod.get("status") or {})
        status["phase"] = "Pending"
        status["conditions"] = [
            condition("PodScheduled", False, "Unschedulable", message, status.get("conditions"))
        ]
        if ctx.set_status(PODS, pod, status):
            ctx.event(pod, "FailedScheduling", message, warning=True, component="default-scheduler")
        return
    _add(room.used[chosen], asked)
    pod["spec"]["nodeName"] = chosen
    placed = ctx.update(PODS, pod)
    ns = placed["metadata"]["namespace"]
    ctx.event(
        placed,
        "Scheduled",
        f"Successfully assigned {ns}/{placed['metadata']['name']} to {chosen}",
        component="default-scheduler",
    )


def _place(
    ctx: Context, pod: dict[str, Any], requests: dict[str, Decimal], room: _Room
) -> tuple[str | None, Counter[str]]:
    reasons: Counter[str] = Counter()
    best: tuple[Decimal, str] | None = None
    claims_ok = _claims_bound(ctx, pod)
    used = room.used
    for node in room.nodes:
        name = node["metadata"]["name"]
        if (node.get("spec") or {}).get("unschedulable") and not _tolerates_cordon(pod):
            reasons["node(s) were unschedulable"] += 1
            continue
        taint = _tolerated(pod, node)
        if taint is not None:
            reasons[f"node(s) had untolerated taint {{{taint}: }}"] += 1
            continue
        if not _fits_selector(pod, node):
            reasons["node(s) didn't match Pod's node affinity/selector"] += 1
            continue
        if not claims_ok:
            reasons["pod has unbound immediate PersistentVolumeClaims"] += 1
            continue
        have = room.offered[name]
        short = False
        for resource, amount in requests.items():
            if amount > 0 and used[name][resource] + amount > have.get(resource, Decimal(0)):
                reasons[f"Insufficient {resource}"] += 1
                short = True
        if used[name]["pods"] + 1 > have["pods"]:
            reasons["Too many pods"] += 1
            short = True
        if short:
            continue
        load = sum(
            (
                (used[name][f"score:{r}"] + (requests.get(r) or default))
                / (have.get(r) or Decimal(1))
                for r, default in SCORING_DEFAULTS.items()
            ),
            Decimal(0),
        )
        if best is None or (load, name) < best:
            best = (load, name)
    return (best[1] if best else None), reasons


def _claims_bound(ctx: Context, pod: dict[str, Any]) -> bool:
    ns = pod["metadata"]["namespace"]
    for volume in pod["spec"].get("volumes") or []:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            pvc = ctx.store.find(PVCS, ns, claim)
            if pvc is None or (pvc.get("status") or {}).get("phase") != "Bound":
                return False
    return True


class Kubelets:
    """Pod lifecycles on every node; remembers when each pod was scheduled."""

    def __init__(self) -> None:
        self._scheduled: dict[str, float] = {}
        self._crashes: dict[str, tuple[int, float, str]] = {}
        self._ips: dict[str, str] = {}

    def __call__(self, ctx: Context) -> None:
        nodes = {n["metadata"]["name"]: n for n in ctx.items(NODES)}
        seen = set()
        for pod in ctx.scan(PODS):  # read only: a status is written as a new object
            uid = pod["metadata"].get("uid")
            seen.add(uid)
            node_name = (pod.get("spec") or {}).get("nodeName")
            if not node_name or terminating(pod) or node_name not in nodes:
                continue
            with ctx.isolated("kubelet", pod):
                self._sync(ctx, pod, nodes[node_name])
        for gone in set(self._scheduled) - seen:
            self._scheduled.pop(gone, None)
            self._crashes.pop(gone, None)
            self._ips.pop(gone, None)

    def _ip(self, uid: str, node: dict[str, Any]) -> str:
        """An address in the node's pod CIDR (a /24), not reused while the pod lives."""
        if uid not in self._ips:
            cidr = (node.get("spec") or {}).get("podCIDR") or "10.244.0.0/24"
            prefix = cidr.split("/")[0].rsplit(".", 1)[0]
            taken = set(self._ips.values())
            host = next(
                (h for h in range(2, 255) if f"{prefix}.{h}" not in taken), len(self._ips) % 253
            )
            self._ips[uid] = f"{prefix}.{host}"
        return self._ips[uid]

    def _sync(self, ctx: Context, pod: dict[str, Any], node: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        clock = monotonic()
        started_at = self._scheduled.setdefault(uid, clock)
        status = dict(pod.get("status") or {})
        previous = status.get("conditions") or []
        node_ready = node["metadata"]["name"] not in ctx.faults.not_ready
        running = clock >= started_at + ctx.settings.pod_start_delay
        crashing = running and ctx.faults.crashlooping(pod)
        containers = pod["spec"].get("containers") or []
        status["hostIP"] = _internal_ip(node)
        status["podIP"] = self._ip(uid, node)
        status["podIPs"] = [{"ip": status["podIP"]}]
        status.setdefault("qosClass", defaults.qos_class(pod))
        status.setdefault("startTime", now())
        if not running:
            ctx.wake_at(started_at + ctx.settings.pod_start_delay)
            status["phase"] = "Pending"
            states = [
                _container_status(c, {"waiting": {"reason": "ContainerCreating"}}, False, 0)
                for c in containers
            ]
        elif crashing:
            restarts, last, stamp = self._crashes.get(uid, (0, clock, now()))
            if clock - last >= ctx.settings.crash_interval or uid not in self._crashes:
                restarts, last, stamp = restarts + 1, clock, now()
                self._crashes[uid] = (restarts, last, stamp)
                for c in containers:  # it started, ran and exited; then the kubelet backs off
                    _started(ctx, pod, c)
                    if restarts > 1:
                        ctx.event(
                            pod,
                            "BackOff",
                            f"Back-off restarting failed container {c['name']} in pod "
                            f"{pod['metadata']['name']}_{pod['metadata'].get('namespace')}({uid})",
                            warning=True,
                            component="kubelet",
                            field_path=f"spec.containers{{{c['name']}}}",
                        )
            ctx.wake_at(last + ctx.settings.crash_interval)
            status["phase"] = "Running"
            states = [
                _container_status(
                    c,
                    {
                        "waiting": {
                            "reason": "CrashLoopBackOff",
                            "message": f"back-off restarting failed container {c['name']}",
                        }
                    },
                    False,
                    restarts,
                    last_state={
                        "terminated": {
                            "exitCode": 1,
                            "reason": "Error",
                            "startedAt": stamp,
                            "finishedAt": stamp,
                        }
                    },
                )
                for c in containers
            ]
        else:
            restarts = self._crashes.get(uid, (0, 0.0, ""))[0]
            prior = {s["name"]: s for s in status.get("containerStatuses") or []}
            states = [
                _container_status(
                    c,
                    {
                        "running": {
                            "startedAt": ((prior.get(c["name"]) or {}).get("state") or {})
                            .get("running", {})
                            .get("startedAt")
                            or now()
                        }
                    },
                    node_ready,
                    restarts,
                )
                for c in containers
            ]
            status["phase"] = "Running"
        ready = running and not crashing and node_ready
        status["containerStatuses"] = states
        status["conditions"] = [
            condition("PodReadyToStartContainers", running, previous=previous),
            condition("Initialized", True, previous=previous),
            condition(
                "Ready",
                ready,
                "" if ready else ("NodeNotReady" if not node_ready else "ContainersNotReady"),
                previous=previous,
            ),
            condition(
                "ContainersReady",
                running and not crashing,
                "" if running and not crashing else "ContainersNotReady",
                previous=previous,
            ),
            condition("PodScheduled", True, previous=previous),
        ]
        if (
            ctx.set_status(PODS, pod, status)
            and running
            and not crashing
            and pod.get("status", {}).get("phase") != "Running"
        ):
            for c in containers:
                _started(ctx, pod, c)


def _started(ctx: Context, pod: dict[str, Any], container: dict[str, Any]) -> None:
    """The events of a container started: its image present, the container created, then
    started (each a repeat of the last start's, counted, when it restarts)."""
    name, part = container["name"], f"spec.containers{{{container['name']}}}"
    for reason, message in (
        ("Pulled", f'Container image "{container.get("image")}" already present on machine'),
        ("Created", f"Created container {name}"),
        ("Started", f"Started container {name}"),
    ):
        ctx.event(pod, reason, message, component="kubelet", field_path=part)


def _internal_ip(node: dict[str, Any]) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address["address"])
    return "10.0.0.1"


def _container_status(
    container: dict[str, Any],
    state: dict[str, Any],
    ready: bool,
    restarts: int,
    last_state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "name": container["name"],
        "image": container.get("image"),
        "imageID": f"docker.io/{container.get('image')}@sha256:" + "0" * 64,
        "containerID": f"containerd://{container['name']}",
        "ready": ready,
        "started": "running" in state,
        "restartCount": restarts,
        "state": state,
        "lastState": last_state or {},
    }
