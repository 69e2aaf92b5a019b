"""How a lease is reached: NetworkPolicies, Kubernetes Services and the hostnames routed.

Akash's rules (``builder/netpol.go``, ``builder/service.go``, ``operator/hostname``):

- ``akash-deployment-restrictions`` lets the namespace talk to itself and the ingress
  controller talk to it; egress goes to the namespace, cluster DNS and public IPv4 only.
  Global non-HTTP ports open through ``akash-<svc>-np``, leased-IP ports through
  ``akash-<svc>-ip``, and a service allowed to read from Kubernetes reaches the API server
  through ``akash-apiserver-<svc>``.
- The ClusterIP Service ``<svc>`` carries the HTTP ingress ports (global TCP 80) and the
  ports exposed inside the lease; the NodePort Service ``<svc>-np`` the other global ones.
  A port is named ``<expose index>-<external port>``.
- The hostnames routed: each accepted hostname and, with static ingress hosts (an ingress
  domain), each HTTP service's generated one (``manager.go``: ``<IngressHost>.<domain>``).
  The cluster declares a ProviderHost for each (:mod:`.custom`); the hostname operator
  makes its Ingress.

Fixes of Akash's quirks: a port is deduplicated by external port *and* protocol (Go dropped
a UDP port that shared its number with a TCP one), and hostnames are lowercased.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from akcluster.domain.objects.base import (
    MANIFEST_SERVICE,
    NAMESPACE_LABEL,
    BuildSettings,
    Obj,
    metadata,
    namespace_of,
    selector_labels,
    service_labels,
)
from akcluster.domain.objects.workloads import read_permissions
from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host
from aktypes.manifest import UDP, Group, Service, ServiceExpose

RESTRICTIONS = "akash-deployment-restrictions"
NODE_PORT_SUFFIX = "-np"
_INGRESS_NGINX = {"app.kubernetes.io/name": "ingress-nginx"}
_PRIVATE = ["10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"]


def _proto(expose: ServiceExpose) -> str:
    return "UDP" if expose.proto == UDP else "TCP"


def _policy(name: str, lease_id: LeaseID, labels: dict[str, str], spec: Obj) -> Obj:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(name, dict(labels), namespace_of(lease_id)),
        "spec": spec,
    }


def _restrictions(lease_id: LeaseID, labels: dict[str, str]) -> Obj:
    same_namespace = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: labels[NAMESPACE_LABEL]}}
    }
    return _policy(
        RESTRICTIONS,
        lease_id,
        labels,
        {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [
                {"from": [same_namespace]},
                {
                    "from": [
                        {
                            "namespaceSelector": {"matchLabels": dict(_INGRESS_NGINX)},
                            "podSelector": {"matchLabels": dict(_INGRESS_NGINX)},
                        }
                    ]
                },
            ],
            "egress": [
                {"to": [same_namespace]},
                {
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                    "to": [
                        {
                            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                            },
                        }
                    ],
                },
                {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": list(_PRIVATE)}}]},
            ],
        },
    )


def _unique(ports: list[Obj]) -> list[Obj]:
    return list({(p["protocol"], p["port"]): p for p in ports}.values())


def network_policies(
    lease_id: LeaseID, group: Group, settings: BuildSettings, labels: dict[str, str]
) -> list[Obj]:
    """The lease's NetworkPolicies, or none when the cluster does not use them."""
    if not settings.network_policies:
        return []
    policies = [_restrictions(lease_id, labels)]
    for service in group.services or ():
        pods = {"matchLabels": {MANIFEST_SERVICE: service.name}}
        opened: list[Obj] = []
        leased: list[Obj] = []
        for expose in service.expose or ():
            entry = {"protocol": _proto(expose), "port": expose.port}
            if expose.ip:
                leased.append(entry)
            if expose.global_ and not expose.is_ingress:
                opened.append(entry)
        if opened:
            policies.append(
                _policy(
                    f"akash-{service.name}-np",
                    lease_id,
                    labels,
                    {
                        "podSelector": pods,
                        "policyTypes": ["Ingress"],
                        "ingress": [{"ports": _unique(opened)}],
                    },
                )
            )
        if leased:
            policies.append(
                _policy(
                    f"akash-{service.name}-ip",
                    lease_id,
                    labels,
                    {
                        "podSelector": pods,
                        "policyTypes": ["Ingress"],
                        "ingress": [
                            {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": _unique(leased)}
                        ],
                    },
                )
            )
        if settings.api_server_endpoints and read_permissions(service):
            policies.append(_api_server_policy(service, lease_id, settings, labels, pods))
    return policies


def _api_server_policy(
    service: Service,
    lease_id: LeaseID,
    settings: BuildSettings,
    labels: dict[str, str],
    pods: Obj,
) -> Obj:
    peers = []
    ports: list[Obj] = []
    for host, port in settings.api_server_endpoints:
        bits = ipaddress.ip_address(host).max_prefixlen
        peers.append({"ipBlock": {"cidr": f"{host}/{bits}"}})
        ports.append({"protocol": "TCP", "port": port})
    return _policy(
        f"akash-apiserver-{service.name}",
        lease_id,
        labels,
        {
            "podSelector": pods,
            "policyTypes": ["Egress"],
            "egress": [{"to": peers, "ports": _unique(ports)}],
        },
    )


def node_port_name(service: str) -> str:
    return service + NODE_PORT_SUFFIX


def service_ports(service: Service, *, node_port: bool) -> list[Obj]:
    """The ports of the service's ClusterIP (``node_port=False``) or NodePort Service."""
    ports: list[Obj] = []
    seen: set[tuple[int, str]] = set()
    for index, expose in enumerate(service.expose or ()):
        if node_port != (expose.global_ and not expose.is_ingress):
            continue
        external, proto = expose.effective_external_port, _proto(expose)
        if (external, proto) in seen:
            continue
        seen.add((external, proto))
        ports.append(
            {
                "name": f"{index}-{external}",
                "port": external,
                "targetPort": expose.port,
                "protocol": proto,
            }
        )
    return ports


def services(service: Service, lease_id: LeaseID, resource_version: str = "") -> list[Obj]:
    """The ClusterIP Service ``<svc>`` and NodePort Service ``<svc>-np``, where needed."""
    found: list[Obj] = []
    for node_port in (False, True):
        ports = service_ports(service, node_port=node_port)
        if not ports:
            continue
        name = node_port_name(service.name) if node_port else service.name
        found.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": metadata(
                    name,
                    service_labels(lease_id, service.name, resource_version),
                    namespace_of(lease_id),
                ),
                "spec": {
                    "type": "NodePort" if node_port else "ClusterIP",
                    "selector": selector_labels(lease_id, service.name),
                    "ports": ports,
                },
            }
        )
    return found


def hostnames(
    lease_id: LeaseID, group: Group, domain: str = "", adopted: Mapping[str, str] | None = None
) -> dict[str, tuple[Service, ServiceExpose]]:
    """Routed hostname (lowercased) → the service and HTTP expose it reaches: the accepted
    ones and, with an ingress ``domain``, each HTTP service's generated one; then the
    generated ones ``adopted`` from the Go provider (hostname → service), to the service's
    last HTTP expose, as Go routed its generated hostname."""
    found: dict[str, tuple[Service, ServiceExpose]] = {}
    last: dict[str, tuple[Service, ServiceExpose]] = {}
    for service in group.services or ():
        for expose in service.expose or ():
            if expose.is_ingress:
                last[service.name] = (service, expose)
                if domain:
                    found[ingress_host(lease_id, service.name, domain)] = (service, expose)
                for host in expose.hosts or ():
                    found[host.lower()] = (service, expose)
    for host, name in (adopted or {}).items():
        if name in last:
            found.setdefault(host.lower(), last[name])
    return found
