"""The subresources that are actions rather than the object itself: `scale` (Deployments,
StatefulSets, ReplicaSets), a pod's `binding` and `eviction`, and a namespace's `finalize`.

Each body is decoded into its type (`Scale`, `Binding`, `Eviction`, `Namespace`) as any
other body is: what does not decode is 400, unknown fields follow `fieldValidation`.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesim import decoding, errors, patch
from kubesim.catalog import ResourceType
from kubesim.decoding import FieldValidation
from kubesim.store import Store

SCALE = "io.k8s.api.autoscaling.v1.Scale"
BINDING = "io.k8s.api.core.v1.Binding"
EVICTION = "io.k8s.api.policy.v1.Eviction"
NAMESPACE = "io.k8s.api.core.v1.Namespace"


def decode_body(
    store: Store,
    definition: str,
    body: Any,
    fields: FieldValidation | None = None,
    patched: tuple[ResourceType, str] | None = None,
) -> dict[str, Any]:
    """A subresource's body as its type: 400 when it does not decode, or 422 on the field
    `patch` when a patch of the object `patched` made it so."""
    type_name = definition.rsplit(".", 1)[-1]
    prefix = f'{type_name} in version "v1" cannot be handled as a {type_name}: '
    try:
        decoded, unknown = decoding.decode_definition(
            definition, store.kube_version, body, "", type_name
        )
    except decoding.DecodeError as exc:
        if patched is None:
            raise errors.bad_request(f"{prefix}{exc}") from None
        cause = ("patch", "FieldValueInvalid", f"Invalid value: the patched object: {exc}")
        raise errors.invalid(*patched, [cause]) from None
    if fields is not None:
        fields.settle(unknown, prefix)
    return decoded if isinstance(decoded, dict) else {}


def scale(
    store: Store,
    rtype: ResourceType,
    ns: str,
    name: str,
    *,
    body: Any = None,
    patch_type: str | None = None,
    fields: FieldValidation | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Read the Scale of a workload, or write it (PUT `body`, or PATCH it with `body`)."""
    obj = store.get(rtype, ns, name)
    if body is None:
        return scale_body(obj)
    if patch_type is not None:
        current = scale_body(obj)
        if patch_type == patch.JSON_PATCH:
            body = patch.json_patch(current, body)
        elif patch_type == patch.STRATEGIC_MERGE_PATCH and isinstance(body, dict):
            body = patch.merge_patch(current, body)  # Scale has no lists to merge by key
        elif isinstance(body, dict):
            body = patch.merge_patch(current, body)
        else:
            raise errors.bad_request("Invalid JSON Patch: a merge patch must be an object")
    wanted = decode_body(
        store, SCALE, body, fields, (rtype, name) if patch_type is not None else None
    )
    replicas = (wanted.get("spec") or {}).get("replicas", 0)
    if replicas < 0:
        raise errors.invalid(
            rtype,
            name,
            [
                (
                    "spec.replicas",
                    "FieldValueInvalid",
                    f"Invalid value: {replicas}: must be greater than or equal to 0",
                )
            ],
        )
    obj["spec"]["replicas"] = replicas
    return scale_body(store.update(rtype, ns, name, obj, dry_run=dry_run))


def bind(store: Store, rtype: ResourceType, ns: str, name: str, body: Any) -> None:
    """Place a pod on a node, as the scheduler's `pods/binding` does."""
    binding = decode_body(store, BINDING, body)
    pod = store.get(rtype, ns, name)
    target = binding.get("target") or {}
    if not target.get("name"):
        raise errors.invalid(rtype, name, [("target.name", "FieldValueRequired", "Required value")])
    if target.get("kind") not in (None, "", "Node"):
        raise errors.invalid(
            rtype,
            name,
            [("target.kind", "FieldValueNotSupported", 'Unsupported value: must be "Node"')],
        )
    if pod["spec"].get("nodeName"):
        raise errors.ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already '
            f'assigned to node "{pod["spec"]["nodeName"]}"',
            errors.details_of(rtype, name),
        )
    pod["spec"]["nodeName"] = target["name"]
    store.update(rtype, ns, name, pod, system=True)


def evict(
    store: Store, rtype: ResourceType, ns: str, name: str, body: Any, *, dry_run: bool
) -> None:
    """Evict a pod: here, delete it (no PodDisruptionBudgets are consulted)."""
    eviction = decode_body(store, EVICTION, body)
    given = (eviction.get("metadata") or {}).get("name")
    if given not in (None, "", name):
        raise errors.bad_request(
            f"name in URL does not match name in Eviction object: {name} != {given}"
        )
    store.delete(rtype, ns, name, eviction.get("deleteOptions") or {}, dry_run=dry_run)


def finalize(store: Store, rtype: ResourceType, name: str, body: Any) -> dict[str, Any]:
    """A namespace's `finalize`: its `spec.finalizers` replaced by the body's."""
    namespace = decode_body(store, NAMESPACE, body)
    current = store.get(rtype, "", name)
    current["spec"] = copy.deepcopy(namespace.get("spec") or {})
    return store.update(rtype, "", name, current, system=True)


def scale_body(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
        },
    }
