"""What the hostname operator makes of a ``ProviderHost``: the Ingress (or Gateway API
HTTPRoute) that routes one tenant hostname to one service port of one lease.

As Akash's operator (``operator/hostname``): the object is named after the hostname and
lives in the lease's namespace, class ``akash-ingress-class``, one rule ``/`` (Prefix) to
``<service>:<external port>``, with the expose's proxy settings as ingress-nginx
annotations, read from the lease's ``Manifest`` resource (a generated hostname, which no
expose lists, takes the service's global expose on its port, as Akash finds every one).
Fixes: hostnames are compared lowercased, an invalid hostname is refused with a reason
instead of a failed write, and ``proxy_buffer_size`` reaches nginx: Akash's Manifest spec
has no place for it, so it is read from the whole group the cluster service keeps in the
annotation ``akash.network/manifest-group``, while that expose's other proxy settings there
are still the spec's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from aktypes.ids import LeaseID
from aktypes.manifest import Group, HTTPOptions, ServiceExpose
from aktypes.manifest.nginx import ingress_annotations
from aktypes.namespace import lease_namespace

Obj = dict[str, Any]

MANIFEST_GROUP = "akash.network/manifest-group"  # the cluster service's whole group
MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "akash-hostname-operator"
HOST_LABEL = "akash.network/hostname"
LEASE_LABELS = (
    "akash.network",
    "akash.network/namespace",
    "akash.network/lease.id.owner",
    "akash.network/lease.id.dseq",
    "akash.network/lease.id.gseq",
    "akash.network/lease.id.oseq",
    "akash.network/lease.id.provider",
)
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class InvalidHost(ValueError):
    """A ProviderHost that names no usable hostname or lease; the message says why."""


@dataclass(frozen=True)
class Route:
    """One hostname to one service port of one lease."""

    hostname: str
    lease_id: LeaseID
    service: str
    port: int

    @property
    def namespace(self) -> str:
        return lease_namespace(self.lease_id)


def hostname_problem(host: str) -> str:
    """Why ``host`` cannot be a hostname an Ingress routes ('' when it can)."""
    if not host:
        return "the hostname is empty"
    if len(host) > 253:
        return f"{host!r} is longer than 253 characters"
    labels = host.split(".")
    if len(labels) < 2:
        return f"{host!r} is not a fully qualified domain name"
    bad = next((label for label in labels if not _LABEL.fullmatch(label)), None)
    if bad is not None:
        return (
            f"{host!r} is not a valid hostname: {bad!r} must be 1-63 lowercase letters, "
            "digits or '-', starting and ending with a letter or digit"
        )
    return ""


def route_of(spec: Mapping[str, Any], name: str) -> Route:
    """The route a ProviderHost's ``spec`` asks for; InvalidHost when it cannot be one."""
    host = str(spec.get("hostname") or name).lower()
    problem = hostname_problem(host)
    if problem:
        raise InvalidHost(problem)
    try:
        lease_id = LeaseID(
            owner=spec["owner"],
            dseq=int(spec["dseq"]),
            gseq=int(spec["gseq"]),
            oseq=int(spec["oseq"]),
            provider=spec["provider"],
        )
        port = int(spec.get("external_port") or 80)
        service = str(spec["service_name"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidHost(f"the spec does not name a lease and service: {exc}") from None
    if not service:
        raise InvalidHost("the spec names no service")
    return Route(host, lease_id, service, port)


def http_options(manifest: Mapping[str, Any] | None, route: Route) -> HTTPOptions:
    """The proxy settings of the route's expose in the lease's Manifest resource: the one
    that accepts the hostname, else (a generated hostname) the service's global expose on
    the route's port, as Akash's operator finds it; Akash's defaults when there is none."""
    services = (((manifest or {}).get("spec") or {}).get("group") or {}).get("services") or []
    service: Mapping[str, Any] = next((s for s in services if s.get("name") == route.service), {})
    exposes = service.get("expose") or []
    chosen = next(
        (e for e in exposes if route.hostname in [str(h).lower() for h in e.get("hosts") or []]),
        None,
    ) or next(
        (
            e
            for e in exposes
            if e.get("global") and int(e.get("external_port") or e.get("port") or 0) == route.port
        ),
        None,
    )
    if chosen is None:
        return HTTPOptions()
    opts = chosen.get("http_options") or {}
    options = HTTPOptions.model_validate(
        {
            "maxBodySize": opts.get("max_body_size", 0),
            "readTimeout": opts.get("read_timeout", 0),
            "sendTimeout": opts.get("send_timeout", 0),
            "nextTries": opts.get("next_tries", 0),
            "nextTimeout": opts.get("next_timeout", 0),
            "nextCases": opts.get("next_cases"),
            "proxyBufferSize": opts.get("proxy_buffer_size", 0),
        }
    )
    if options.proxy_buffer_size:
        return options
    annotated = _annotated_expose(manifest, route.service, chosen)
    if annotated is not None and _settings(annotated.http_options) == _settings(options):
        return options.model_copy(
            update={"proxy_buffer_size": annotated.http_options.proxy_buffer_size}
        )
    return options


def _settings(options: HTTPOptions) -> tuple[object, ...]:
    """The proxy settings Akash's Manifest spec holds (all but ``proxy_buffer_size``)."""
    return (
        options.max_body_size,
        options.read_timeout,
        options.send_timeout,
        options.next_tries,
        options.next_timeout,
        tuple(options.next_cases or ()),
    )


def _annotated_expose(
    manifest: Mapping[str, Any] | None, service: str, chosen: Mapping[str, Any]
) -> ServiceExpose | None:
    """The spec's expose ``chosen`` as the cluster service's annotation holds it (the
    manifest JSON of the whole group); None when there is no such annotation or expose."""
    annotations = ((manifest or {}).get("metadata") or {}).get("annotations") or {}
    text = annotations.get(MANIFEST_GROUP)
    if not isinstance(text, str) or not text:
        return None
    try:
        group = Group.model_validate_json(text)
    except ValidationError:
        return None
    found = next((s for s in group.services or () if s.name == service), None)
    wanted = (
        int(chosen.get("port") or 0),
        int(chosen.get("external_port") or 0),
        sorted(str(h).lower() for h in chosen.get("hosts") or ()),
    )
    return next(
        (
            e
            for e in (found.expose if found is not None else None) or ()
            if (e.port, e.external_port, sorted(h.lower() for h in e.hosts or ())) == wanted
        ),
        None,
    )


def labels_of(route: Route, lease_labels: Mapping[str, str]) -> dict[str, str]:
    labels = {k: v for k, v in lease_labels.items() if k in LEASE_LABELS}
    labels["akash.network"] = "true"
    labels["akash.network/namespace"] = route.namespace
    labels["akash.network/lease.id.owner"] = route.lease_id.owner
    labels[HOST_LABEL] = route.hostname
    labels[MANAGED_BY] = OPERATOR
    return labels


def ingress(
    route: Route,
    options: HTTPOptions,
    *,
    ingress_class: str,
    lease_labels: Mapping[str, str],
) -> Obj:
    backend = {"service": {"name": route.service, "port": {"number": route.port}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": route.hostname,
            "namespace": route.namespace,
            "labels": labels_of(route, lease_labels),
            "annotations": ingress_annotations(options),
        },
        "spec": {
            "ingressClassName": ingress_class,
            "rules": [
                {
                    "host": route.hostname,
                    "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
                }
            ],
        },
    }


def http_route(
    route: Route,
    *,
    gateway: str,
    gateway_namespace: str,
    lease_labels: Mapping[str, str],
) -> Obj:
    """The Gateway API form (``AP_INGRESS_MODE=gateway-api``), attached to the gateway."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "name": route.hostname,
            "namespace": route.namespace,
            "labels": labels_of(route, lease_labels),
        },
        "spec": {
            "parentRefs": [{"name": gateway, "namespace": gateway_namespace}],
            "hostnames": [route.hostname],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [{"name": route.service, "port": route.port}],
                }
            ],
        },
    }


def hosts_of(obj: Mapping[str, Any]) -> list[str]:
    """The hostnames an Ingress or HTTPRoute routes."""
    spec = obj.get("spec") or {}
    if "hostnames" in spec:
        return [str(h).lower() for h in spec.get("hostnames") or []]
    return [str(rule["host"]).lower() for rule in spec.get("rules") or [] if rule.get("host")]
