"""Onboarding an existing cluster, the pure part: what the provider needs of it, what its
nodes hold, and the report — over Kubernetes JSON, no I/O (``akoperators.onboard`` asks).

What the provider needs is read from data, not written here: every rule of every
ClusterRole and Role in the RBAC the provider ships (``k8s/rbac.yaml``, packaged as
``akoperators/data/rbac.yaml``), each verb on each resource a permission to check, plus
the few writes onboarding itself makes (:data:`ONBOARDING_NEEDS`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

MIN_VERSION = (1, 27)
NAMESPACES = ("akash-services", "lease")
INGRESS_CLASS = "akash-ingress-class"
METALLB_CRD = "ipaddresspools.metallb.io"
PART_OF = {"app.kubernetes.io/part-of": "akash-provider"}
_GPU_RESOURCES = {"nvidia.com/gpu": "nvidia", "amd.com/gpu": "amd"}
_CAPABILITY = re.compile(r"^akash\.network/capabilities\.gpu\.vendor\.([^.]+)\.model\.([^.]+)$")


@dataclass(frozen=True, order=True)
class Permission:
    """One thing to be allowed: ``verb group/resource`` (cluster-wide, or in a namespace)."""

    verb: str
    group: str
    resource: str  # may name a subresource: pods/log
    namespace: str = ""
    name: str = ""
    needed_by: str = field(default="", compare=False)

    def __str__(self) -> str:
        text = f"{self.verb} {self.group or 'core'}/{self.resource}"
        if self.name:
            text += f" {self.name}"
        return text + (f" in {self.namespace}" if self.namespace else "")


# what onboarding writes itself, beyond what the services' roles already ask for
ONBOARDING_NEEDS = (
    Permission("get", "apiextensions.k8s.io", "customresourcedefinitions", needed_by="onboard"),
    Permission("create", "apiextensions.k8s.io", "customresourcedefinitions", needed_by="onboard"),
    Permission("update", "apiextensions.k8s.io", "customresourcedefinitions", needed_by="onboard"),
    Permission("get", "", "namespaces", needed_by="onboard"),
    Permission("create", "", "namespaces", needed_by="onboard"),
    Permission("list", "", "nodes", needed_by="onboard"),
    Permission("list", "storage.k8s.io", "storageclasses", needed_by="onboard"),
)
LABELLING_NEEDS = (Permission("patch", "", "nodes", needed_by="onboard: node labels"),)


def required_permissions(
    rbac: Iterable[Obj], extra: Iterable[Permission] = ONBOARDING_NEEDS
) -> list[Permission]:
    """Every permission the roles in ``rbac`` grant (ClusterRoles cluster-wide, Roles in
    their namespace), and ``extra``; each once, in order."""
    found: dict[Permission, Permission] = {}
    for doc in rbac:
        kind = doc.get("kind")
        if kind not in ("ClusterRole", "Role"):
            continue
        meta = doc.get("metadata") or {}
        namespace = meta.get("namespace", "") if kind == "Role" else ""
        for rule in doc.get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    for verb in rule.get("verbs") or []:
                        for name in rule.get("resourceNames") or [""]:
                            wanted = Permission(
                                verb, group, resource, namespace, name, needed_by=meta["name"]
                            )
                            found.setdefault(wanted, wanted)
    for wanted in extra:
        found.setdefault(wanted, wanted)
    return list(found.values())


def server_version(version: Mapping[str, Any]) -> tuple[int, int]:
    """(major, minor) of ``/version`` (``"27+"`` on some clouds is 27)."""
    major = re.match(r"\d+", str(version.get("major", "")))
    minor = re.match(r"\d+", str(version.get("minor", "")))
    if major is None or minor is None:
        git = re.match(r"v?(\d+)\.(\d+)", str(version.get("gitVersion", "")))
        if git is None:
            raise ValueError(f"the server's version does not read: {dict(version)}")
        return int(git.group(1)), int(git.group(2))
    return int(major.group()), int(minor.group())


@dataclass(frozen=True)
class Gpus:
    vendor: str
    model: str
    count: int

    def __str__(self) -> str:
        return f"{self.count}× {self.vendor} {self.model}"


@dataclass(frozen=True)
class NodeSummary:
    name: str
    ready: bool
    cordoned: bool
    cpu: str
    memory: str
    gpus: tuple[Gpus, ...] = ()

    @property
    def state(self) -> str:
        state = "ready" if self.ready else "not ready"
        return f"{state}, cordoned" if self.cordoned else state


def summarize_node(node: Obj) -> NodeSummary:
    """A node as the report shows it: readiness, cordon, allocatable CPU, memory, GPUs."""
    meta, spec, status = (
        node.get("metadata") or {},
        node.get("spec") or {},
        node.get("status") or {},
    )
    labels: Mapping[str, str] = meta.get("labels") or {}
    allocatable: Mapping[str, str] = status.get("allocatable") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    models = {m.group(1): m.group(2) for key in labels if (m := _CAPABILITY.match(key)) is not None}
    gpus = []
    for resource, vendor in _GPU_RESOURCES.items():
        count = _count(allocatable.get(resource))
        if count:
            model = labels.get(f"{vendor}.com/gpu.product") or models.get(vendor) or "unknown"
            gpus.append(Gpus(vendor, model, count))
    return NodeSummary(
        name=meta.get("name", ""),
        ready=ready,
        cordoned=bool(spec.get("unschedulable")),
        cpu=str(allocatable.get("cpu", "?")),
        memory=str(allocatable.get("memory", "?")),
        gpus=tuple(gpus),
    )


def _count(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def storage_class_names(classes: Iterable[Obj]) -> list[str]:
    """Names, the default one marked: ``beta2 (default)``."""
    found = []
    for sc in classes:
        meta = sc.get("metadata") or {}
        default = (meta.get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class")
        found.append(meta.get("name", "") + (" (default)" if default == "true" else ""))
    return sorted(found)


def namespace_object(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": PART_OF}}


def warnings_for(
    nodes: Iterable[NodeSummary],
    storage_classes: Iterable[str],
    ingress_classes: Iterable[str],
    metallb: bool,
) -> list[str]:
    """What the provider can run without, and what it then cannot do."""
    found = []
    usable = [n for n in nodes if n.ready and not n.cordoned]
    if not usable:
        found.append("no node is ready and schedulable: no lease can be deployed")
    if INGRESS_CLASS not in set(ingress_classes):
        found.append(
            f"no IngressClass {INGRESS_CLASS}: leases' hostnames will not be served "
            "(install an ingress controller with that class, e.g. ingress-nginx)"
        )
    if not list(storage_classes):
        found.append("no StorageClass: leases cannot have persistent storage")
    if not metallb:
        found.append(
            f"MetalLB is not installed (no CRD {METALLB_CRD}): leases cannot have leased IPs"
        )
    return found


@dataclass
class Report:
    """What onboarding (or a check) found and did. ``complete``: nothing required missing."""

    server: str
    check_only: bool = False
    version: str = ""
    user: str = ""
    problems: list[str] = field(default_factory=list)  # blocking: unreachable, too old
    checked: int = 0  # permissions asked about
    missing: list[Permission] = field(default_factory=list)
    nodes: list[NodeSummary] = field(default_factory=list)
    storage_classes: list[str] = field(default_factory=list)
    crds: dict[str, str] = field(default_factory=dict)  # name → created/updated/unchanged…
    namespaces: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # node → labelled/unchanged
    labelling: str = ""  # why nodes were not labelled, when they were not
    warnings: list[str] = field(default_factory=list)
    sealed: list[str] = field(default_factory=list)  # the files sealed (the kubeconfig…)

    @property
    def complete(self) -> bool:
        return not self.problems and not self.missing

    @property
    def changed(self) -> bool:
        outcomes = [*self.crds.values(), *self.namespaces.values(), *self.labels.values()]
        return any(o in ("created", "updated", "labelled") for o in outcomes)

    def render(self) -> str:
        lines = [f"Cluster {self.server}"]
        if self.version:
            lines[0] += f": Kubernetes {self.version}" + (f", as {self.user}" if self.user else "")
        lines += [f"  ✗ {problem}" for problem in self.problems]
        if self.checked and not self.missing:
            lines.append(f"Permissions: all {self.checked} the provider needs are granted")
        if self.missing:
            lines.append(f"Missing permissions ({len(self.missing)} of {self.checked}):")
            by_resource = sorted(self.missing, key=lambda p: (p.group, p.resource, p.namespace))
            lines += [f"  ✗ {p}  ({p.needed_by})" for p in by_resource]
        if self.nodes:
            lines.append(f"Nodes ({len(self.nodes)}):")
            for node in self.nodes:
                gpus = ", ".join(map(str, node.gpus)) or "no GPU"
                lines.append(
                    f"  {node.name}: {node.state}; cpu {node.cpu}, memory {node.memory}; {gpus}"
                )
        if self.storage_classes:
            lines.append("Storage classes: " + ", ".join(self.storage_classes))
        for title, outcomes in (("CRDs", self.crds), ("Namespaces", self.namespaces)):
            if outcomes:
                lines.append(f"{title}: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))
        if self.labels:
            lines.append("Node labels: " + ", ".join(f"{k} {v}" for k, v in self.labels.items()))
        elif self.labelling:
            lines.append(f"Node labels: {self.labelling}")
        if self.warnings:
            lines.append("Warnings:")
            lines += [f"  ! {w}" for w in self.warnings]
        if self.sealed:
            lines.append("Sealed: " + ", ".join(self.sealed))
        lines.append(self._verdict())
        return "\n".join(lines)

    def _verdict(self) -> str:
        if self.complete:
            return "Ready: the cluster has what the provider needs."
        if self.check_only:
            return "Not ready: see above (akash-provider cluster onboard sets up what it can)."
        return (
            "Not ready: nothing was changed (no CRD, namespace or label). Grant what is "
            "missing (k8s/rbac.yaml lists it) and run this again."
        )
