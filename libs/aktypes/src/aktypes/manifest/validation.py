"""Manifest checks: Akash's ``Manifest.Validate`` and ``CheckAgainstGSpecs``.

:func:`manifest_problems` lists every structural problem (names, images, environment
variable names, ports, protocols, hostnames, ordering, at least one global expose) and, stricter
than Akash, every value Kubernetes or the ingress controller would refuse or interpret: service
names that cannot name a Kubernetes Service (``<name>-np`` included), images with blanks,
replica counts above the chain's, external ports outside 1..65535, proxy options beyond the
SDL's bounds, ``next_cases`` outside Akash's set, leased-IP endpoint names outside the SDL's
form, volume names and mount paths Kubernetes refuses.
:func:`cross_validation_problems` checks a manifest against the deployment's groups on chain:
every service maps to a resource unit with the same resources, no unit or endpoint is
over-used, and every replica and endpoint the tenant pays for is used exactly.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from aktypes import limits
from aktypes.errors import ManifestCrossValidationError, ManifestError
from aktypes.groupspec import GroupSpec
from aktypes.manifest.models import (
    MAX_BODY_SIZE,
    MAX_PROXY_BUFFER_SIZE,
    MAX_TIMEOUT,
    NEXT_CASES,
    NGINX_NEXT_CASES,
    TCP,
    UDP,
    Group,
    HTTPOptions,
    Manifest,
    Service,
    ServiceExpose,
)
from aktypes.resources import EndpointKind

SERVICE_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
SERVICE_NAME_MAX = 60  # "<name>-np" names a Kubernetes Service: a DNS-1123 label (63)
DNS1123_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
ENDPOINT_NAME_RE = re.compile(r"^[a-z]+[-_0-9a-z]+$")  # Akash's SDL endpoint names
IMAGE_RE = re.compile(r"^[^\s\x00-\x1f\x7f]{1,4096}$")
MANIFEST_NEXT_CASES = frozenset(NEXT_CASES + NGINX_NEXT_CASES)
ENV_NAME_RE = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
DNS1123_SUBDOMAIN_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
HOSTNAME_MAX = 253


def is_env_var_name(name: str) -> bool:
    """Kubernetes ``IsEnvVarName``."""
    return (
        bool(ENV_NAME_RE.fullmatch(name)) and name not in (".", "..") and not name.startswith("..")
    )


def is_service_name(name: str) -> bool:
    """A lower-case DNS label short enough for every Kubernetes object named after it."""
    return len(name) <= SERVICE_NAME_MAX and bool(SERVICE_NAME_RE.fullmatch(name))


def next_case_problems(cases: Sequence[str]) -> list[str]:
    """Akash's rule for ``next_cases`` (its set, ``off`` alone); nginx's spellings allowed."""
    found = [
        f"unknown next case {case!r} (allowed: {', '.join(NEXT_CASES)})"
        for case in cases
        if case not in MANIFEST_NEXT_CASES
    ]
    if "off" in cases and len(cases) != 1:
        found.append("next case 'off' cannot be combined with other cases")
    return found


def is_hostname(host: str) -> bool:
    """A DNS-1123 subdomain and not an IP address, as Kubernetes requires of Ingress hosts."""
    if len(host) > HOSTNAME_MAX or not DNS1123_SUBDOMAIN_RE.fullmatch(host):
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return True
    return False


def _resources_problems(service: Service, where: str) -> list[str]:
    res = service.resources
    missing = [
        name
        for name, part in (
            ("CPU", res.cpu),
            ("GPU", res.gpu),
            ("memory", res.memory),
            ("storage", res.storage),
            ("endpoints", res.endpoints),
        )
        if part is None
    ]
    found = [f"{where}: resources ID must be > 0"] if res.id == 0 else []
    found.extend(f"{where}: {name} must not be null" for name in missing)
    return found


def _service_problems(service: Service, where: str, hosts: Counter[str]) -> list[str]:
    found: list[str] = []
    if not service.name:
        found.append(f"{where}: service name is empty")
    elif not is_service_name(service.name):
        found.append(
            f"{where}: service name {service.name[:80]!r} is invalid (lower-case letters, "
            f"digits and '-', starting with a letter, at most {SERVICE_NAME_MAX} characters)"
        )
    if not service.image:
        found.append(f"{where}: image is empty")
    elif not IMAGE_RE.fullmatch(service.image):
        found.append(f"{where}: image {service.image[:80]!r} has blanks or control characters")
    if service.count > limits.UNIT_MAX_COUNT:
        found.append(f"{where}: count {service.count} is above {limits.UNIT_MAX_COUNT}")
    found.extend(_storage_problems(service, where))
    found.extend(_resources_problems(service, where))
    for env in service.env or ():
        name = env.split("=", 1)[0]
        if not is_env_var_name(name):
            found.append(f"{where}: invalid environment variable name {name!r}")
    exposes = service.expose or []
    if [e.sort_key() for e in exposes] != sorted(e.sort_key() for e in exposes):
        found.append(f"{where}: expose is not sorted")
    for index, expose in enumerate(exposes):
        here = f"{where}.expose[{index}]"
        found.extend(_expose_problems(expose, here))
        for host in expose.hosts or ():
            if not is_hostname(host):
                found.append(f"{here}: invalid hostname {host[:300]!r}")
            elif hosts[host]:
                found.append(f"{here}: hostname {host!r} is duplicated")
            hosts[host] += 1
    return found


def _expose_problems(expose: ServiceExpose, here: str) -> list[str]:
    found: list[str] = []
    if not 0 < expose.port <= 65535:
        found.append(f"{here}: port {expose.port} must be in 1..65535")
    if expose.external_port > 65535:
        found.append(f"{here}: external port {expose.external_port} must be in 1..65535")
    if expose.proto not in (TCP, UDP):
        found.append(f"{here}: protocol {expose.proto[:20]!r} unknown (TCP or UDP)")
    if expose.ip and not ENDPOINT_NAME_RE.fullmatch(expose.ip):
        found.append(f"{here}: IP endpoint name {expose.ip[:80]!r} is invalid")
    found.extend(f"{here}.httpOptions: {p}" for p in _http_problems(expose.http_options))
    return found


def _http_problems(opts: HTTPOptions) -> list[str]:
    found = [
        f"{name} {value} is above the maximum {maximum}"
        for name, value, maximum in (
            ("maxBodySize", opts.max_body_size, MAX_BODY_SIZE),
            ("proxyBufferSize", opts.proxy_buffer_size, MAX_PROXY_BUFFER_SIZE),
            ("readTimeout", opts.read_timeout, MAX_TIMEOUT),
            ("sendTimeout", opts.send_timeout, MAX_TIMEOUT),
        )
        if value > maximum
    ]
    found.extend(next_case_problems([case[:40] for case in opts.next_cases or ()]))
    return found


def _storage_problems(service: Service, where: str) -> list[str]:
    """Mounted volumes become Kubernetes volumes named ``<service>-<volume>``."""
    found: list[str] = []
    for param in (service.params.storage or ()) if service.params else ():
        volume = f"{service.name}-{param.name}"
        if not DNS1123_LABEL_RE.fullmatch(volume):
            found.append(
                f"{where}: volume {param.name[:80]!r} cannot name a Kubernetes volume "
                f"({volume[:80]!r} is not a DNS-1123 label)"
            )
        mount = param.mount
        if (
            not mount.startswith("/")
            or ".." in mount.split("/")
            or not IMAGE_RE.fullmatch(mount.replace(" ", "_"))
        ):
            found.append(
                f"{where}: mount {mount[:80]!r} of volume {param.name[:80]!r} must be an "
                "absolute path without '..' or control characters"
            )
    return found


def manifest_problems(manifest: Manifest) -> list[str]:
    """Every problem Akash's ``Manifest.Validate`` would find (it stops at the first)."""
    if not manifest.root:
        return ["manifest is empty"]
    found: list[str] = []
    hosts: Counter[str] = Counter()
    names: Counter[str] = Counter()
    for gindex, group in enumerate(manifest.root):
        where = f"group {group.name!r}"
        services = group.services or []
        if not services:
            found.append(f"{where}: contains no services")
        if [s.name for s in services] != sorted(s.name for s in services):
            found.append(f"{where}: services are not sorted by name")
        duplicates = sorted(n for n, c in Counter(s.name for s in services).items() if c > 1)
        found.extend(f"{where}: service name {name!r} is duplicated" for name in duplicates)
        for sindex, service in enumerate(services):
            found.extend(_service_problems(service, f"[{gindex}].services[{sindex}]", hosts))
        if names[group.name]:
            found.append(f"duplicate group {group.name!r}")
        names[group.name] += 1
    if not any(e.global_ for g in manifest.root for s in g.services or () for e in s.expose or ()):
        found.append("zero global services")
    return found


def validate_manifest(manifest: Manifest) -> None:
    """Raise ``ManifestError`` listing every problem of ``manifest``."""
    if found := manifest_problems(manifest):
        raise ManifestError(found)


@dataclass
class _Budget:
    """What is left of one resource unit while services consume it."""

    count: int
    http: int
    port: int
    ip: int


def _group_problems(group: Group, spec: GroupSpec) -> list[str]:
    units = {unit.resource.id: unit for unit in spec.resources}
    budgets = {
        uid: _Budget(
            count=unit.count,
            http=unit.resource.endpoint_count(EndpointKind.SHARED_HTTP),
            port=unit.resource.endpoint_count(EndpointKind.RANDOM_PORT),
            ip=unit.resource.endpoint_count(EndpointKind.LEASED_IP),
        )
        for uid, unit in units.items()
    }
    where = f"group {group.name!r}"
    found: list[str] = []
    for service in group.services or ():
        rid = service.resources.id
        unit = units.get(rid)
        if unit is None:
            found.append(f"{where}: service {service.name!r}: no resource unit with ID {rid}")
            continue
        budget = budgets[rid]
        if service.count > budget.count:
            found.append(
                f"{where}: service {service.name!r}: over-utilized replicas ({service.count}) > "
                f"group spec resources count ({budget.count})"
            )
        found.extend(
            f"{where}: service {service.name!r}: {part} resources mismatch for ID {rid}"
            for part in service.resources.compute_mismatches(unit.resource)
        )
        for expose in service.expose or ():
            if not expose.global_:
                continue
            kind = "http" if expose.is_ingress else "port"
            for needed in (kind, "ip") if expose.ip else (kind,):
                left = getattr(budget, needed)
                if left == 0:
                    label = {"http": "HTTP", "port": "PORT", "ip": "IP"}[needed]
                    found.append(
                        f"{where}: service {service.name!r}: resource ID {rid}: "
                        f"over-utilized {label} endpoints"
                    )
                else:
                    setattr(budget, needed, left - 1)
        budget.count = max(budget.count - service.count, 0)
    for uid, budget in budgets.items():
        for label, left in (("HTTP", budget.http), ("PORT", budget.port), ("IP", budget.ip)):
            if left:
                found.append(
                    f"{where}: resources ID ({uid}): under-utilized ({left}) {label} endpoints"
                )
        if budget.count:
            found.append(
                f"{where}: resources ID ({uid}): under-utilized ({budget.count}) resources"
            )
    return found


def cross_validation_problems(manifest: Manifest, groups: Sequence[GroupSpec]) -> list[str]:
    """Every mismatch between ``manifest`` and the deployment's ``groups``."""
    found = manifest_problems(manifest)
    if found:
        return found
    if len(manifest.root) != len(groups):
        return [f"group count mismatch ({len(manifest.root)} != {len(groups)})"]
    by_name = {spec.name: spec for spec in groups}
    for group in manifest.root:
        spec = by_name.get(group.name)
        if spec is None:
            found.append(f"unknown deployment group {group.name!r}")
        else:
            found.extend(_group_problems(group, spec))
    return found


def check_against_groups(manifest: Manifest, groups: Sequence[GroupSpec]) -> None:
    """Raise ``ManifestCrossValidationError`` unless ``manifest`` matches ``groups`` exactly."""
    found = manifest_problems(manifest)
    if found:
        raise ManifestError(found)
    if found := cross_validation_problems(manifest, groups):
        raise ManifestCrossValidationError(found)
