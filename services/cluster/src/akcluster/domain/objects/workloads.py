"""A service's workload: its container, pod, Deployment or StatefulSet, RBAC and pull secret.

Akash's rules (``cluster/kube/builder/workload.go`` and friends): a service with a persistent
volume runs as a StatefulSet (one claim per replica and volume), any other as a Deployment;
requests are the committed amounts (commit levels), limits the requested ones, and memory's
limit also holds the service's ``ram`` volumes. Pods go only to Akash nodes that have the
GPU model the reservation found and every persistent volume's storage class.

Where Akash has a bug, the fix: the GPU interface selector names the interface (Go put the
memory size there), the configured runtime class applies to pods without a GPU runtime
(Go parsed ``--deployment-runtime-class`` and never used it), container ports carry their
protocol and appear once each, and a mounted ephemeral volume is a volume of the pod.

RBAC and registry credentials are in :mod:`.access`.

Selectors, claim templates and ``serviceName`` are exactly Go's, because Kubernetes does not
let them change on an existing workload: a provider taking over a lease from the Go one
updates its workloads in place.
"""

from __future__ import annotations

from akcluster.domain.objects.base import (
    GPU_CAPABILITY,
    GPU_RESOURCES,
    MANAGED,
    RUNTIME_NONE,
    STORAGE_CAPABILITY,
    BuildSettings,
    Obj,
    SchedulerParams,
    cpu_quantity,
    decimal_quantity,
    metadata,
    namespace_of,
    selector_labels,
    service_labels,
)
from akcluster.domain.placement import CommitLevels, committed
from aktypes.ids import LeaseID
from aktypes.manifest import UDP, Service
from aktypes.resources import EPHEMERAL


def read_permissions(service: Service) -> list[str]:
    params = service.params
    if params is None or params.permissions is None:
        return []
    return list(params.permissions.read or ())


def is_stateful(service: Service) -> bool:
    return any(volume.persistent for volume in service.resources.storage or ())


def volume_name(service: Service, volume: str) -> str:
    return f"{service.name}-{volume}"


def credentials_secret_name(service: Service) -> str:
    return f"docker-creds-{service.name}"


def _gpu_vendor(service: Service, params: SchedulerParams) -> str:
    if params.gpu_vendor:
        return params.gpu_vendor
    gpu = service.resources.gpu
    for attr in (gpu.attributes or ()) if gpu else ():
        parts = attr.key.split("/")
        if len(parts) > 1 and parts[0] == "vendor":
            return parts[1].lower()
    return "nvidia"


def _resources(service: Service, params: SchedulerParams, levels: CommitLevels) -> Obj:
    res = service.resources
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if res.cpu is not None:
        requests["cpu"] = cpu_quantity(committed(res.cpu_millis, levels.cpu))
        limits["cpu"] = cpu_quantity(res.cpu_millis)
    if res.gpu_units > 0:
        vendor = _gpu_vendor(service, params)
        name = GPU_RESOURCES.get(vendor)
        if name is None:
            raise ValueError(f"service {service.name!r}: unsupported GPU vendor {vendor!r}")
        requests[name] = limits[name] = decimal_quantity(res.gpu_units)
    ram = ephemeral = 0
    for volume in res.storage or ():
        if volume.storage_class == "ram":
            ram += volume.size.val
        elif volume.storage_class == EPHEMERAL:
            ephemeral += volume.size.val
    if ephemeral:
        requests["ephemeral-storage"] = decimal_quantity(committed(ephemeral, levels.storage))
        limits["ephemeral-storage"] = decimal_quantity(ephemeral)
    if res.memory is not None:
        requests["memory"] = decimal_quantity(committed(res.memory_bytes, levels.memory))
        limits["memory"] = decimal_quantity(res.memory_bytes + ram)
    return {"limits": limits, "requests": requests}


def _env(service: Service, lease_id: LeaseID, settings: BuildSettings) -> list[Obj]:
    env: list[Obj] = []
    seen: set[str] = set()
    for item in service.env or ():
        name, sep, value = item.partition("=")
        env.append({"name": name, "value": value} if sep else {"name": name})
        seen.add(name)
    for name, value in (
        ("AKASH_GROUP_SEQUENCE", str(lease_id.gseq)),
        ("AKASH_DEPLOYMENT_SEQUENCE", str(lease_id.dseq)),
        ("AKASH_ORDER_SEQUENCE", str(lease_id.oseq)),
        ("AKASH_OWNER", str(lease_id.owner)),
        ("AKASH_PROVIDER", str(lease_id.provider)),
        ("AKASH_CLUSTER_PUBLIC_HOSTNAME", settings.public_hostname),
    ):
        if name not in seen:
            env.append({"name": name, "value": value})
    return env


def container(
    service: Service,
    lease_id: LeaseID,
    params: SchedulerParams,
    *,
    settings: BuildSettings,
    levels: CommitLevels,
) -> Obj:
    """The one container of a service's pods."""
    spec: Obj = {"name": service.name, "image": service.image}
    if service.command:
        spec["command"] = list(service.command)
    if service.args:
        spec["args"] = list(service.args)
    spec["env"] = _env(service, lease_id, settings)
    spec["resources"] = _resources(service, params, levels)
    ports: list[Obj] = []
    seen: set[tuple[int, str]] = set()
    for expose in service.expose or ():
        proto = "UDP" if expose.proto == UDP else "TCP"
        if (expose.port, proto) not in seen:
            seen.add((expose.port, proto))
            ports.append({"containerPort": expose.port, "protocol": proto})
    if ports:
        spec["ports"] = ports
    volumes = {v.name for v in service.resources.storage or ()}
    mounts: list[Obj] = []
    for param in (service.params.storage or ()) if service.params else ():
        if param.name in volumes:
            mount: Obj = {"name": volume_name(service, param.name), "mountPath": param.mount}
            if param.read_only:
                mount["readOnly"] = True
            mounts.append(mount)
    if mounts:
        spec["volumeMounts"] = mounts
    spec["imagePullPolicy"] = "IfNotPresent"
    spec["securityContext"] = {
        "runAsNonRoot": False,
        "privileged": False,
        "allowPrivilegeEscalation": False,
    }
    return spec


def _requirement(key: str, operator: str, values: list[str]) -> Obj:
    return {"key": key, "operator": operator, "values": values}


def affinity(service: Service, params: SchedulerParams) -> Obj:
    """Required node affinity: an Akash node with the GPU and storage classes it needs."""
    selectors = [_requirement(MANAGED, "In", ["true"])]
    if service.resources.gpu_units > 0 and params.gpu_vendor and params.gpu_model:
        key = f"{GPU_CAPABILITY}.vendor.{params.gpu_vendor}.model.{params.gpu_model}"
        selectors.append(_requirement(key, "Gt", ["0"]))
        if params.gpu_ram:
            selectors.append(_requirement(f"{key}.ram.{params.gpu_ram}", "Gt", ["0"]))
        if params.gpu_interface:
            selectors.append(_requirement(f"{key}.interface.{params.gpu_interface}", "Gt", ["0"]))
    classes: list[str] = []
    for volume in service.resources.storage or ():
        if volume.persistent and volume.storage_class not in classes:
            classes.append(volume.storage_class)
    selectors.extend(
        _requirement(f"{STORAGE_CAPABILITY}.class.{cls}", "Gt", ["0"]) for cls in classes
    )
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": selectors}]
            }
        }
    }


def runtime_class(service: Service, params: SchedulerParams, settings: BuildSettings) -> str:
    """The scheduler params' runtime class; else, without a GPU, the configured one."""
    if params.runtime_class:
        return "" if params.runtime_class == RUNTIME_NONE else params.runtime_class
    if service.resources.gpu_units == 0 and settings.runtime_class != RUNTIME_NONE:
        return settings.runtime_class
    return ""


def _mounted(service: Service) -> set[str]:
    params = service.params
    return {p.name for p in params.storage or ()} if params else set()


def _volumes(service: Service) -> list[Obj]:
    """``ram`` volumes in memory; a mounted ephemeral volume as a directory of the pod's
    ephemeral storage (Go mounted a volume the pod did not have, which Kubernetes refuses)."""
    volumes: list[Obj] = []
    mounted = _mounted(service)
    for volume in service.resources.storage or ():
        name = volume_name(service, volume.name)
        if volume.storage_class == "ram":
            size = decimal_quantity(volume.size.val)
            volumes.append({"name": name, "emptyDir": {"medium": "Memory", "sizeLimit": size}})
        elif volume.storage_class == EPHEMERAL and volume.name in mounted:
            volumes.append({"name": name, "emptyDir": {}})
    return volumes


def claim_templates(service: Service) -> list[Obj]:
    """One ReadWriteOnce claim per persistent volume, as Akash writes them."""
    claims: list[Obj] = []
    for volume in service.resources.storage or ():
        if not volume.persistent:
            continue
        spec: Obj = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": decimal_quantity(volume.size.val)}},
            "volumeMode": "Filesystem",
        }
        if volume.storage_class != "default":
            spec["storageClassName"] = volume.storage_class
        claims.append({"metadata": {"name": volume_name(service, volume.name)}, "spec": spec})
    return claims


def pull_secret(service: Service, settings: BuildSettings) -> str:
    if service.credentials is not None:
        return credentials_secret_name(service)
    return settings.pull_secret


def pod_spec(
    service: Service,
    lease_id: LeaseID,
    params: SchedulerParams,
    *,
    settings: BuildSettings,
    levels: CommitLevels,
) -> Obj:
    permitted = bool(read_permissions(service))
    spec: Obj = {"affinity": affinity(service, params)}
    runtime = runtime_class(service, params, settings)
    if runtime:
        spec["runtimeClassName"] = runtime
    spec["securityContext"] = {"runAsNonRoot": False}
    spec["automountServiceAccountToken"] = permitted
    if permitted:
        spec["serviceAccountName"] = service.name
    spec["containers"] = [container(service, lease_id, params, settings=settings, levels=levels)]
    secret = pull_secret(service, settings)
    if secret:
        spec["imagePullSecrets"] = [{"name": secret}]
    volumes = _volumes(service)
    if volumes:
        spec["volumes"] = volumes
    return spec


def workload(
    service: Service,
    lease_id: LeaseID,
    params: SchedulerParams,
    *,
    settings: BuildSettings,
    levels: CommitLevels,
    resource_version: str = "",
) -> Obj:
    """The service's StatefulSet (with a persistent volume) or Deployment."""
    ns = namespace_of(lease_id)
    template = {
        "metadata": {"labels": service_labels(lease_id, service.name)},
        "spec": pod_spec(service, lease_id, params, settings=settings, levels=levels),
    }
    labels = service_labels(lease_id, service.name, resource_version)
    selector = {"matchLabels": selector_labels(lease_id, service.name)}
    if is_stateful(service):
        return {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": metadata(service.name, labels, ns),
            "spec": {
                "replicas": service.count,
                "selector": selector,
                "serviceName": "",
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"partition": 0, "maxUnavailable": 1},
                },
                "revisionHistoryLimit": 1,
                "template": template,
                "volumeClaimTemplates": claim_templates(service),
            },
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(service.name, labels, ns),
        "spec": {
            "replicas": service.count,
            "selector": selector,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
            },
            "revisionHistoryLimit": 10,
            "template": template,
        },
    }
