"""A lease's Kubernetes events as the cluster service keeps them on Redis, beyond the
cluster's own event TTL, and as the gateway reads them back: one stream per lease.

The stream is ``akash.provider.cluster.lease-events.<lease id>`` (the lease id's string
form, ``owner/dseq/gseq/oseq/provider``). Its entries are plain fields, readable with
``redis-cli XRANGE``:

- ``kind=event uid=<Event uid> count=<n> event=<JSON>``: one Event as it was at its
  ``count``-th occurrence, reduced to what a tenant is shown (:func:`kept`);
- ``kind=closed``: the lease was torn down; nothing follows it.

An Event that Kubernetes updates (its ``count`` goes up) adds one entry per count, never
one per write: ``(uid, count)`` names an occurrence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from aktypes.ids import LeaseID

LEASE_EVENTS_PREFIX: Final = "akash.provider.cluster.lease-events."
MAX_MESSAGE: Final = 1024  # what events.k8s.io/v1 keeps of a note
EVENT, CLOSED = "event", "closed"


def lease_events_stream(lease_id: LeaseID | str) -> str:
    """The stream of ``lease_id``'s events."""
    return f"{LEASE_EVENTS_PREFIX}{lease_id}"


def occurrence(event: Mapping[str, Any]) -> tuple[str, int] | None:
    """``(uid, count)`` of a core/v1 Event (a series' count when it has one); None for an
    object without a uid."""
    uid = (event.get("metadata") or {}).get("uid")
    if not isinstance(uid, str) or not uid:
        return None
    series = event.get("series")
    count = (series.get("count") if isinstance(series, Mapping) else None) or event.get("count")
    return uid, count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


def kept(event: Mapping[str, Any]) -> dict[str, Any]:
    """What is kept of a core/v1 Event: its kind, reason, note (at most
    :data:`MAX_MESSAGE` characters), who reported it, its object, its times and count."""
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    found = {
        "type": event.get("type"),
        "reason": event.get("reason"),
        "message": str(event.get("message") or "")[:MAX_MESSAGE],
        "reportingComponent": event.get("reportingComponent"),
        "reportingInstance": event.get("reportingInstance"),
        "source": {k: source.get(k) for k in ("component", "host") if source.get(k)},
        "involvedObject": {
            k: involved.get(k)
            for k in ("kind", "namespace", "name", "fieldPath")
            if involved.get(k)
        },
        "firstTimestamp": event.get("firstTimestamp"),
        "lastTimestamp": event.get("lastTimestamp"),
        "eventTime": event.get("eventTime"),
        "count": (occurrence(event) or ("", 1))[1],
    }
    return {k: v for k, v in found.items() if v not in (None, "", {})}


def event_fields(event: Mapping[str, Any]) -> dict[str, str]:
    """The entry of one occurrence of ``event``; ValueError for an object without a uid."""
    seen = occurrence(event)
    if seen is None:
        raise ValueError("an Event without metadata.uid")
    uid, count = seen
    body = json.dumps(kept(event), separators=(",", ":"), sort_keys=True)
    return {"kind": EVENT, "uid": uid, "count": str(count), "event": body}


def closed_fields() -> dict[str, str]:
    """The entry that ends a torn-down lease's stream."""
    return {"kind": CLOSED}


@dataclass(frozen=True)
class LeaseEventEntry:
    """One entry read back: an event (``event``, as :func:`kept` made it) or the end."""

    kind: str
    event: dict[str, Any]

    @property
    def closed(self) -> bool:
        return self.kind == CLOSED


def read_entry(fields: Mapping[str, str]) -> LeaseEventEntry | None:
    """An entry of a lease's stream; None for one that is neither (skipped by readers)."""
    kind = fields.get("kind")
    if kind == CLOSED:
        return LeaseEventEntry(CLOSED, {})
    if kind != EVENT:
        return None
    try:
        event = json.loads(fields.get("event") or "")
    except ValueError:
        return None
    return LeaseEventEntry(EVENT, event) if isinstance(event, dict) else None
