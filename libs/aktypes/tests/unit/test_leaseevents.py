"""A lease's kept Kubernetes events: the stream's name, what an entry holds of an Event,
and reading entries back."""

from __future__ import annotations

import json

import pytest

from aktypes.ids import LeaseID
from aktypes.leaseevents import (
    MAX_MESSAGE,
    closed_fields,
    event_fields,
    kept,
    lease_events_stream,
    occurrence,
    read_entry,
)
from aktypes.testing import address

EVENT = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "web-0.abc", "namespace": "ns", "uid": "u-1", "resourceVersion": "9"},
    "involvedObject": {
        "kind": "Pod",
        "namespace": "ns",
        "name": "web-0",
        "uid": "p-1",
        "fieldPath": "spec.containers{web}",
    },
    "reason": "BackOff",
    "message": "Back-off restarting failed container web in pod web-0_ns(p-1)",
    "type": "Warning",
    "source": {"component": "kubelet", "host": "node-a"},
    "firstTimestamp": "2026-01-01T00:00:00Z",
    "lastTimestamp": "2026-01-01T00:05:00Z",
    "count": 7,
}


def test_the_stream_of_a_lease() -> None:
    lease = LeaseID(owner=address(1), dseq=5, gseq=1, oseq=2, provider=address(2))
    assert lease_events_stream(lease) == f"akash.provider.cluster.lease-events.{lease}"


def test_an_occurrence_is_the_uid_at_a_count() -> None:
    assert occurrence(EVENT) == ("u-1", 7)
    assert occurrence({**EVENT, "count": None}) == ("u-1", 1)
    assert occurrence({**EVENT, "series": {"count": 12}}) == ("u-1", 12)  # events.k8s.io
    assert occurrence({**EVENT, "count": True}) == ("u-1", 1)
    assert occurrence({"metadata": {}}) is None


def test_an_entry_keeps_what_a_tenant_is_shown() -> None:
    fields = event_fields(EVENT)
    assert {k: v for k, v in fields.items() if k != "event"} == {
        "kind": "event",
        "uid": "u-1",
        "count": "7",
    }
    assert json.loads(fields["event"]) == {
        "type": "Warning",
        "reason": "BackOff",
        "message": EVENT["message"],
        "source": {"component": "kubelet", "host": "node-a"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "ns",
            "name": "web-0",
            "fieldPath": "spec.containers{web}",
        },
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:05:00Z",
        "count": 7,
    }
    long = kept({**EVENT, "message": "x" * 5000})
    assert len(long["message"]) == MAX_MESSAGE
    with pytest.raises(ValueError, match="uid"):
        event_fields({"reason": "NoUid"})


def test_entries_read_back() -> None:
    entry = read_entry(event_fields(EVENT))
    assert entry is not None and not entry.closed
    assert entry.event == kept(EVENT)
    end = read_entry(closed_fields())
    assert end is not None and end.closed
    for odd in ({}, {"kind": "other"}, {"kind": "event", "event": "{"}, {"kind": "event"}):
        assert read_entry(odd) is None
    assert read_entry({"kind": "event", "event": "[1]"}) is None
