"""Workload controllers: Deployments → ReplicaSets → Pods, and StatefulSets → Pods + PVCs.

- A Deployment owns one ReplicaSet per pod template (named by the template's hash, as the
  real controller names them); the current one is scaled to `spec.replicas`, older ones to
  zero, so a template change rolls the pods over.
- A ReplicaSet keeps `spec.replicas` pods alive, creating and deleting as needed.
- A StatefulSet keeps pods `<name>-0 … <name>-N-1` (one at a time while earlier ones are not
  ready, under `OrderedReady`), creates the PVCs of its `volumeClaimTemplates`, and replaces
  pods of an older template one at a time, highest ordinal first.

Each writes its workload's status (replicas, readyReplicas, availableReplicas,
updatedReplicas, observedGeneration, conditions) from the pods it owns.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from kubesim.controllers.base import (
    DEPLOYMENTS,
    PODS,
    PVCS,
    REPLICASETS,
    STATEFULSETS,
    Context,
    condition,
    owned_by,
    owner_ref,
    terminating,
)
from kubesim.objects import clone
from kubesim.selectors import match_label_selector


def template_hash(template: dict[str, Any]) -> str:
    raw = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()[:10]


def pod_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _owned(ctx: Context, key: tuple[str, str], owner: dict[str, Any]) -> list[dict[str, Any]]:
    """What ``owner`` owns, as stored: read only."""
    return [o for o in ctx.scan(key, owner["metadata"]["namespace"]) if owned_by(o, owner)]


# -- Deployments ---------------------------------------------------------------
def deployments(ctx: Context) -> None:
    for deploy in ctx.scan(DEPLOYMENTS):  # read only: a status is written as a new object
        if terminating(deploy):
            continue
        with ctx.isolated("deployments", deploy):
            _deployment(ctx, deploy)


def _deployment(ctx: Context, deploy: dict[str, Any]) -> None:
    spec = deploy["spec"]
    template = spec.get("template") or {}
    digest = template_hash(template)
    name = f"{deploy['metadata']['name']}-{digest}"
    replicas = int(spec.get("replicas", 1))
    sets = _owned(ctx, REPLICASETS, deploy)
    current = next((rs for rs in sets if rs["metadata"]["name"] == name), None)
    revision = 1 + max(
        (
            int(rs["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision", "0"))
            for rs in sets
        ),
        default=0,
    )
    if current is None:
        labels = {
            **(template.get("metadata") or {}).get("labels", {}),
            "pod-template-hash": digest,
        }
        rs_template = copy.deepcopy(template)
        rs_template.setdefault("metadata", {})["labels"] = labels
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = digest
        current = ctx.create(
            REPLICASETS,
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": name,
                    "namespace": deploy["metadata"]["namespace"],
                    "labels": labels,
                    "annotations": {"deployment.kubernetes.io/revision": str(revision)},
                    "ownerReferences": [owner_ref(deploy)],
                },
                "spec": {"replicas": replicas, "selector": selector, "template": rs_template},
            },
        )
        ctx.event(
            deploy,
            "ScalingReplicaSet",
            f"Scaled up replica set {name} from 0 to {replicas}",
            component="deployment-controller",
        )
    elif current["spec"].get("replicas") != replicas:
        before = current["spec"].get("replicas")
        current = clone(current)
        current["spec"]["replicas"] = replicas
        ctx.update(REPLICASETS, current)
        verb = "up" if replicas > (before or 0) else "down"
        ctx.event(
            deploy,
            "ScalingReplicaSet",
            f"Scaled {verb} replica set {name} from {before} to {replicas}",
            component="deployment-controller",
        )
    for old in sets:
        if old["metadata"]["name"] != name and old["spec"].get("replicas"):
            before = old["spec"]["replicas"]
            scaled = clone(old)
            scaled["spec"]["replicas"] = 0
            ctx.update(REPLICASETS, scaled)
            ctx.event(
                deploy,
                "ScalingReplicaSet",
                f"Scaled down replica set {old['metadata']['name']} from {before} to 0",
                component="deployment-controller",
            )
    _deployment_status(ctx, deploy, name, replicas)


def _deployment_status(ctx: Context, deploy: dict[str, Any], current: str, replicas: int) -> None:
    pods = [
        p
        for rs in _owned(ctx, REPLICASETS, deploy)
        for p in _owned(ctx, PODS, rs)
        if not terminating(p)
    ]
    updated = [
        p
        for p in pods
        if any(r.get("name") == current for r in p["metadata"].get("ownerReferences") or [])
    ]
    ready = sum(1 for p in pods if pod_ready(p))
    previous = (deploy.get("status") or {}).get("conditions") or []
    available = ready >= replicas
    complete = (
        available and len(updated) == len(pods) == replicas and all(pod_ready(p) for p in updated)
    )
    status: dict[str, Any] = {
        "observedGeneration": deploy["metadata"].get("generation", 1),
        "replicas": len(pods),
        "updatedReplicas": len(updated),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": [
            condition(
                "Available",
                available,
                "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if available
                else "Deployment does not have minimum availability.",
                previous,
            ),
            condition(
                "Progressing",
                True,
                "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
                f'ReplicaSet "{current}" has successfully progressed.'
                if complete
                else f'ReplicaSet "{current}" is progressing.',
                previous,
            ),
        ],
    }
    if replicas > ready:
        status["unavailableReplicas"] = replicas - ready
    for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
        if not status[key]:
            del status[key]  # Kubernetes omits zero counts
    ctx.set_status(DEPLOYMENTS, deploy, status)


# -- ReplicaSets ---------------------------------------------------------------
def replicasets(ctx: Context) -> None:
    for rs in ctx.scan(REPLICASETS):  # read only: a status is written as a new object
        if terminating(rs):
            continue
        with ctx.isolated("replicasets", rs):
            _replicaset(ctx, rs)


def _replicaset(ctx: Context, rs: dict[str, Any]) -> None:
    want = int(rs["spec"].get("replicas", 1))
    pods = [p for p in _owned(ctx, PODS, rs) if not terminating(p)]
    for _ in range(want - len(pods)):
        pod = _new_pod(rs, rs["spec"].get("template") or {}, generate=f"{rs['metadata']['name']}-")
        created = ctx.create(PODS, pod)
        ctx.event(
            rs,
            "SuccessfulCreate",
            f"Created pod: {created['metadata']['name']}",
            component="replicaset-controller",
        )
        pods.append(created)
    if len(pods) > want:
        # not-ready and newest pods go first, as the real controller prefers
        doomed = sorted(pods, key=lambda p: (pod_ready(p), p["metadata"]["creationTimestamp"]))
        for pod in doomed[: len(pods) - want]:
            ctx.delete(PODS, pod)
            ctx.event(
                rs,
                "SuccessfulDelete",
                f"Deleted pod: {pod['metadata']['name']}",
                component="replicaset-controller",
            )
        pods = [p for p in pods if p not in doomed[: len(pods) - want]]
    ready = sum(1 for p in pods if pod_ready(p))
    labels = rs["spec"].get("selector") or {}
    status: dict[str, Any] = {
        "replicas": len(pods),
        "fullyLabeledReplicas": sum(
            1 for p in pods if match_label_selector(labels, p["metadata"].get("labels") or {})
        ),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": rs["metadata"].get("generation", 1),
    }
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if not status[key]:
            del status[key]
    ctx.set_status(REPLICASETS, rs, status)


def _new_pod(
    owner: dict[str, Any],
    template: dict[str, Any],
    *,
    generate: str = "",
    name: str = "",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta = copy.deepcopy(template.get("metadata") or {})
    meta["namespace"] = owner["metadata"]["namespace"]
    meta["labels"] = {**(meta.get("labels") or {}), **(labels or {})}
    meta["ownerReferences"] = [owner_ref(owner)]
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = generate
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


# -- StatefulSets --------------------------------------------------------------
def statefulsets(ctx: Context) -> None:
    for sts in ctx.scan(STATEFULSETS):  # read only: a status is written as a new object
        if terminating(sts):
            continue
        with ctx.isolated("statefulsets", sts):
            _statefulset(ctx, sts)


def _statefulset(ctx: Context, sts: dict[str, Any]) -> None:
    spec = sts["spec"]
    name = sts["metadata"]["name"]
    namespace = sts["metadata"]["namespace"]
    template = spec.get("template") or {}
    revision = f"{name}-{template_hash(template)}"
    replicas = int(spec.get("replicas", 1))
    ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    pods = {p["metadata"]["name"]: p for p in _owned(ctx, PODS, sts)}
    for index in range(replicas):
        pod_name = f"{name}-{index}"
        if pod_name in pods:
            continue
        for claim in spec.get("volumeClaimTemplates") or []:
            _ensure_claim(ctx, sts, claim, index)
        pod = _new_pod(
            sts,
            template,
            name=pod_name,
            labels={
                "statefulset.kubernetes.io/pod-name": pod_name,
                "controller-revision-hash": revision,
                "apps.kubernetes.io/pod-index": str(index),
            },
        )
        pod["spec"].setdefault("hostname", pod_name)
        if spec.get("serviceName"):
            pod["spec"].setdefault("subdomain", spec["serviceName"])
        volumes = pod["spec"].setdefault("volumes", [])
        for claim in spec.get("volumeClaimTemplates") or []:
            claim_name = claim["metadata"]["name"]
            if not any(v.get("name") == claim_name for v in volumes):
                volumes.append(
                    {
                        "name": claim_name,
                        "persistentVolumeClaim": {"claimName": f"{claim_name}-{name}-{index}"},
                    }
                )
        pods[pod_name] = ctx.create(PODS, pod)
        ctx.event(
            sts,
            "SuccessfulCreate",
            f"create Pod {pod_name} in StatefulSet {name} successful",
            component="statefulset-controller",
        )
        if ordered:
            break
    if ordered and not all(pod_ready(p) for p in pods.values()):
        pass  # wait for readiness before changing anything else
    else:
        for pod_name, pod in sorted(pods.items(), key=lambda kv: -_ordinal(kv[0])):
            if _ordinal(pod_name) >= replicas and not terminating(pod):
                ctx.delete(PODS, pod)
                ctx.event(
                    sts,
                    "SuccessfulDelete",
                    f"delete Pod {pod_name} in StatefulSet {name} successful",
                    component="statefulset-controller",
                )
                break
        else:
            outdated = [
                p
                for n, p in pods.items()
                if _ordinal(n) < replicas
                and p["metadata"]["labels"].get("controller-revision-hash") != revision
                and not terminating(p)
            ]
            if outdated:
                victim = max(outdated, key=lambda p: _ordinal(p["metadata"]["name"]))
                ctx.delete(PODS, victim)
    live = [p for p in _owned(ctx, PODS, sts) if not terminating(p)]
    ready = sum(1 for p in live if pod_ready(p))
    updated = sum(
        1 for p in live if p["metadata"]["labels"].get("controller-revision-hash") == revision
    )
    status: dict[str, Any] = {
        "observedGeneration": sts["metadata"].get("generation", 1),
        "replicas": len(live),
        "readyReplicas": ready,
        "currentReplicas": updated,
        "updatedReplicas": updated,
        "availableReplicas": ready,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
    }
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas"):
        if not status[key]:
            del status[key]
    ctx.set_status(STATEFULSETS, sts, status)
    del namespace


def _ordinal(pod_name: str) -> int:
    tail = pod_name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _ensure_claim(ctx: Context, sts: dict[str, Any], claim: dict[str, Any], index: int) -> None:
    name = f"{claim['metadata']['name']}-{sts['metadata']['name']}-{index}"
    namespace = sts["metadata"]["namespace"]
    if ctx.store.find(PVCS, namespace, name) is not None:
        return
    labels = dict((sts["spec"].get("selector") or {}).get("matchLabels") or {})
    ctx.create(
        PVCS,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": copy.deepcopy(claim.get("spec") or {}),
        },
    )
