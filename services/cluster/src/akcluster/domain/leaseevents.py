"""Which lease a namespace belongs to, and the keys that keep a lease's event history
(:mod:`aktypes.leaseevents`) exact: each occurrence of an Event once, nothing after the
lease's teardown.

- ``akcluster:lease-event:<Event uid>``: the last ``count`` of that Event added to its
  lease's stream; an occurrence at or below it is not added again (a restarted cluster
  lists every Event again; two replicas watch the same ones). It expires with the
  retention, so it outlives the Event in Kubernetes while the retention is above the
  cluster's event TTL.
- ``akcluster:lease-events-closed:<lease id>``: the lease was torn down; its stream ends
  with a ``closed`` entry and takes no more. Both expire after the retention.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from akcluster.domain.objects.base import (
    LEASE_DSEQ,
    LEASE_GSEQ,
    LEASE_OSEQ,
    LEASE_OWNER,
    LEASE_PROVIDER,
)
from aktypes.ids import LeaseID

SEEN_PREFIX: Final = "akcluster:lease-event:"
CLOSED_PREFIX: Final = "akcluster:lease-events-closed:"


def seen_key(uid: str) -> str:
    return f"{SEEN_PREFIX}{uid}"


def closed_key(lease_id: LeaseID | str) -> str:
    return f"{CLOSED_PREFIX}{lease_id}"


def lease_of(namespace: Mapping[str, Any]) -> LeaseID | None:
    """The lease a Namespace object holds, from its ``akash.network/lease.id.*`` labels (ours
    and the Go provider's); None for any other namespace."""
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    parts = [labels.get(k) for k in (LEASE_OWNER, LEASE_DSEQ, LEASE_GSEQ, LEASE_OSEQ)]
    provider = labels.get(LEASE_PROVIDER)
    if not all(parts) or not provider:
        return None
    try:
        return LeaseID.parse("/".join([*map(str, parts), str(provider)]))
    except ValueError:
        return None


def is_new(seen: str | None, count: int) -> bool:
    """Whether the ``count``-th occurrence of an Event comes after the last one added
    (``seen``, None: none was)."""
    if seen is None:
        return True
    try:
        return count > int(seen)
    except ValueError:
        return True
