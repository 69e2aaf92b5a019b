"""Service addresses, allocated by the API server on write as Kubernetes does.

A Service gets a ClusterIP from 10.96.0.0/16 (none when `clusterIP: None`), and each port
of a NodePort or LoadBalancer Service a node port from 30000–32767. A requested address or
port already taken is refused with 422; an update keeps what was allocated before.

What the stored Services hold is kept in :class:`Allocations`, updated by the store as
Services are written, so allocating costs the same however many Services there are (a
cluster with ten thousand leases has ten thousand of them).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from kubesim.validation import Cause, invalid_value

NETWORK = ipaddress.ip_network("10.96.0.0/16")
NODE_PORTS = range(30000, 32768)
_FIRST = int(NETWORK.network_address) + 1
_LAST = int(NETWORK.broadcast_address) - 1


class Allocations:
    """The ClusterIPs and node ports the stored Services hold, each with its holder's uid."""

    def __init__(self) -> None:
        self.ips: dict[str, str] = {}
        self.ports: dict[int, str] = {}
        self._lowest_free = _FIRST  # every address below it is held

    def hold(self, service: dict[str, Any]) -> None:
        uid, spec = service["metadata"].get("uid", ""), service.get("spec") or {}
        if spec.get("clusterIP") not in (None, "", "None"):
            self.ips[spec["clusterIP"]] = uid
        for port in spec.get("ports") or []:
            if port.get("nodePort"):
                self.ports[port["nodePort"]] = uid

    def release(self, service: dict[str, Any]) -> None:
        uid, spec = service["metadata"].get("uid", ""), service.get("spec") or {}
        ip = spec.get("clusterIP")
        if ip is not None and self.ips.get(ip) == uid:
            del self.ips[ip]
            self._lowest_free = min(self._lowest_free, int(ipaddress.ip_address(ip)))
        for port in spec.get("ports") or []:
            if port.get("nodePort") and self.ports.get(port["nodePort"]) == uid:
                del self.ports[port["nodePort"]]

    def _free_ip(self) -> str:
        candidate = self._lowest_free
        while candidate <= _LAST and (
            candidate & 0xFF < 10 or str(ipaddress.IPv4Address(candidate)) in self.ips
        ):
            candidate += 1
        if candidate > _LAST:
            raise RuntimeError(f"no ClusterIP left in {NETWORK}")
        self._lowest_free = candidate
        return str(ipaddress.IPv4Address(candidate))

    def allocate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        """Fill in clusterIP(s) and nodePorts; returns the causes of a refusal."""
        spec = obj.setdefault("spec", {})
        if spec.get("type") == "ExternalName":
            return []
        uid = obj["metadata"].get("uid")
        old_spec = (old or {}).get("spec") or {}
        causes: list[Cause] = []
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIP"):
            spec["clusterIP"] = self._free_ip()
        elif (
            spec["clusterIP"] not in ("None", old_spec.get("clusterIP"))
            and self.ips.get(spec["clusterIP"], uid) != uid
        ):
            causes.append(
                invalid_value(
                    "spec.clusterIP", spec["clusterIP"], "provided IP is already allocated"
                )
            )
        spec["clusterIPs"] = [spec["clusterIP"]]
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            causes += self._node_ports(spec, old_spec, uid)
        else:
            for port in spec.get("ports") or []:
                port.pop("nodePort", None)
        return causes

    def _node_ports(
        self, spec: dict[str, Any], old_spec: dict[str, Any], uid: str | None
    ) -> list[Cause]:
        def taken(port: int) -> bool:
            return self.ports.get(port, uid) != uid

        causes: list[Cause] = []
        before = {p.get("port"): p.get("nodePort") for p in old_spec.get("ports") or []}
        # ports asked for by this very Service are not free for its other ports
        asked = {p.get("nodePort") for p in spec.get("ports") or [] if p.get("nodePort")}
        mine = set(before.values()) | asked
        free = (p for p in NODE_PORTS if not taken(p) and p not in mine)
        given: set[int] = set()
        for i, port in enumerate(spec.get("ports") or []):
            wanted = port.get("nodePort")
            if not wanted:
                kept = before.get(port.get("port"))
                port["nodePort"] = kept if kept and kept not in asked else next(free)
            elif taken(wanted):
                causes.append(
                    invalid_value(
                        f"spec.ports[{i}].nodePort", wanted, "provided port is already allocated"
                    )
                )
            elif wanted in given:
                causes.append(
                    (
                        f"spec.ports[{i}].nodePort",
                        "FieldValueDuplicate",
                        f"Duplicate value: {wanted}",
                    )
                )
            given.add(port["nodePort"])
        return causes
