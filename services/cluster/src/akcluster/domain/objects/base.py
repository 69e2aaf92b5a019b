"""What every builder shares: settings, per-service scheduler params, labels, quantities.

Label names and values are Akash's (``cluster/kube/builder/builder.go``), so the objects of
a lease look the same whichever provider wrote them, and an operator can move a cluster
from the Go provider to this one and back.

Scheduler params say where a service's pods may run: the concrete GPU the reservation found
(the offer of its resource unit names ``vendor/<v>/model/<m>[/ram/<r>][/interface/<i>]``)
and the runtime class that GPU needs (``nvidia``). Without an allocation they fall back to
what the SDL asked for, when that names exactly one model.

Quantities are written in Kubernetes' canonical form (``1500m``, ``2``, ``536870912``,
``1G``), as the Go provider's ``resource.Quantity`` marshals them: a desired object then
compares equal to what the API server returns.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aktypes.attributes import Attribute
from aktypes.events import ResourceOffer
from aktypes.ids import LeaseID
from aktypes.manifest import Group, Service
from aktypes.namespace import lease_namespace

Obj = dict[str, Any]

MANAGED = "akash.network"
NAMESPACE_LABEL = "akash.network/namespace"
MANIFEST_SERVICE = "akash.network/manifest-service"
SERVICE_TARGET = "akash.network/service-target"
RESOURCE_VERSION = "akash.network/manifest.resource.version"
LEASE_OWNER = "akash.network/lease.id.owner"
LEASE_DSEQ = "akash.network/lease.id.dseq"
LEASE_GSEQ = "akash.network/lease.id.gseq"
LEASE_OSEQ = "akash.network/lease.id.oseq"
LEASE_PROVIDER = "akash.network/lease.id.provider"
MANIFEST_VERSION = "akash.network/manifest-version"
GPU_CAPABILITY = "akash.network/capabilities.gpu"
STORAGE_CAPABILITY = "akash.network/capabilities.storage"

RUNTIME_NONE = "none"
RUNTIME_NVIDIA = "nvidia"
GPU_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}


@dataclass(frozen=True)
class BuildSettings:
    """How the cluster wants a lease's objects (Akash's builder ``Settings``)."""

    public_hostname: str = ""
    network_policies: bool = True
    ingress_domain: str = ""  # static hosts: each HTTP service also gets <label>.<domain>
    pull_secret: str = ""
    manifest_namespace: str = "lease"
    runtime_class: str = ""
    api_server_endpoints: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class SchedulerParams:
    """Where one service's pods may run: runtime class and the GPU the reservation found."""

    runtime_class: str = ""
    gpu_vendor: str = ""
    gpu_model: str = ""
    gpu_ram: str = ""
    gpu_interface: str = ""


def parse_gpu_key(key: str) -> SchedulerParams | None:
    """``vendor/<v>/model/<m>[/ram/<r>][/interface/<i>]`` as params; ``None`` if malformed."""
    parts = key.split("/")
    if len(parts) < 4 or len(parts) % 2 or parts[0] != "vendor" or parts[2] != "model":
        return None
    extra = dict(zip(parts[4::2], parts[5::2], strict=True))
    vendor = parts[1].lower()
    return SchedulerParams(
        runtime_class=RUNTIME_NVIDIA if vendor == "nvidia" else "",
        gpu_vendor=vendor,
        gpu_model="" if parts[3] == "*" else parts[3],
        gpu_ram=extra.get("ram", ""),
        gpu_interface=extra.get("interface", ""),
    )


def _gpu_keys(offer: ResourceOffer | None, service: Service) -> tuple[list[str], bool]:
    if offer is not None and offer.resources.gpu and offer.resources.gpu.attributes:
        return [a.key for a in offer.resources.gpu.attributes], True
    gpu = service.resources.gpu
    if gpu is None:
        return [], False
    return [a.key for a in gpu.attributes or ()], False


def _service_params(service: Service, offer: ResourceOffer | None) -> SchedulerParams:
    if service.resources.gpu_units == 0:
        return SchedulerParams()
    keys, allocated = _gpu_keys(offer, service)
    parsed = [p for p in map(parse_gpu_key, keys) if p is not None]
    if not parsed:
        return SchedulerParams()
    if allocated or len(parsed) == 1:
        return parsed[0]
    vendors = {p.gpu_vendor for p in parsed}
    vendor = vendors.pop() if len(vendors) == 1 else ""
    return SchedulerParams(
        runtime_class=RUNTIME_NVIDIA if vendor == "nvidia" else "", gpu_vendor=vendor
    )


def scheduler_params(
    group: Group, allocated: Sequence[ResourceOffer]
) -> dict[str, SchedulerParams]:
    """Per service name: the params of its resource unit's allocation (or of its SDL)."""
    offers = {offer.resources.id: offer for offer in allocated}
    return {
        service.name: _service_params(service, offers.get(service.resources.id))
        for service in group.services or ()
    }


def gpu_key(params: SchedulerParams) -> str:
    """The offer's GPU attribute key of ``params`` (:func:`parse_gpu_key`'s inverse)."""
    key = f"vendor/{params.gpu_vendor}/model/{params.gpu_model or '*'}"
    if params.gpu_ram:
        key += f"/ram/{params.gpu_ram}"
    if params.gpu_interface:
        key += f"/interface/{params.gpu_interface}"
    return key


def allocation_of(group: Group, params: Mapping[str, SchedulerParams]) -> list[ResourceOffer]:
    """The offers a reservation would have allocated for the GPUs ``params`` (by service)
    name: what a lease found deployed runs on, so it is built on the same GPU again."""
    offers = []
    for service in group.services or ():
        found = params.get(service.name)
        gpu = service.resources.gpu
        if gpu is None or not service.resources.gpu_units or found is None:
            continue
        if not (found.gpu_vendor and found.gpu_model):
            continue
        attributes = [Attribute(key=gpu_key(found), value="true")]
        placed = gpu.model_copy(update={"attributes": attributes})
        resources = service.resources.model_copy(update={"gpu": placed})
        offers.append(ResourceOffer(resources=resources, count=service.count))
    return offers


def uses_offers(group: Group) -> bool:
    """Whether :func:`scheduler_params` reads the allocation's offers: only a GPU's do."""
    return any(service.resources.gpu_units for service in group.services or ())


@functools.lru_cache(maxsize=256)
def namespace_of(lease_id: LeaseID) -> str:
    """:func:`aktypes.namespace.lease_namespace`, remembered: building a lease's objects asks
    for it a dozen times, and each is a hash and a base32 encoding."""
    return lease_namespace(lease_id)


@functools.lru_cache(maxsize=256)
def _lease_labels(lease_id: LeaseID) -> tuple[tuple[str, str], ...]:
    return (
        (MANAGED, "true"),
        (NAMESPACE_LABEL, namespace_of(lease_id)),
        (LEASE_OWNER, str(lease_id.owner)),
        (LEASE_DSEQ, str(lease_id.dseq)),
        (LEASE_GSEQ, str(lease_id.gseq)),
        (LEASE_OSEQ, str(lease_id.oseq)),
        (LEASE_PROVIDER, str(lease_id.provider)),
    )


def lease_labels(lease_id: LeaseID) -> dict[str, str]:
    """Labels every object of a lease carries: managed by Akash, its namespace, its lease."""
    return dict(_lease_labels(lease_id))


def selector_labels(lease_id: LeaseID, service: str) -> dict[str, str]:
    """Akash's pod selector of a service (immutable on a workload: exactly Go's)."""
    return {MANAGED: "true", NAMESPACE_LABEL: namespace_of(lease_id), MANIFEST_SERVICE: service}


def service_labels(lease_id: LeaseID, service: str, resource_version: str = "") -> dict[str, str]:
    """Labels of a service's workload and Kubernetes Services."""
    labels = lease_labels(lease_id) | {MANIFEST_SERVICE: service, SERVICE_TARGET: "true"}
    if resource_version:
        labels[RESOURCE_VERSION] = resource_version
    return labels


def metadata(
    name: str,
    labels: dict[str, str],
    namespace: str | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return meta


_SUFFIXES = ("", "k", "M", "G", "T", "P", "E")


def decimal_quantity(value: int) -> str:
    """A whole number in canonical DecimalSI form: ``1500``, ``2k``, ``1G``."""
    exponent = 0
    while value and value % 1000 == 0 and exponent < len(_SUFFIXES) - 1:
        value //= 1000
        exponent += 1
    return f"{value}{_SUFFIXES[exponent]}"


def cpu_quantity(millis: int) -> str:
    """Millicpu in canonical form: ``500m``, ``1``, ``1500m``."""
    return decimal_quantity(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
