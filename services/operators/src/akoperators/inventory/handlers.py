"""kopf handlers: every watch event of nodes, pods, claims and storage classes lands in the
tables (:mod:`akoperators.inventory.state`), which wake the publisher.

Only ``@kopf.on.event`` handlers, on the operator's own registry: kopf neither patches the
objects (no progress annotations, no finalizers) nor posts Kubernetes events for them, so
watching a node never changes it.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from akoperators.inventory.state import State

log = logging.getLogger("akoperators.inventory")

WATCHED = {  # table -> (group/version, plural)
    "nodes": ("v1", "nodes"),
    "pods": ("v1", "pods"),
    "persistentvolumeclaims": ("v1", "persistentvolumeclaims"),
    "storageclasses": ("storage.k8s.io/v1", "storageclasses"),
}


def register(registry: kopf.OperatorRegistry, state: State) -> None:
    """Add the four event handlers to ``registry``."""
    for table, (group_version, plural) in WATCHED.items():
        kopf.on.event(group_version, plural, id=f"inventory-{table}", registry=registry)(
            _handler(state, table)
        )


def _handler(state: State, table: str) -> Any:
    async def on_event(event: dict[str, Any], **_: Any) -> None:
        obj = event.get("object")
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            return
        try:
            state.apply(table, event.get("type"), obj)
        except Exception:  # one odd object must not stop the others, nor post events
            log.exception("cannot take %s %s", table, obj["metadata"].get("name"))

    on_event.__name__ = f"on_{table}"
    return on_event
