"""The resource types kubesim serves: the built-in ones and those CRDs declare.

A `ResourceType` is what discovery publishes for one group/version/plural and what the
store needs to know to keep its objects (scope, subresources, whether spec changes bump
`metadata.generation`). Objects are stored per group and plural, whatever the version a
client used: a CRD's versions share one storage, as with CRD conversion strategy `None`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
# a subresource's verbs and kind in discovery ("" for the kind of its resource)
_SUBRESOURCES: dict[str, tuple[tuple[str, ...], str]] = {
    "status": (("get", "patch", "update"), ""),
    "scale": (("get", "patch", "update"), "Scale"),
    "log": (("get",), "Pod"),
    "exec": (("create", "get"), "PodExecOptions"),
    "attach": (("create", "get"), "PodAttachOptions"),
    "portforward": (("create", "get"), "PodPortForwardOptions"),
    "eviction": (("create",), "Eviction"),
    "binding": (("create",), "Binding"),
    "finalize": (("update",), ""),
}


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    has_spec: bool = True  # spec changes bump metadata.generation
    custom: bool = False  # served from a CRD
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def store_key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def qualified(self) -> str:
        """`deployments.apps`, `pods`: how Kubernetes names the resource in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def discovery(self) -> list[dict[str, Any]]:
        """The APIResource entries for this type and its subresources."""
        main: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(VERBS),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        for sub in sorted(self.subresources):
            verbs, kind = _SUBRESOURCES.get(sub, (["get"], self.kind))
            entries.append(
                {
                    "name": f"{self.plural}/{sub}",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": kind or self.kind,
                    "verbs": list(verbs),
                }
            )
        return entries


def _t(
    gv: str,
    plural: str,
    kind: str,
    *,
    ns: bool = True,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    spec: bool = True,
    categories: tuple[str, ...] = (),
) -> ResourceType:
    group, _, version = gv.rpartition("/")
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        namespaced=ns,
        short_names=short,
        subresources=frozenset(sub),
        has_spec=spec,
        categories=categories,
    )


ALL = ("all",)
BUILTIN: tuple[ResourceType, ...] = (
    _t("v1", "namespaces", "Namespace", ns=False, short=("ns",), sub=("status", "finalize")),
    _t("v1", "nodes", "Node", ns=False, short=("no",), sub=("status",)),
    _t(
        "v1",
        "pods",
        "Pod",
        short=("po",),
        sub=("status", "log", "exec", "attach", "portforward", "binding", "eviction"),
        categories=ALL,
    ),
    _t("v1", "services", "Service", short=("svc",), sub=("status",), categories=ALL),
    _t("v1", "endpoints", "Endpoints", short=("ep",), spec=False),
    _t("v1", "configmaps", "ConfigMap", short=("cm",), spec=False),
    _t("v1", "secrets", "Secret", spec=False),
    _t("v1", "serviceaccounts", "ServiceAccount", short=("sa",), spec=False),
    _t("v1", "persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",), sub=("status",)),
    _t("v1", "persistentvolumes", "PersistentVolume", ns=False, short=("pv",), sub=("status",)),
    _t("v1", "events", "Event", short=("ev",), spec=False),
    _t("v1", "resourcequotas", "ResourceQuota", short=("quota",), sub=("status",)),
    _t("v1", "limitranges", "LimitRange", short=("limits",)),
    _t(
        "apps/v1",
        "deployments",
        "Deployment",
        short=("deploy",),
        sub=("status", "scale"),
        categories=ALL,
    ),
    _t(
        "apps/v1",
        "statefulsets",
        "StatefulSet",
        short=("sts",),
        sub=("status", "scale"),
        categories=ALL,
    ),
    _t(
        "apps/v1",
        "replicasets",
        "ReplicaSet",
        short=("rs",),
        sub=("status", "scale"),
        categories=ALL,
    ),
    _t("apps/v1", "daemonsets", "DaemonSet", short=("ds",), sub=("status",), categories=ALL),
    _t("apps/v1", "controllerrevisions", "ControllerRevision", spec=False),
    _t("batch/v1", "jobs", "Job", sub=("status",), categories=ALL),
    _t("batch/v1", "cronjobs", "CronJob", short=("cj",), sub=("status",), categories=ALL),
    _t("networking.k8s.io/v1", "ingresses", "Ingress", short=("ing",), sub=("status",)),
    _t("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", short=("netpol",)),
    _t("networking.k8s.io/v1", "ingressclasses", "IngressClass", ns=False),
    _t("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", short=("pdb",), sub=("status",)),
    _t("rbac.authorization.k8s.io/v1", "roles", "Role", spec=False),
    _t("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", spec=False),
    _t("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", ns=False, spec=False),
    _t(
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        ns=False,
        spec=False,
    ),
    _t("storage.k8s.io/v1", "storageclasses", "StorageClass", ns=False, short=("sc",), spec=False),
    _t("node.k8s.io/v1", "runtimeclasses", "RuntimeClass", ns=False, spec=False),
    _t("coordination.k8s.io/v1", "leases", "Lease"),
    _t(
        "scheduling.k8s.io/v1",
        "priorityclasses",
        "PriorityClass",
        ns=False,
        short=("pc",),
        spec=False,
    ),
    _t(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        ns=False,
        short=("crd", "crds"),
        sub=("status",),
    ),
)


class Catalog:
    """Every served resource type, looked up by group/version/plural or by store key."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_types: dict[str, list[ResourceType]] = {}
        for rtype in BUILTIN:
            self._add(rtype)

    def _add(self, rtype: ResourceType) -> None:
        self._types[(rtype.group, rtype.version, rtype.plural)] = rtype

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def by_store_key(self, key: tuple[str, str]) -> ResourceType | None:
        for rtype in self._types.values():
            if rtype.store_key == key:
                return rtype
        return None

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._types.values())

    def group_versions(self) -> dict[str, list[str]]:
        """Group → its versions, preferred first, core group under ""."""
        found: dict[str, list[str]] = {}
        for rtype in self._types.values():
            versions = found.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
        return found

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self._types.values() if t.group == group and t.version == version]

    # -- custom resources ------------------------------------------------------------
    def register_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        """Serve (or re-serve) the versions a CRD declares; returns the new types."""
        self.unregister_crd(crd["metadata"]["name"])
        spec = crd["spec"]
        names = spec["names"]
        types = []
        for version in spec.get("versions") or []:
            if not version.get("served", True):
                continue
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            rtype = ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                subresources=frozenset((version.get("subresources") or {}).keys()),
                custom=True,
                schema=schema,
                categories=tuple(names.get("categories") or ()),
            )
            self._add(rtype)
            types.append(rtype)
        self._crd_types[crd["metadata"]["name"]] = types
        return types

    def unregister_crd(self, name: str) -> list[ResourceType]:
        types = self._crd_types.pop(name, [])
        for rtype in types:
            self._types.pop((rtype.group, rtype.version, rtype.plural), None)
        return types
