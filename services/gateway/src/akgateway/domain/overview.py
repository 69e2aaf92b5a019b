"""What the operator's dashboard shows, as one JSON document: the services' statuses, the
inventory per node, the capabilities check (each difference between the inventory and the
provider's on-chain capability attributes), capacity use over time, orders and bids with
their decisions, leases with their health, the latest events, and the balance service's
figures when it runs.

Pure: built from the status board's envelopes, an :class:`aktypes.overview.Overview`
snapshot and the capacity samples the dashboard keeps.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from aktypes.events import BalanceStatus, ClusterStatus, Envelope, OperatorStatus
from aktypes.events.cluster import ResourceTotals

STALE_S = 30.0
LABELS = {"offered_not_advertised": "lost orders", "advertised_not_offered": "failed bids"}


def _percent(used: int, total: int) -> float:
    return round(100.0 * used / total, 1) if total > 0 else 0.0


def _resources(allocatable: ResourceTotals, available: ResourceTotals) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("cpu", "memory", "gpu", "storage_ephemeral"):
        total, free = getattr(allocatable, name), getattr(available, name)
        used = max(total - free, 0)
        out[name] = {"allocatable": total, "allocated": used, "used_pct": _percent(used, total)}
    return out


def capacity_sample(status: ClusterStatus, at: dt.datetime) -> dict[str, Any]:
    """One point of the capacity chart: how much of each resource is taken."""
    use = _resources(status.allocatable, status.available)
    return {"time": at.isoformat(), **{k: v["used_pct"] for k, v in use.items()}}


def _service(envelope: Envelope[Any] | None, now: dt.datetime) -> dict[str, Any]:
    if envelope is None:
        return {"state": "no status", "age_s": None, "figures": {}}
    age = (now - envelope.time).total_seconds()
    payload = envelope.payload
    figures = payload.model_dump(mode="json", exclude={"type", "nodes", "active", "pending"})
    if isinstance(payload, OperatorStatus):  # what it manages, counted by state
        figures = {**(payload.figures or {"managed": 0}), "last_error": payload.last_error}
    if isinstance(payload, ClusterStatus) and payload.capabilities.checked:
        figures["capability_mismatches"] = len(payload.capabilities.mismatches)
    return {
        "state": "stale" if age > STALE_S else "ok",
        "age_s": round(age, 1),
        "figures": {k: v for k, v in figures.items() if not isinstance(v, (dict, list))},
    }


def capabilities(envelope: Envelope[Any] | None) -> dict[str, Any]:
    """The capabilities check on the cluster's status: whether it ran, why not, and each
    difference (``lost orders``: in the inventory, not advertised; ``failed bids``: the
    reverse)."""
    if envelope is None or not isinstance(envelope.payload, ClusterStatus):
        return {"checked": False, "error": "the cluster has not reported", "mismatches": []}
    check = envelope.payload.capabilities
    return {
        "checked": check.checked,
        "provider": check.provider,
        "error": check.error,
        "mismatches": [
            {
                "difference": LABELS[m.direction],
                "kind": m.kind.replace("_", " "),
                "subject": m.subject,
                "attributes": [f"{k}={v}" for k, v in m.attributes.items()],
                "message": m.message,
            }
            for m in check.mismatches
        ],
    }


def earnings(envelope: Envelope[Any] | None) -> dict[str, Any] | None:
    """The balance service's figures, one line each (None: it has not reported)."""
    if envelope is None or not isinstance(envelope.payload, BalanceStatus):
        return None
    status = envelope.payload
    figures: dict[str, Any] = {"leases watched": status.leases}
    figures |= {f"earned {d}": n for d, n in sorted(status.earned.items())}
    figures |= {f"unpaid {d}": n for d, n in sorted(status.unpaid.items())}
    figures |= {f"swept {d}": n for d, n in sorted(status.swept.items())}
    figures |= {f"balance {d}": n for d, n in sorted(status.balances.items())}
    if status.below_minimum:
        figures["below AP_MINIMUM_BALANCE"] = ", ".join(status.below_minimum)
    if status.last_error:
        figures["last error"] = status.last_error
    return figures


def dashboard_view(
    statuses: Mapping[str, Envelope[Any] | None],
    overview: Mapping[str, Any],
    capacity: Sequence[Mapping[str, Any]],
    now: dt.datetime,
) -> dict[str, Any]:
    cluster = statuses.get("cluster")
    nodes: list[dict[str, Any]] = []
    totals: dict[str, Any] = {}
    if cluster is not None and isinstance(cluster.payload, ClusterStatus):
        status = cluster.payload
        totals = _resources(status.allocatable, status.available)
        nodes = [
            {
                "name": node.name,
                "gpu_model": node.gpu,
                "storage_classes": node.storage_classes,
                **_resources(node.allocatable, node.available),
            }
            for node in status.nodes
        ]
        totals["storage"] = dict(status.storage)
    balance = statuses.get("balance")
    return {
        "time": now.isoformat(),
        "services": {name: _service(envelope, now) for name, envelope in statuses.items()},
        "nodes": nodes,
        "totals": totals,
        "capabilities": capabilities(cluster),
        "capacity": list(capacity),
        "earnings": earnings(balance),
        "orders": overview.get("orders", []),
        "leases": overview.get("leases", []),
        "events": overview.get("events", []),
        "bids_per_minute": overview.get("bids_per_minute", []),
        "counts": overview.get("counts", {}),
    }
