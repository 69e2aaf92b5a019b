"""Workloads the Go provider built, taken over without restarting a pod.

The Go provider (``cluster/kube/builder``) and this one build a lease's Deployment or
StatefulSet from the same group with the same names and the same selector, but their pod
templates differ in ways that do not change what runs. Writing ours over Go's would change
the template, and Kubernetes would replace every pod. So a workload whose template is in
Go's shape, and runs what ours would run, keeps its template (:func:`adopted`): the write
that takes it over changes only its labels, annotations and the fields beside the template.

Go's shape is told by the template's labels: ours always carry
``akash.network/service-target``, Go's never do (they carry
``akash.network/manifest.resource.version`` instead). The differences that do not count,
each one of Go's quirks or of the fixes made here:

- the template's labels beyond the selector (Go: the Manifest resource's
  ``resourceVersion``; ours: the lease's five labels and ``service-target``);
- container ports: Go names only the number (a UDP port reads as TCP) and repeats a port
  exposed twice; they are informational to Kubernetes;
- the GPU interface node selector (Go's names the memory size where the interface goes);
- a storage class selector repeated for two volumes of one class (Go repeats it);
- ``runtimeClassName`` on a pod without a GPU: ours sets the cluster's
  ``AP_DEPLOYMENT_RUNTIME_CLASS``, which Go reads and never used.

Everything else must match, as for any object (:func:`~akcluster.adapters.kube_rules.covers`:
what ours says is in what the server holds): image, command, arguments, environment,
resources, volumes and mounts, affinity, security contexts, service account, pull secrets.
When it does not (the tenant sent a new manifest, or the workload drifted), ours is
written whole and the pods roll, as Go's own deploy of that manifest would roll them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from akcluster.adapters.kube_rules import covers
from akcluster.domain.objects.base import (
    GPU_RESOURCES,
    MANAGED,
    MANIFEST_SERVICE,
    NAMESPACE_LABEL,
    SERVICE_TARGET,
)

Obj = dict[str, Any]

WORKLOADS = frozenset({"Deployment", "StatefulSet"})
_SELECTOR = (MANAGED, NAMESPACE_LABEL, MANIFEST_SERVICE)
_GPUS = frozenset(GPU_RESOURCES.values())


def _template(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("spec") or {}).get("template") or {}


def go_shaped(workload: Mapping[str, Any]) -> bool:
    """Whether a workload's pod template is in the Go provider's shape (not ours)."""
    labels = (_template(workload).get("metadata") or {}).get("labels") or {}
    return workload.get("kind") in WORKLOADS and SERVICE_TARGET not in labels


def _has_gpu(spec: Mapping[str, Any]) -> bool:
    for container in spec.get("containers") or ():
        limits = (container.get("resources") or {}).get("limits") or {}
        if _GPUS & set(limits):
            return True
    return False


def _expressions(affinity: Any) -> Any:
    """The affinity with its node selector terms' expressions once each, the GPU interface
    selector left out."""
    if not isinstance(affinity, dict):
        return affinity
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or ():
        unique: dict[str, Obj] = {}
        for expression in term.get("matchExpressions") or ():
            key = str(expression.get("key", ""))
            if ".interface." not in key:
                unique.setdefault(repr(sorted(expression.items())), expression)
        term["matchExpressions"] = sorted(unique.values(), key=lambda e: str(e.get("key", "")))
    return affinity


def _normal(template: Mapping[str, Any], *, runtime: bool) -> Obj:
    """A pod template with Go's differences taken out; ``runtime``: keep
    ``runtimeClassName``."""
    found: Obj = copy.deepcopy(dict(template))
    meta = found.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    meta["labels"] = {k: labels[k] for k in _SELECTOR if k in labels}
    spec = found.setdefault("spec", {})
    for container in spec.get("containers") or ():
        ports = container.get("ports")
        if ports:
            numbers = sorted({int(p.get("containerPort") or 0) for p in ports})
            container["ports"] = [{"containerPort": n} for n in numbers]
    if "affinity" in spec:
        spec["affinity"] = _expressions(spec["affinity"])
    if not runtime:
        spec.pop("runtimeClassName", None)
    return found


def same_pods(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the pod template of ``current`` (in Go's shape) runs what the one of
    ``desired`` (ours) would: equal but for the differences of the module docstring."""
    have, want = _template(current), _template(desired)
    have_spec = have.get("spec") or {}
    # ours sets the cluster's runtime class on a pod without a GPU; Go never did
    runtime = bool(have_spec.get("runtimeClassName")) or _has_gpu(want.get("spec") or {})
    return covers(_normal(have, runtime=True), _normal(want, runtime=runtime))


def adopted(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> Mapping[str, Any]:
    """``desired``, or, for a workload the Go provider built that runs what ours would,
    ``desired`` with the pod template the cluster holds (writing it changes no pod) and, for
    a StatefulSet, its claim templates (Kubernetes refuses to change them)."""
    if current is None or not go_shaped(current) or desired.get("kind") != current.get("kind"):
        return desired
    if not same_pods(current, desired):
        return desired
    spec = dict(desired.get("spec") or {})
    spec["template"] = copy.deepcopy(_template(current))
    claims = (current.get("spec") or {}).get("volumeClaimTemplates")
    if current.get("kind") == "StatefulSet" and claims is not None:
        spec["volumeClaimTemplates"] = copy.deepcopy(claims)  # immutable: Go's stay
    return {**desired, "spec": spec}
