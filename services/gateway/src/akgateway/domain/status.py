"""``GET /status``: Akash's legacy status JSON, put together from the retained statuses.

Each service publishes its status now and then on ``akash.provider.<service>.status``; the
gateway reads the latest of each when asked. Akash's shape (``provider/client/types.go``)::

    {"cluster": {"leases", "inventory": {"active": [MetricTotal], "pending": [MetricTotal],
                 "available": {"nodes": [{"name", "allocatable", "available"}],
                               "storage": [{"class", "size"}]}}},
     "bidengine": {"orders"}, "manifest": {"deployments"},
     "cluster_public_hostname", "address"}

with ``MetricTotal = {cpu (millicpu), gpu, memory, storage_ephemeral, storage?{class: bytes}}``.
A service whose status is missing, or older than the allowed age (it stopped publishing),
shows as ``null`` in its place and as a line in ``errors`` (an addition of ours: the Go
gateway answers 500 when one of its in-process services does not answer).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aktypes.events import (
    BidEngineStatus,
    ChainStatus,
    ClusterStatus,
    Envelope,
    ManifestStatus,
    ResourceTotals,
)

STATUS_SOURCES: dict[str, type[Any]] = {
    "cluster": ClusterStatus,
    "bidengine": BidEngineStatus,
    "manifest": ManifestStatus,
    "chain": ChainStatus,
}


def metric_total(totals: ResourceTotals) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cpu": totals.cpu,
        "gpu": totals.gpu,
        "memory": totals.memory,
        "storage_ephemeral": totals.storage_ephemeral,
    }
    if totals.storage:  # Go: omitempty
        out["storage"] = dict(sorted(totals.storage.items()))
    return out


def cluster_json(status: ClusterStatus) -> dict[str, Any]:
    return {
        "leases": status.leases,
        "inventory": {
            "active": [metric_total(t) for t in status.active],
            "pending": [metric_total(t) for t in status.pending],
            "available": {
                "nodes": [
                    {
                        "name": node.name,
                        "allocatable": metric_total(node.allocatable),
                        "available": metric_total(node.available),
                    }
                    for node in status.nodes
                ],
                "storage": [
                    {"class": name, "size": size} for name, size in sorted(status.storage.items())
                ],
            },
        },
    }


def fresh_payloads(
    statuses: Mapping[str, Envelope[Any] | None], *, now: dt.datetime, max_age: float
) -> tuple[dict[str, Any], list[str]]:
    """The payload of each service whose status is there and recent, and what is wrong with
    the others (one line each)."""
    found: dict[str, Any] = {}
    errors: list[str] = []
    for service, expected in STATUS_SOURCES.items():
        envelope = statuses.get(service)
        if envelope is None:
            errors.append(f"{service}: no status published (is the service running?)")
            continue
        if not isinstance(envelope.payload, expected):
            errors.append(f"{service}: unexpected status {envelope.type}")
            continue
        age = (now - envelope.time).total_seconds()
        if age > max_age:
            errors.append(f"{service}: last status is {age:.0f}s old (is the service running?)")
            continue
        found[service] = envelope.payload
    return found, errors


@dataclass(frozen=True)
class Gathered:
    """The fresh statuses both status answers are made of (REST ``/status``, gRPC)."""

    cluster: ClusterStatus | None
    bidengine: BidEngineStatus | None
    manifest: ManifestStatus | None
    errors: list[str]
    hostname: str  # the setting, else the cluster's; "" when neither has one


def gather(
    statuses: Mapping[str, Envelope[Any] | None],
    *,
    public_hostname: str,
    now: dt.datetime,
    max_age: float,
) -> Gathered:
    found, errors = fresh_payloads(statuses, now=now, max_age=max_age)
    cluster: ClusterStatus | None = found.get("cluster")
    chain: ChainStatus | None = found.get("chain")
    if chain is not None and chain.last_error:
        errors.append(f"chain: {chain.last_error}")
    return Gathered(
        cluster=cluster,
        bidengine=found.get("bidengine"),
        manifest=found.get("manifest"),
        errors=errors,
        hostname=public_hostname or (cluster.public_hostname if cluster is not None else ""),
    )


def legacy_status(
    statuses: Mapping[str, Envelope[Any] | None],
    *,
    address: str,
    public_hostname: str,
    now: dt.datetime,
    max_age: float,
) -> dict[str, Any]:
    """The ``/status`` answer; ``public_hostname`` (the setting) wins over the cluster's."""
    got = gather(statuses, public_hostname=public_hostname, now=now, max_age=max_age)
    body: dict[str, Any] = {
        "cluster": cluster_json(got.cluster) if got.cluster is not None else None,
        "bidengine": {"orders": got.bidengine.orders} if got.bidengine is not None else None,
        "manifest": {"deployments": got.manifest.deployments} if got.manifest is not None else None,
    }
    if got.hostname:  # Go: omitempty
        body["cluster_public_hostname"] = got.hostname
    body["address"] = address
    if got.errors:
        body["errors"] = got.errors
    return body


def renderer(
    *, address: str, public_hostname: str, max_age: float
) -> Callable[[Mapping[str, Envelope[Any] | None], dt.datetime], dict[str, Any]]:
    """:func:`legacy_status` for one provider, as a function of the statuses and the time."""

    def render(statuses: Mapping[str, Envelope[Any] | None], now: dt.datetime) -> dict[str, Any]:
        return legacy_status(
            statuses, address=address, public_hostname=public_hostname, now=now, max_age=max_age
        )

    return render


def kube_version(statuses: Mapping[str, Envelope[Any] | None]) -> dict[str, str] | None:
    """The Kubernetes API server's ``/version`` as the cluster last reported it (None: no
    cluster status, or the null backend)."""
    envelope = statuses.get("cluster")
    payload = envelope.payload if envelope is not None else None
    if isinstance(payload, ClusterStatus) and payload.kube_version:
        return dict(payload.kube_version)
    return None
