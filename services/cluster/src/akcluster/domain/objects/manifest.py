"""The Manifest resource of a lease: how a provider remembers which group each lease runs.

One per lease, named after its namespace, in the manifest namespace (``lease``), written in
the exact JSON the Go provider writes (``pkg/apis/akash.network/v2beta2/manifest.go``), so
either provider can read what the other wrote, scheduler params included.

Akash's Manifest CRD has no place for an expose's ``proxy_buffer_size`` or a service's
``tee`` params, so its spec loses them. Ours also keeps the whole group, as manifest JSON, in
the annotation ``akash.network/manifest-group``; :func:`group_from_manifest_object` prefers it
while it still describes the same group as the spec (the Go provider rewrites the spec and
leaves foreign annotations alone), and otherwise reads the spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from akcluster.domain.objects.base import (
    MANIFEST_VERSION,
    BuildSettings,
    Obj,
    SchedulerParams,
    lease_labels,
    metadata,
    namespace_of,
    scheduler_params,
)
from aktypes.attributes import Attribute
from aktypes.gojson import sorted_json
from aktypes.ids import LeaseID
from aktypes.manifest import (
    TCP,
    Group,
    HTTPOptions,
    ImageCredentials,
    Service,
    ServiceExpose,
    ServiceParams,
    ServicePermissions,
    StorageParams,
)
from aktypes.resources import CPU, GPU, Memory, Resources, Storage, rv

API_VERSION = "akash.network/v2beta2"
MANIFEST_GROUP = "akash.network/manifest-group"
_ANNOTATION_MAX = 200_000  # Kubernetes allows 256 KiB of annotations per object


# -- Go's JSON of a manifest group -------------------------------------------------------------
def _attrs(attributes: list[Attribute] | None) -> Obj:
    if not attributes:
        return {}
    return {"attributes": [{"key": a.key, "value": a.value} for a in attributes]}


def _spec_resources(res: Resources) -> Obj:
    spec: Obj = {
        "id": res.id,
        "cpu": {"units": res.cpu_millis} | _attrs(res.cpu.attributes if res.cpu else None),
        "gpu": {"units": res.gpu_units} | _attrs(res.gpu.attributes if res.gpu else None),
        "memory": {"size": str(res.memory_bytes)}
        | _attrs(res.memory.attributes if res.memory else None),
    }
    if res.storage:
        spec["storage"] = [
            {"name": v.name, "size": str(v.size.val)} | _attrs(v.attributes) for v in res.storage
        ]
    return spec


def _omit_empty(pairs: Mapping[str, Any]) -> Obj:
    return {k: v for k, v in pairs.items() if v not in (0, "", None, False, [])}


def _spec_expose(expose: ServiceExpose) -> Obj:
    opts = expose.http_options
    spec = _omit_empty(
        {
            "port": expose.port,
            "external_port": expose.external_port,
            "proto": expose.proto,
            "service": expose.service,
            "global": expose.global_,
            "hosts": list(expose.hosts or ()),
        }
    )
    spec["http_options"] = _omit_empty(
        {
            "max_body_size": opts.max_body_size,
            "read_timeout": opts.read_timeout,
            "send_timeout": opts.send_timeout,
            "next_tries": opts.next_tries,
            "next_timeout": opts.next_timeout,
            "next_cases": list(opts.next_cases or ()),
        }
    )
    if expose.ip:
        spec["ip"] = expose.ip
    spec["endpoint_sequence_number"] = expose.endpoint_sequence_number
    return spec


def _spec_params(params: ServiceParams) -> Obj:
    spec: Obj = {}
    if params.storage:
        spec["storage"] = [
            {"name": p.name, "mount": p.mount, "readOnly": p.read_only} for p in params.storage
        ]
    if params.permissions is not None:
        spec["permissions"] = _omit_empty({"read": list(params.permissions.read or ())})
    return spec


def _spec_scheduler(params: SchedulerParams) -> Obj:
    spec: Obj = {"runtime_class": params.runtime_class}
    if params.gpu_vendor or params.gpu_model:
        spec["resources"] = {
            "gpu": {
                "vendor": params.gpu_vendor,
                "model": params.gpu_model,
                "memory_size": params.gpu_ram,
                "interface": params.gpu_interface,
            }
        }
    return spec


def _spec_service(service: Service, params: SchedulerParams) -> Obj:
    spec = _omit_empty(
        {
            "name": service.name,
            "image": service.image,
            "command": list(service.command or ()),
            "args": list(service.args or ()),
            "env": list(service.env or ()),
        }
    )
    spec["resources"] = _spec_resources(service.resources)
    spec |= _omit_empty(
        {"count": service.count, "expose": [_spec_expose(e) for e in service.expose or ()]}
    )
    if service.params is not None:
        spec["params"] = _spec_params(service.params)
    spec["scheduler_params"] = _spec_scheduler(params)
    if service.credentials is not None:
        creds = service.credentials
        spec["credentials"] = {
            "host": creds.host,
            "email": creds.email,
            "username": creds.username,
            "password": creds.password,
        }
    return spec


def _spec_group(group: Group, params: Mapping[str, SchedulerParams]) -> Obj:
    services = [
        _spec_service(s, params.get(s.name, SchedulerParams())) for s in group.services or ()
    ]
    return _omit_empty({"name": group.name, "services": services})


def _spec_lease_id(lease_id: LeaseID) -> Obj:
    return {
        "owner": str(lease_id.owner),
        "dseq": str(lease_id.dseq),
        "gseq": lease_id.gseq,
        "oseq": lease_id.oseq,
        "provider": str(lease_id.provider),
    }


def manifest_object(
    lease_id: LeaseID,
    group: Group,
    version: str,
    *,
    settings: BuildSettings,
    params: Mapping[str, SchedulerParams] | None = None,
) -> Obj:
    """The lease's Manifest resource: named after its namespace, in the manifest namespace.

    ``params`` (by service) are stored as Akash stores them, so the Go provider can run the
    lease's GPU services; without them they come from the group's own GPU attributes.
    """
    if params is None:
        params = scheduler_params(group, ())
    annotations = {MANIFEST_VERSION: version} if version else {}
    whole = sorted_json(group.go_dict()).decode()
    if len(whole) <= _ANNOTATION_MAX:
        annotations[MANIFEST_GROUP] = whole
    return {
        "apiVersion": API_VERSION,
        "kind": "Manifest",
        "metadata": metadata(
            namespace_of(lease_id),
            lease_labels(lease_id),
            settings.manifest_namespace,
            annotations,
        ),
        "spec": {"lease_id": _spec_lease_id(lease_id), "group": _spec_group(group, params)},
    }


# -- and back ----------------------------------------------------------------------------------
def _attributes_in(data: Mapping[str, Any]) -> list[Attribute] | None:
    found = [
        Attribute(key=str(a.get("key", "")), value=str(a.get("value", "")))
        for a in data.get("attributes") or ()
    ]
    return found or None


def _resources_in(data: Mapping[str, Any], exposes: list[ServiceExpose]) -> Resources:
    cpu, gpu, memory = (data.get(k) or {} for k in ("cpu", "gpu", "memory"))
    storage = [
        Storage(
            name=str(v.get("name", "")),
            size=rv(int(v.get("size") or 0)),
            attributes=_attributes_in(v),
        )
        for v in data.get("storage") or ()
    ]
    return Resources(
        id=int(data.get("id") or 0),
        cpu=CPU(units=rv(int(cpu.get("units") or 0)), attributes=_attributes_in(cpu)),
        memory=Memory(size=rv(int(memory.get("size") or 0)), attributes=_attributes_in(memory)),
        storage=storage or None,
        gpu=GPU(units=rv(int(gpu.get("units") or 0)), attributes=_attributes_in(gpu)),
        endpoints=[ep for expose in exposes for ep in expose.endpoints()],
    )


def _expose_in(data: Mapping[str, Any]) -> ServiceExpose:
    opts = data.get("http_options") or {}
    hosts = data.get("hosts")
    cases = opts.get("next_cases")
    return ServiceExpose(
        port=int(data.get("port") or 0),
        external_port=int(data.get("external_port") or 0),
        proto=str(data.get("proto") or TCP).upper(),
        service=str(data.get("service") or ""),
        global_=bool(data.get("global")),
        hosts=[str(h) for h in hosts] if hosts else None,
        http_options=HTTPOptions(
            max_body_size=int(opts.get("max_body_size") or 0),
            read_timeout=int(opts.get("read_timeout") or 0),
            send_timeout=int(opts.get("send_timeout") or 0),
            next_tries=int(opts.get("next_tries") or 0),
            next_timeout=int(opts.get("next_timeout") or 0),
            next_cases=[str(c) for c in cases] if cases else None,
        ),
        ip=str(data.get("ip") or ""),
        endpoint_sequence_number=int(data.get("endpoint_sequence_number") or 0),
    )


def _params_in(data: Mapping[str, Any] | None) -> ServiceParams | None:
    if data is None:
        return None
    storage = [
        StorageParams(
            name=str(p.get("name", "")),
            mount=str(p.get("mount", "")),
            read_only=bool(p.get("readOnly")),
        )
        for p in data.get("storage") or ()
    ]
    permissions = data.get("permissions")
    read = (permissions or {}).get("read")
    return ServiceParams(
        storage=storage or None,
        permissions=None
        if permissions is None
        else ServicePermissions(read=[str(r) for r in read] if read else None),
    )


def _strings(value: Any) -> list[str] | None:
    return [str(v) for v in value] if value else None


def _service_in(data: Mapping[str, Any]) -> Service:
    exposes = [_expose_in(e) for e in data.get("expose") or ()]
    creds = data.get("credentials")
    return Service(
        name=str(data.get("name") or ""),
        image=str(data.get("image") or ""),
        command=_strings(data.get("command")),
        args=_strings(data.get("args")),
        env=_strings(data.get("env")),
        resources=_resources_in(data.get("resources") or {}, exposes),
        count=int(data.get("count") or 0),
        expose=exposes,
        params=_params_in(data.get("params")),
        credentials=None
        if creds is None
        else ImageCredentials(
            host=str(creds.get("host", "")),
            email=str(creds.get("email", "")),
            username=str(creds.get("username", "")),
            password=str(creds.get("password", "")),
        ),
    )


def _without_scheduler(group: Mapping[str, Any]) -> Obj:
    services = [
        {k: v for k, v in s.items() if k != "scheduler_params"} for s in group.get("services") or ()
    ]
    return {**group, "services": services} if services else dict(group)


def _annotated_group(whole: Any, stored: Mapping[str, Any]) -> Group | None:
    """The group of our annotation, if there is one and the spec still says the same."""
    if not isinstance(whole, str) or not whole:
        return None
    try:
        group = Group.model_validate_json(whole)
    except ValidationError:
        return None
    same = _without_scheduler(_spec_group(group, {})) == _without_scheduler(stored)
    return group if same else None


def group_from_manifest_object(obj: Mapping[str, Any]) -> tuple[LeaseID, Group, str]:
    """Lease, group and manifest version of a Manifest resource, ours or the Go provider's.

    The version is ``""`` when the resource does not say (Akash's never does). Raises
    ``ValueError`` when the resource does not describe a lease.
    """
    spec = obj.get("spec") or {}
    ids = spec.get("lease_id") or {}
    lease_id = LeaseID(
        owner=str(ids.get("owner", "")),
        dseq=int(ids.get("dseq") or 0),
        gseq=int(ids.get("gseq") or 0),
        oseq=int(ids.get("oseq") or 0),
        provider=str(ids.get("provider", "")),
    )
    stored = spec.get("group") or {}
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    group = _annotated_group(annotations.get(MANIFEST_GROUP), stored)
    if group is not None:
        return lease_id, group, str(annotations.get(MANIFEST_VERSION, ""))
    services = [_service_in(s) for s in stored.get("services") or ()]
    return lease_id, Group(name=str(stored.get("name") or ""), services=services), ""


def scheduler_params_from_manifest_object(obj: Mapping[str, Any]) -> dict[str, SchedulerParams]:
    """The scheduler params a Manifest resource stores, by service name."""
    found: dict[str, SchedulerParams] = {}
    for service in ((obj.get("spec") or {}).get("group") or {}).get("services") or ():
        data = service.get("scheduler_params") or {}
        gpu = (data.get("resources") or {}).get("gpu") or {}
        found[str(service.get("name", ""))] = SchedulerParams(
            runtime_class=str(data.get("runtime_class") or ""),
            gpu_vendor=str(gpu.get("vendor") or ""),
            gpu_model=str(gpu.get("model") or ""),
            gpu_ram=str(gpu.get("memory_size") or ""),
            gpu_interface=str(gpu.get("interface") or ""),
        )
    return found
