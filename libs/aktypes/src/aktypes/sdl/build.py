"""Turn a checked SDL into deployment groups (for the chain) and a manifest (for providers).

This follows Akash's group builders exactly, because the manifest's hash must match what
Akash's own tools compute for the same file:

- one group per placement name, services in name order, groups in name order;
- v2.0: one resource unit per (service, placement), IDs 1..n in build order;
- v2.1: services of a placement that use the same compute profile share one unit (counts
  summed, endpoints merged), and credentials are trimmed and keep ``email``;
- endpoint sequence numbers come from sorting every non-"plain global" ``to`` target's IP
  name (empty names included, as Akash does) and numbering them from 1;
- a TEE service adds the requirement ``tee/type=<type>`` to its group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aktypes import limits
from aktypes.attributes import Attribute, PlacementRequirements, SignedBy
from aktypes.coin import DecCoin
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.manifest.models import (
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_NEXT_CASES,
    DEFAULT_NEXT_TRIES,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_SEND_TIMEOUT,
    TCP,
    UDP,
    Group,
    HTTPOptions,
    ImageCredentials,
    Manifest,
    Service,
    ServiceExpose,
    ServiceParams,
    ServicePermissions,
    StorageParams,
    TEEParams,
)
from aktypes.resources import CPU, GPU, Endpoint, Memory, Resources, Storage, rv
from aktypes.sdl.model import ComputeIn, ExposeIn, ExposeToIn, HTTPOptionsIn, SDLInput, ServiceIn
from aktypes.sdl.yamlnodes import Reader, join


def _attrs(pairs: list[tuple[str, str]] | None) -> list[Attribute] | None:
    return None if pairs is None else [Attribute(key=k, value=v) for k, v in pairs]


def endpoint_sequence_numbers(sdl: SDLInput) -> dict[str, int]:
    """Akash's numbering of IP endpoints (including its quirk with non-global targets)."""
    names = sorted(
        to.ip
        for svc_name in sorted(sdl.deployment)
        if svc_name in sdl.services
        for expose in sdl.services[svc_name].expose
        for to in expose.to
        if not (to.global_ and not to.ip)
    )
    return {name: index for index, name in enumerate(names, start=1)}


def _http_options(opts: HTTPOptionsIn | None) -> HTTPOptions:
    opts = opts or HTTPOptionsIn("")
    return HTTPOptions(
        max_body_size=opts.max_body_size or DEFAULT_MAX_BODY_SIZE,
        read_timeout=opts.read_timeout or DEFAULT_READ_TIMEOUT,
        send_timeout=opts.send_timeout or DEFAULT_SEND_TIMEOUT,
        next_tries=opts.next_tries or DEFAULT_NEXT_TRIES,
        next_timeout=opts.next_timeout,
        next_cases=list(opts.next_cases or DEFAULT_NEXT_CASES),
        proxy_buffer_size=opts.proxy_buffer_size,
    )


def _stable_sorted(items: list[ServiceExpose]) -> list[ServiceExpose]:
    return sorted(items, key=ServiceExpose.sort_key)


def manifest_exposes(exposes: list[ExposeIn], sequence: dict[str, int]) -> list[ServiceExpose]:
    """An SDL service's exposes as manifest exposes, sorted as Akash sorts them."""
    result: list[ServiceExpose] = []
    for expose in exposes:
        proto = UDP if expose.proto.upper() == UDP else TCP
        hosts = list(expose.accept) if expose.accept is not None else None
        options = _http_options(expose.http_options)
        targets = expose.to or [ExposeToIn(expose.path)]  # no target: one local expose
        result.extend(
            ServiceExpose(
                port=expose.port,
                external_port=expose.as_,
                proto=proto,
                service=to.service,
                global_=to.global_,
                hosts=hosts,
                http_options=options,
                ip=to.ip,
                endpoint_sequence_number=sequence.get(to.ip, 0) if to.global_ and to.ip else 0,
            )
            for to in targets
        )
    return _stable_sorted(result)


def _resources(compute: ComputeIn, endpoints: list[Endpoint]) -> Resources:
    storage = [
        Storage(name=v.name, size=rv(v.size), attributes=_attrs(v.attributes))
        for v in compute.storage or ()
    ]
    return Resources(
        id=0,
        cpu=CPU(units=rv(compute.cpu or 0), attributes=_attrs(compute.cpu_attributes))
        if compute.cpu is not None
        else None,
        memory=Memory(size=rv(compute.memory or 0)) if compute.memory is not None else None,
        storage=storage or None,
        gpu=GPU(units=rv(compute.gpu or 0), attributes=_attrs(compute.gpu_attributes)),
        endpoints=endpoints,
    )


def _credentials(svc: ServiceIn, version: str) -> ImageCredentials | None:
    creds = svc.credentials
    if creds is None:
        return None
    if version == "2.0":
        return ImageCredentials(host=creds.host, username=creds.username, password=creds.password)
    return ImageCredentials(
        host=creds.host.strip(),
        email=creds.email.strip(),
        username=creds.username.strip(),
        password=creds.password.strip(),
    )


def _params(svc: ServiceIn) -> ServiceParams | None:
    params = svc.params
    if params is None:
        return None
    storage = [
        StorageParams(name=name, mount=p.mount, read_only=p.read_only)
        for name, p in sorted(params.storage.items())
    ]
    return ServiceParams(
        storage=storage or None,
        permissions=ServicePermissions(read=params.permissions) if params.has_permissions else None,
        tee=TEEParams(type=params.tee, attestation=True) if params.tee else None,
    )


@dataclass
class _Unit:
    resources: Resources
    count: int
    price: DecCoin
    paths: list[str]


@dataclass
class _GroupBuilder:
    name: str
    attributes: list[tuple[str, str]]
    signed_by: SignedBy
    units: list[_Unit] = field(default_factory=list)
    bound: dict[str, int] = field(default_factory=dict)
    services: list[Service] = field(default_factory=list)
    tee: str = ""


def build(r: Reader, sdl: SDLInput) -> tuple[list[GroupSpec], Manifest]:
    """Build groups and manifest from a checked SDL; report TEE and group-size problems."""
    sequence = endpoint_sequence_numbers(sdl)
    groups: dict[str, _GroupBuilder] = {}
    for svc_name in sorted(sdl.deployment):
        svc = sdl.services[svc_name]
        for placement_name, entry in sorted(sdl.deployment[svc_name].items()):
            compute = sdl.compute[entry.profile]
            placement = sdl.placement[placement_name]
            price = placement.pricing[entry.profile]
            group = groups.get(placement_name)
            if group is None:
                group = groups[placement_name] = _GroupBuilder(
                    name=placement_name,
                    attributes=list(placement.attributes or ()),
                    signed_by=SignedBy(all_of=placement.all_of, any_of=placement.any_of),
                )
            tee = svc.params.tee if svc.params else ""
            if tee:
                if tee == "cpu-gpu" and not compute.gpu:
                    r.error(
                        join(join(svc.path, "params"), "tee"),
                        "tee type 'cpu-gpu' needs GPU resources",
                        svc.node,
                    )
                if group.tee and group.tee != tee:
                    r.error(
                        join(join(svc.path, "params"), "tee"),
                        f"placement {placement_name!r} mixes tee types {group.tee!r} and {tee!r}",
                        svc.node,
                    )
                elif not group.tee:
                    group.tee = tee
                    group.attributes = sorted([*group.attributes, ("tee/type", tee)])
            exposes = manifest_exposes(svc.expose, sequence)
            endpoints = [ep for expose in exposes for ep in expose.endpoints()]
            resources = _resources(compute, endpoints)
            location = group.bound.get(entry.profile) if sdl.version == "2.1" else None
            if location is None:
                unit_id = len(group.units) + 1
                unit_resources = resources.model_copy(update={"id": unit_id})
                group.units.append(_Unit(unit_resources, entry.count, price, [entry.path]))
                group.bound[entry.profile] = len(group.units) - 1
            else:
                unit = group.units[location]
                unit_id = unit.resources.id
                merged = sorted(
                    [*(unit.resources.endpoints or ()), *endpoints],
                    key=lambda ep: ep.sequence_number,
                )
                unit.resources = unit.resources.model_copy(update={"endpoints": merged})
                unit.count += entry.count
                unit.paths.append(entry.path)
            group.services.append(
                Service(
                    name=svc_name,
                    image=svc.image,
                    command=svc.command,
                    args=svc.args,
                    env=svc.env,
                    resources=resources.model_copy(update={"id": unit_id}),
                    count=entry.count,
                    expose=exposes,
                    params=_params(svc),
                    credentials=_credentials(svc, sdl.version),
                )
            )
    specs: list[GroupSpec] = []
    manifest_groups: list[Group] = []
    for name in sorted(groups):
        group = groups[name]
        _check_group_size(r, sdl, group)
        specs.append(
            GroupSpec(
                name=name,
                requirements=PlacementRequirements(
                    signed_by=group.signed_by, attributes=_attrs(group.attributes or None)
                ),
                resources=[
                    ResourceUnit(resource=u.resources, count=u.count, price=u.price)
                    for u in group.units
                ],
            )
        )
        manifest_groups.append(
            Group(name=name, services=sorted(group.services, key=lambda s: s.name))
        )
    return specs, Manifest(manifest_groups)


def _check_group_size(r: Reader, sdl: SDLInput, group: _GroupBuilder) -> None:
    where = join("profiles.placement", group.name)
    if len(group.units) > limits.GROUP_MAX_UNITS:
        r.error(
            where,
            f"group {group.name!r} has {len(group.units)} resource units, at most "
            f"{limits.GROUP_MAX_UNITS} allowed",
            sdl.placement[group.name].node,
        )
    for unit in group.units:
        if len(unit.paths) > 1 and unit.count > limits.UNIT_MAX_COUNT:
            r.error(
                join(unit.paths[-1], "count"),
                f"services sharing one resource unit ({', '.join(unit.paths)}) add up to "
                f"{unit.count} replicas, at most {limits.UNIT_MAX_COUNT} allowed",
            )
