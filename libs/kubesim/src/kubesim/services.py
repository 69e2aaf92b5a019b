"""Service addresses, allocated by the API server on write as Kubernetes does.

A Service gets a ClusterIP from 10.96.0.0/16 (none when `clusterIP: None`), and each port
of a NodePort or LoadBalancer Service a node port from 30000–32767. A requested address or
port already taken is refused with 422; an update keeps what was allocated before.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from kubesim.validation import Cause, invalid_value

NETWORK = ipaddress.ip_network("10.96.0.0/16")
NODE_PORTS = range(30000, 32768)


def allocate(
    obj: dict[str, Any], old: dict[str, Any] | None, others: Iterable[dict[str, Any]]
) -> list[Cause]:
    """Fill in clusterIP(s) and nodePorts; returns the causes of a refusal."""
    spec = obj.setdefault("spec", {})
    if spec.get("type") == "ExternalName":
        return []
    old_spec = (old or {}).get("spec") or {}
    ips: set[str | None] = set()
    ports: set[int | None] = set()
    for other in others:
        other_spec = other.get("spec") or {}
        ips.add(other_spec.get("clusterIP"))
        ports.update(p.get("nodePort") for p in other_spec.get("ports") or [])
    causes: list[Cause] = []
    if not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec["clusterIP"] = old_spec["clusterIP"]
    if not spec.get("clusterIP"):
        spec["clusterIP"] = next(
            str(ip) for ip in NETWORK.hosts() if str(ip) not in ips and ip.packed[-1] >= 10
        )
    elif spec["clusterIP"] not in ("None", old_spec.get("clusterIP")) and spec["clusterIP"] in ips:
        causes.append(
            invalid_value("spec.clusterIP", spec["clusterIP"], "provided IP is already allocated")
        )
    spec["clusterIPs"] = [spec["clusterIP"]]
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        before = {p.get("port"): p.get("nodePort") for p in old_spec.get("ports") or []}
        # ports asked for by this very Service are not free for its other ports
        asked = {p.get("nodePort") for p in spec.get("ports") or [] if p.get("nodePort")}
        mine = set(before.values()) | asked
        free = (p for p in NODE_PORTS if p not in ports and p not in mine)
        given: set[int] = set()
        for i, port in enumerate(spec.get("ports") or []):
            wanted = port.get("nodePort")
            if not wanted:
                kept = before.get(port.get("port"))
                port["nodePort"] = kept if kept and kept not in asked else next(free)
            elif wanted in ports:
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
    else:
        for port in spec.get("ports") or []:
            port.pop("nodePort", None)
    return causes
