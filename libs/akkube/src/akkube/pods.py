"""What pods, claims and storage classes take, from their JSON as the API serves it.

Pure: no I/O library, so services' pure ``domain/`` packages may use it. The rules, with
the Go inventory operator's quirks fixed:

- a pod takes what the scheduler reserves for it while it is bound to a node and not
  finished (Go counts finished pods until they are deleted): the larger of its containers'
  and its init containers' requests (sidecars included), plus overhead and memory-backed
  emptyDir size limits;
- a claim uses the larger of its request and what it was given, of its storage class (the
  default class when it names none).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from akkube.quantity import amount

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
FINISHED = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class Use:
    """Resources in whole units: millicpu, bytes, bytes, GPU units."""

    cpu: int = 0
    memory: int = 0
    ephemeral: int = 0
    gpu: int = 0

    def __add__(self, other: Use) -> Use:
        return Use(
            self.cpu + other.cpu,
            self.memory + other.memory,
            self.ephemeral + other.ephemeral,
            self.gpu + other.gpu,
        )

    def most(self, other: Use) -> Use:
        return Use(
            max(self.cpu, other.cpu),
            max(self.memory, other.memory),
            max(self.ephemeral, other.ephemeral),
            max(self.gpu, other.gpu),
        )


def use_of(resources: Mapping[str, Any]) -> Use:
    """A Kubernetes resource list (``allocatable``, ``requests``…) as a Use; GPUs as the
    device plugins count them (``nvidia.com/gpu`` + ``amd.com/gpu``)."""
    return Use(
        cpu=amount(resources, "cpu", 1000),
        memory=amount(resources, "memory"),
        ephemeral=amount(resources, "ephemeral-storage"),
        gpu=sum(amount(resources, name) for name in GPU_RESOURCES),
    )


def _asked(container: Mapping[str, Any]) -> Use:
    """A container's requests; its limits stand in for those it leaves out, as the API
    server's defaulting makes them."""
    resources = container.get("resources") or {}
    return use_of({**(resources.get("limits") or {}), **(resources.get("requests") or {})})


def pod_requests(pod: Mapping[str, Any]) -> Use:
    """What the scheduler reserves for a pod, plus memory-backed emptyDir size limits.

    Containers add up; an init container runs alone (with the sidecars started before it),
    so the pod needs the larger of the two; sidecars (init containers that restart
    ``Always``) run throughout; the runtime class's ``overhead`` comes on top.
    """
    spec = pod.get("spec") or {}
    total = sum((_asked(c) for c in spec.get("containers") or []), Use())
    sidecars = init_peak = Use()
    for container in spec.get("initContainers") or []:
        asked = _asked(container)
        if container.get("restartPolicy") == "Always":
            total += asked
            sidecars += asked
            asked = sidecars
        else:
            asked += sidecars
        init_peak = init_peak.most(asked)
    total = total.most(init_peak) + use_of(spec.get("overhead") or {})
    in_memory = sum(
        amount(volume["emptyDir"], "sizeLimit")
        for volume in spec.get("volumes") or []
        if (volume.get("emptyDir") or {}).get("medium") == "Memory"
    )
    return total + Use(memory=in_memory)


def pod_use(pod: Mapping[str, Any]) -> tuple[str, Use] | None:
    """(node, requests) of a pod that holds resources on a node; None for any other."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("status") or {}).get("phase") in FINISHED:
        return None
    return str(node), pod_requests(pod)


def claim_of(pvc: Mapping[str, Any]) -> tuple[str | None, int]:
    """(storage class, bytes) of a claim: the larger of its request and what it was given.
    The class is None when the claim names none (the default class applies)."""
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    size = max(
        amount((spec.get("resources") or {}).get("requests") or {}, "storage"),
        amount(status.get("capacity") or {}, "storage"),
    )
    return spec.get("storageClassName"), size


def is_default_class(storage_class: Mapping[str, Any]) -> bool:
    """Whether a StorageClass is the cluster's default (for claims naming none)."""
    annotations = (storage_class.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(DEFAULT_CLASS) == "true")
