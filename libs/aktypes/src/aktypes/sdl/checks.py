"""Checks across an SDL's sections: references, exposes, endpoints, storage, limits.

Every check reports to the :class:`~aktypes.sdl.yamlnodes.Reader` with the YAML path of
the offending value and keeps going, so a tenant sees all problems of a file at once.
"""

from __future__ import annotations

import posixpath

from yaml.nodes import Node

from aktypes import limits
from aktypes.manifest.models import MAX_BODY_SIZE, MAX_PROXY_BUFFER_SIZE, MAX_TIMEOUT, NEXT_CASES
from aktypes.manifest.validation import (
    IMAGE_RE,
    SERVICE_NAME_MAX,
    is_env_var_name,
    is_hostname,
    is_service_name,
)
from aktypes.sdl.model import ComputeIn, ExposeIn, SDLInput, ServiceIn
from aktypes.sdl.yamlnodes import TOP_LEVEL_KEYS, Reader, join

TEE_TYPES = ("cpu", "cpu-gpu")
READ_PERMISSIONS = ("deployment", "logs", "events")


def check_references(r: Reader, sdl: SDLInput) -> None:
    """Deployments name existing services, compute and placement profiles, and prices."""
    used_profiles: set[str] = set()
    used_placements: set[str] = set()
    for svc_name, placements in sorted(sdl.deployment.items()):
        if svc_name not in sdl.services:
            r.error(join("deployment", svc_name), f"no service named {svc_name!r} in services")
        if not placements:
            r.error(join("deployment", svc_name), "deploys the service to no placement")
        for placement_name, entry in sorted(placements.items()):
            used_placements.add(placement_name)
            if entry.profile not in sdl.compute:
                r.error(
                    join(entry.path, "profile"),
                    f"no compute profile named {entry.profile!r} in profiles.compute",
                    entry.node,
                )
            else:
                used_profiles.add(entry.profile)
            placement = sdl.placement.get(placement_name)
            if placement is None:
                r.error(
                    entry.path,
                    f"no placement profile named {placement_name!r} in profiles.placement",
                    entry.node,
                )
            elif entry.profile and entry.profile not in placement.pricing:
                r.error(
                    join(placement.path, "pricing"),
                    f"no price for compute profile {entry.profile!r} (used by {svc_name!r})",
                    placement.node,
                )
            if not limits.UNIT_MIN_COUNT <= entry.count <= limits.UNIT_MAX_COUNT:
                r.error(
                    join(entry.path, "count"),
                    f"count {entry.count} must be in "
                    f"{limits.UNIT_MIN_COUNT}..{limits.UNIT_MAX_COUNT}",
                    entry.node,
                )
    for name, svc in sdl.services.items():
        if name in TOP_LEVEL_KEYS:
            r.warn(
                svc.path,
                f"a service named {name!r}: {name} belongs at the top level "
                "(check the indentation)",
                svc.node,
            )
        elif name not in sdl.deployment:
            r.warn(svc.path, f"service {name!r} is not deployed (no entry in deployment)", svc.node)
    for name, compute in sdl.compute.items():
        if name not in used_profiles:
            r.warn(compute.path, f"compute profile {name!r} is not used", compute.node)
    for name, placement in sdl.placement.items():
        if name not in used_placements:
            r.warn(placement.path, f"placement profile {name!r} is not used", placement.node)


def _check_expose(
    r: Reader, expose: ExposeIn, services: dict[str, ServiceIn], hosts: dict[str, str]
) -> None:
    if not 0 < expose.port <= 65535 and not r.has_error_at(join(expose.path, "port")):
        r.error(join(expose.path, "port"), f"port {expose.port} must be in 1..65535", expose.node)
    if expose.as_ > 65535:
        r.error(join(expose.path, "as"), f"port {expose.as_} must be in 1..65535", expose.node)
    if expose.proto.upper() not in ("", "TCP", "UDP"):
        r.error(
            join(expose.path, "proto"),
            f"unsupported protocol {expose.proto!r} (tcp or udp)",
            expose.node,
        )
    for i, host in enumerate(expose.accept or ()):
        here = join(join(expose.path, "accept"), i)
        if not is_hostname(host):
            r.error(here, f"{host!r} is not a valid hostname (lower-case DNS name)", expose.node)
        elif host in hosts:
            r.error(here, f"hostname {host!r} is already accepted by {hosts[host]}", expose.node)
        else:
            hosts[host] = expose.path
    for to in expose.to:
        if to.service and to.service not in services:
            r.warn(join(to.path, "service"), f"no service named {to.service!r}", to.node)
    opts = expose.http_options
    if opts is None:
        return
    for name, value, maximum in (
        ("max_body_size", opts.max_body_size, MAX_BODY_SIZE),
        ("proxy_buffer_size", opts.proxy_buffer_size, MAX_PROXY_BUFFER_SIZE),
        ("read_timeout", opts.read_timeout, MAX_TIMEOUT),
        ("send_timeout", opts.send_timeout, MAX_TIMEOUT),
    ):
        if value > maximum:
            r.error(join(opts.path, name), f"{value} exceeds the maximum {maximum}", opts.node)
    cases = opts.next_cases or []
    for i, case in enumerate(cases):
        if case not in NEXT_CASES:
            r.error(
                join(join(opts.path, "next_cases"), i),
                f"unknown next case {case!r} (allowed: {', '.join(NEXT_CASES)})",
                opts.node,
            )
    if "off" in cases and len(cases) != 1:
        r.error(
            join(opts.path, "next_cases"), "'off' cannot be combined with other cases", opts.node
        )


def _check_service(r: Reader, name: str, svc: ServiceIn) -> None:
    if not is_service_name(name):
        r.error(
            svc.path,
            f"service name {name!r} is invalid (lower-case letters, digits and '-', "
            f"at most {SERVICE_NAME_MAX} characters)",
            svc.node,
        )
    if not svc.image:
        r.error(join(svc.path, "image"), "image is required", svc.node)
    elif not IMAGE_RE.fullmatch(svc.image):
        r.error(join(svc.path, "image"), "image has blanks or control characters", svc.node)
    for i, env in enumerate(svc.env or ()):
        var = env.split("=", 1)[0]
        if not is_env_var_name(var):
            r.error(
                join(join(svc.path, "env"), i),
                f"invalid environment variable name {var!r}",
                svc.node,
            )
    creds = svc.credentials
    if creds is not None:
        for field in ("host", "username", "password"):
            if not getattr(creds, field).strip():
                r.error(join(creds.path, field), f"credentials need a {field}", creds.node)
    params = svc.params
    if params is None:
        return
    if params.tee and params.tee not in TEE_TYPES:
        r.error(
            join(params.path, "tee"),
            f"unsupported tee type {params.tee!r} (cpu or cpu-gpu)",
            params.node,
        )
    for i, perm in enumerate(params.permissions or ()):
        if perm not in READ_PERMISSIONS:
            r.warn(
                join(join(join(params.path, "permissions"), "read"), i),
                f"unknown read permission {perm!r} (known: {', '.join(READ_PERMISSIONS)})",
                params.node,
            )
    mounts: dict[str, str] = {}
    for vol_name, param in sorted(params.storage.items()):
        if not posixpath.isabs(param.mount):
            r.error(
                join(param.path, "mount"),
                f"mount {param.mount!r} must be an absolute path",
                param.node,
            )
        elif param.mount in mounts:
            r.error(
                join(param.path, "mount"),
                f"mount {param.mount!r} is already used by volume {mounts[param.mount]!r}",
                param.node,
            )
        else:
            mounts[param.mount] = vol_name


def _check_volumes(r: Reader, version: str, name: str, svc: ServiceIn, compute: ComputeIn) -> None:
    """The service's storage params against the volumes of one compute profile."""
    volumes = {v.name: v for v in compute.storage or ()}
    params = svc.params.storage if svc.params else {}
    for vol_name, param in sorted(params.items()):
        volume = volumes.get(vol_name)
        if volume is None:
            r.error(
                param.path,
                f"no volume named {vol_name!r} in profiles.compute storage ({compute.path})",
                param.node,
            )
        elif volume.attribute("class") == "ram" and param.read_only:
            message = "a 'ram' volume cannot be read-only"
            if version == "2.0":
                r.warn(join(param.path, "readOnly"), message, param.node)
            else:
                r.error(join(param.path, "readOnly"), message, param.node)
    for volume in volumes.values():
        if volume.attribute("persistent") == "true" and volume.name not in params:
            r.error(
                volume.path,
                f"persistent volume {volume.name!r} needs a mount in "
                f"services.{name}.params.storage",
                volume.node,
            )


def _check_ip_endpoints(
    r: Reader,
    sdl: SDLInput,
    svc_name: str,
    svc: ServiceIn,
    *,
    used: set[str],
    ports: dict[str, str],
) -> None:
    for expose in svc.expose:
        for to in expose.to:
            if not to.ip:
                continue
            if not to.global_:
                r.error(join(to.path, "ip"), "an IP endpoint needs 'global: true'", to.node)
            if to.ip not in sdl.endpoints:
                r.error(join(to.path, "ip"), f"no endpoint named {to.ip!r} in endpoints", to.node)
                continue
            used.add(to.ip)
            key = f"{to.ip}-{expose.as_}-{expose.proto}"
            if key in ports:
                r.error(
                    join(to.path, "ip"),
                    f"IP endpoint {to.ip!r} port {expose.as_} ({expose.proto or 'tcp'}) "
                    f"is already used by {ports[key]!r}",
                    to.node,
                )
            ports[key] = svc_name


def check_services(r: Reader, sdl: SDLInput) -> None:
    """Deployed services: names, images, env, exposes, IP endpoints, storage mounts, TEE."""
    hosts: dict[str, str] = {}
    endpoints_used: set[str] = set()
    ip_ports: dict[str, str] = {}
    any_global = False
    for svc_name, placements in sorted(sdl.deployment.items()):
        svc = sdl.services.get(svc_name)
        if svc is None:
            continue
        _check_service(r, svc_name, svc)
        for profile in sorted({entry.profile for entry in placements.values()}):
            if profile in sdl.compute:
                _check_volumes(r, sdl.version, svc_name, svc, sdl.compute[profile])
        for expose in svc.expose:
            _check_expose(r, expose, sdl.services, hosts)
            any_global = any_global or any(to.global_ for to in expose.to)
        for _placement in sorted(placements):  # Akash checks IP ports once per placement
            _check_ip_endpoints(r, sdl, svc_name, svc, used=endpoints_used, ports=ip_ports)
    for name, endpoint in sdl.endpoints.items():
        if name not in endpoints_used:
            r.error(endpoint.path, f"endpoint {name!r} is declared but never used", endpoint.node)
    if sdl.deployment and not any_global:
        r.error("services", "no service is exposed globally (at least one 'to: - global: true')")


def _missing(r: Reader, path: str, message: str, node: Node | None) -> None:
    """Report a missing value unless a bad value at ``path`` was reported already."""
    if not r.has_error_at(path):
        r.error(path, message, node)


def _within(r: Reader, path: str, value: int, *, low: int, high: int, shown: str) -> None:
    if not low <= value <= high:
        r.error(path, f"{value} {shown}")


def check_compute(r: Reader, sdl: SDLInput) -> None:
    """Per-replica limits of every compute profile a deployment uses."""
    used = {e.profile for placements in sdl.deployment.values() for e in placements.values()}
    for name in sorted(used & set(sdl.compute)):
        compute = sdl.compute[name]
        res = join(compute.path, "resources")
        if compute.cpu is None:
            _missing(r, f"{res}.cpu", "cpu is required", compute.node)
        else:
            low, high = limits.UNIT_MIN_CPU, limits.UNIT_MAX_CPU
            shown = f"millicpu is outside {low}..{high}"
            _within(r, f"{res}.cpu.units", compute.cpu, low=low, high=high, shown=shown)
        if compute.memory is None:
            _missing(r, f"{res}.memory", "memory size is required", compute.node)
        else:
            low, high = limits.UNIT_MIN_MEMORY, limits.UNIT_MAX_MEMORY
            shown = "bytes is outside 1Mi..2Ti"
            _within(r, f"{res}.memory.size", compute.memory, low=low, high=high, shown=shown)
        if not compute.storage:
            _missing(r, f"{res}.storage", "storage is required (at least one volume)", compute.node)
        elif len(compute.storage) > limits.UNIT_MAX_VOLUMES:
            count = len(compute.storage)
            r.error(f"{res}.storage", f"{count} volumes, at most {limits.UNIT_MAX_VOLUMES} allowed")
        for volume in compute.storage or ():
            low, high = limits.UNIT_MIN_STORAGE, limits.UNIT_MAX_STORAGE
            shown = "bytes is outside 5Mi..32Ti"
            _within(r, f"{volume.path}.size", volume.size, low=low, high=high, shown=shown)
        if compute.gpu is not None:
            high = limits.UNIT_MAX_GPU
            shown = f"GPUs, at most {high} allowed"
            _within(r, f"{res}.gpu.units", compute.gpu, low=0, high=high, shown=shown)


def check_prices(r: Reader, sdl: SDLInput) -> None:
    """Used unit prices within the chain's bound, one denomination per deployment."""
    denoms: dict[str, str] = {}
    for placements in sdl.deployment.values():
        for placement_name, entry in placements.items():
            placement = sdl.placement.get(placement_name)
            coin = placement.pricing.get(entry.profile) if placement else None
            if placement is None or coin is None:
                continue
            here = join(join(placement.path, "pricing"), entry.profile)
            if coin.amount > limits.UNIT_MAX_PRICE:
                r.error(
                    join(here, "amount"),
                    f"{coin.amount.normalized()} exceeds the maximum unit price "
                    f"{limits.UNIT_MAX_PRICE}",
                    placement.node,
                )
            denoms.setdefault(coin.denom, here)
    if len(denoms) > 1:
        listed = ", ".join(f"{d} ({p})" for d, p in sorted(denoms.items()))
        r.error("profiles.placement", f"every price must use the same denomination, found {listed}")
