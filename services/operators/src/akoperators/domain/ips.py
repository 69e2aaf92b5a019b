"""What the IP operator makes of a ``ProviderLeasedIP``: the MetalLB LoadBalancer Service
that exposes one port of a lease's service on a leased address, and the pool it draws on.

As Akash's operator: the Service is ``<service>-ip-<external port>-<protocol>`` in the
lease's namespace, selects the service's pods, and carries
``metallb.universe.tf/allow-shared-ip: <sharing key>`` so every port of one owner's
endpoint lands on one address (MetalLB shares an address between Services with the same
key), plus ``metallb.universe.tf/address-pool`` when a pool is named. One address is used
per sharing key; the pool's capacity is the number of addresses configured.

A Service Akash's operator made (a lease taken over from the Go provider) has the same name
and sharing key but another port name and selector: it already exposes the port
(:func:`serves`), so it is kept as it is, and with it the address MetalLB gave it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace

Obj = dict[str, Any]

SHARED_IP = "metallb.universe.tf/allow-shared-ip"
ADDRESS_POOL = "metallb.universe.tf/address-pool"
SERVICE_TARGET = "akash.network/service-target"
METAL_LB = "metal-lb"
MANIFEST_SERVICE = "akash.network/manifest-service"
SHARING_LABEL = "akash.network/sharing-key"


class InvalidLeasedIP(ValueError):
    """A ProviderLeasedIP whose spec names no usable lease, service or port."""


@dataclass(frozen=True)
class Exposure:
    lease_id: LeaseID
    service: str
    port: int
    external_port: int
    protocol: str
    sharing_key: str

    @property
    def namespace(self) -> str:
        return lease_namespace(self.lease_id)

    @property
    def name(self) -> str:
        return f"{self.service}-ip-{self.external_port}-{self.protocol.lower()}"


def exposure_of(spec: Mapping[str, Any]) -> Exposure:
    try:
        lease = spec["lease_id"]
        lease_id = LeaseID(
            owner=lease["owner"],
            dseq=int(lease["dseq"]),
            gseq=int(lease["gseq"]),
            oseq=int(lease["oseq"]),
            provider=lease["provider"],
        )
        protocol = str(spec.get("protocol") or "TCP").upper()
        found = Exposure(
            lease_id,
            str(spec["service_name"]),
            int(spec["port"]),
            int(spec.get("external_port") or spec["port"]),
            protocol,
            str(spec["sharing_key"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidLeasedIP(f"the spec does not name a lease, service and port: {exc}") from None
    if protocol not in ("TCP", "UDP"):
        raise InvalidLeasedIP(f"protocol {protocol!r} is neither TCP nor UDP")
    if not 0 < found.external_port < 65536 or not 0 < found.port < 65536:
        raise InvalidLeasedIP(f"port {found.port}→{found.external_port} is not 1-65535")
    if not found.sharing_key:
        raise InvalidLeasedIP("the spec has no sharing key")
    return found


def load_balancer(exposure: Exposure, *, pool: str = "", lease_labels: Mapping[str, str]) -> Obj:
    annotations = {SHARED_IP: exposure.sharing_key}
    if pool:
        annotations[ADDRESS_POOL] = pool
    labels = {k: v for k, v in lease_labels.items() if k.startswith("akash.network")}
    labels |= {
        "akash.network": "true",
        "akash.network/namespace": exposure.namespace,
        SERVICE_TARGET: METAL_LB,
        MANIFEST_SERVICE: exposure.service,
        SHARING_LABEL: exposure.sharing_key,
    }
    selector = {
        "akash.network": "true",
        "akash.network/namespace": exposure.namespace,
        MANIFEST_SERVICE: exposure.service,
    }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": exposure.name,
            "namespace": exposure.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "type": "LoadBalancer",
            "selector": selector,
            "ports": [
                {
                    "name": f"{exposure.external_port}-{exposure.protocol.lower()}",
                    "port": exposure.external_port,
                    "targetPort": exposure.port,
                    "protocol": exposure.protocol,
                }
            ],
        },
    }


def sharing_key_of(service: Mapping[str, Any]) -> str:
    """The sharing key of a LoadBalancer Service: its label (ours), else its MetalLB
    annotation (Akash's operator sets no label)."""
    meta = service.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    return str(labels.get(SHARING_LABEL) or annotations.get(SHARED_IP) or "")


def serves(service: Mapping[str, Any] | None, exposure: Exposure) -> bool:
    """Whether an existing Service already exposes ``exposure`` as :func:`load_balancer`
    would: a LoadBalancer with its sharing key and its one port (number, target, protocol),
    selecting the service's pods (Akash's operator selects without the namespace label)."""
    if service is None:
        return False
    spec = service.get("spec") or {}
    ports = spec.get("ports") or []
    selector = spec.get("selector") or {}
    wanted = {
        "akash.network": "true",
        "akash.network/namespace": exposure.namespace,
        MANIFEST_SERVICE: exposure.service,
    }
    if (
        spec.get("type") != "LoadBalancer"
        or len(ports) != 1
        or sharing_key_of(service) != exposure.sharing_key
        or selector.get(MANIFEST_SERVICE) != exposure.service
        or any(wanted.get(k) != v for k, v in selector.items())
    ):
        return False
    [port] = ports
    return (port.get("port"), port.get("targetPort"), port.get("protocol") or "TCP") == (
        exposure.external_port,
        exposure.port,
        exposure.protocol,
    )


def pool_size(text: str) -> int:
    """How many addresses ``203.0.113.10-203.0.113.19,198.51.100.0/30,2001:db8::1`` holds
    (ranges inclusive, networks whole); ValueError naming the entry it cannot read."""
    total = 0
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            if "-" in item:
                first, last = (ipaddress.ip_address(p.strip()) for p in item.split("-", 1))
                if first.version != last.version or int(last) < int(first):
                    raise ValueError("the range ends before it starts")
                total += int(last) - int(first) + 1
            else:
                total += ipaddress.ip_network(item, strict=False).num_addresses
        except ValueError as exc:
            raise ValueError(f"{item!r} is not an address, range or network: {exc}") from None
    return total
