"""Namespaces, garbage collection, nodes and volumes.

- namespace controller: a deleted namespace deletes everything in it (objects with
  finalizers wait for them), then drops its `kubernetes` finalizer and disappears;
- garbage collector: an object whose owners are all gone is deleted (background cascade);
- node controller: the cluster file's nodes and storage classes exist, and each node's
  Ready condition follows the fault switches;
- volume controller: a PVC whose storage class exists is bound to a new PV.
"""

from __future__ import annotations

from typing import Any

from kubesim.controllers.base import (
    NAMESPACES,
    NODES,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    Context,
    condition,
    terminating,
)
from kubesim.objects import CRDS, clone, now

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def bootstrap(ctx: Context, kubelet_version: str) -> None:
    for name in SYSTEM_NAMESPACES:
        if ctx.store.find(NAMESPACES, "", name) is None:
            ctx.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
    for index, spec in enumerate(ctx.cluster.nodes):
        if ctx.store.find(NODES, "", spec.name) is None:
            ctx.create(NODES, spec.node_object(index, kubelet_version))
    for cls in ctx.cluster.storage_classes:
        if ctx.store.find(STORAGE_CLASSES, "", cls) is None:
            ctx.create(
                STORAGE_CLASSES,
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {"name": cls},
                    "provisioner": "kubesim.io/local",
                    "reclaimPolicy": "Delete",
                    "volumeBindingMode": "Immediate",
                },
            )


def namespaces(ctx: Context) -> None:
    for ns in ctx.scan(NAMESPACES):  # read only: a terminating one is copied
        if not terminating(ns):
            continue
        with ctx.isolated("namespaces", ns):
            _namespace(ctx, clone(ns))


def _namespace(ctx: Context, ns: dict[str, Any]) -> None:
    name = ns["metadata"]["name"]
    remaining = 0
    for key, obj in list(ctx.store.all_objects()):
        if obj["metadata"].get("namespace") == name:
            remaining += 1
            if not terminating(obj):
                ctx.store.remove(key, name, obj["metadata"]["name"])
    if remaining == 0 and (ns.get("spec") or {}).get("finalizers"):
        ns["spec"]["finalizers"] = []
        ctx.update(NAMESPACES, ns)


def garbage_collector(ctx: Context) -> None:
    owned = [(k, o) for k, o in ctx.store.all_objects() if o["metadata"].get("ownerReferences")]
    if not owned:
        return
    uids = {obj["metadata"].get("uid") for _, obj in ctx.store.all_objects()}
    doomed = []
    for key, obj in owned:
        with ctx.isolated("garbage-collector", obj):
            refs = obj["metadata"].get("ownerReferences") or []
            if refs and not terminating(obj) and all(r.get("uid") not in uids for r in refs):
                doomed.append((key, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))
    for key, namespace, name in doomed:
        if key != CRDS:
            ctx.store.remove(key, namespace, name)


def nodes(ctx: Context) -> None:
    for node in ctx.items(NODES):
        with ctx.isolated("nodes", node):
            _node(ctx, node)


def _node(ctx: Context, node: dict[str, Any]) -> None:
    name = node["metadata"]["name"]
    ready = name not in ctx.faults.not_ready
    status = dict(node.get("status") or {})
    previous = status.get("conditions") or []
    healthy = [
        condition(kind, False, reason, message, previous)
        for kind, reason, message in (
            (
                "MemoryPressure",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    if ready:
        last = condition("Ready", True, "KubeletReady", "kubelet is posting ready status", previous)
    else:
        last = condition(
            "Ready",
            False,
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
            previous,
        )
    status["conditions"] = [*healthy, last]
    for cond in status["conditions"]:  # no heartbeats are simulated: the last is the change
        cond["lastHeartbeatTime"] = cond["lastTransitionTime"]
    if ctx.set_status(NODES, node, status):
        if not ready and any(c["type"] == "Ready" and c["status"] == "True" for c in previous):
            ctx.event(
                node,
                "NodeNotReady",
                f"Node {name} status is now: NodeNotReady",
                component="node-controller",
            )
        elif ready and any(c["type"] == "Ready" and c["status"] == "False" for c in previous):
            ctx.event(
                node, "NodeReady", f"Node {name} status is now: NodeReady", component="kubelet"
            )
    _taint(ctx, node, ready)


def _taint(ctx: Context, node: dict[str, Any], ready: bool) -> None:
    fresh = ctx.store.find(NODES, "", node["metadata"]["name"])
    if fresh is None:
        return
    spec = fresh.setdefault("spec", {})
    taints = [
        t for t in spec.get("taints") or [] if t.get("key") != "node.kubernetes.io/unreachable"
    ]
    if not ready:
        taints.append(
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": now()}
        )
    if [t.get("key") for t in taints] != [t.get("key") for t in spec.get("taints") or []]:
        if taints:
            spec["taints"] = taints
        else:
            spec.pop("taints", None)
        ctx.update(NODES, fresh)


def volumes(ctx: Context) -> None:
    classes = {c["metadata"]["name"] for c in ctx.items(STORAGE_CLASSES)}
    for pvc in ctx.items(PVCS):
        if terminating(pvc) or (pvc.get("status") or {}).get("phase") == "Bound":
            continue
        with ctx.isolated("volumes", pvc):
            _volume(ctx, pvc, classes)
    # a released volume goes with its claim (reclaim policy Delete)
    claims = {p["metadata"].get("uid") for p in ctx.items(PVCS)}
    for pv in ctx.items(PVS):
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid") and ref["uid"] not in claims and not terminating(pv):
            ctx.delete(PVS, pv)


def _volume(ctx: Context, pvc: dict[str, Any], classes: set[str]) -> None:
    spec = pvc.get("spec") or {}
    cls = spec.get("storageClassName")
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    if cls not in classes:
        status = {"phase": "Pending"}
        if ctx.set_status(PVCS, pvc, status):
            ctx.event(
                pvc,
                "ProvisioningFailed",
                f'storageclass.storage.k8s.io "{cls}" not found',
                warning=True,
                component="persistentvolume-controller",
            )
        return
    meta = pvc["metadata"]
    pv_name = f"pvc-{meta['uid']}"
    if ctx.store.find(PVS, "", pv_name) is None:
        ctx.create(
            PVS,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {
                    "name": pv_name,
                    "annotations": {"pv.kubernetes.io/provisioned-by": "kubesim.io/local"},
                },
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Delete",
                    "storageClassName": cls,
                    "volumeMode": spec.get("volumeMode", "Filesystem"),
                    "hostPath": {"path": f"/var/lib/kubesim/volumes/{pv_name}"},
                    "claimRef": {
                        "apiVersion": "v1",
                        "kind": "PersistentVolumeClaim",
                        "namespace": meta["namespace"],
                        "name": meta["name"],
                        "uid": meta["uid"],
                    },
                },
                "status": {"phase": "Bound"},
            },
        )
    pvc["spec"]["volumeName"] = pv_name
    bound = ctx.update(PVCS, pvc)
    ctx.set_status(
        PVCS,
        bound,
        {
            "phase": "Bound",
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "capacity": {"storage": size},
        },
    )
    ctx.event(
        bound,
        "ProvisioningSucceeded",
        f"Successfully provisioned volume {pv_name}",
        component="persistentvolume-controller",
    )
