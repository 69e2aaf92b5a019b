"""Events and commands: every payload type, the union, the envelope and its stream form."""

from __future__ import annotations

import json
import re
import typing
from datetime import datetime

import pytest
from pydantic import ValidationError

from aktypes import events as ev
from aktypes.events import EVENT_ADAPTER, Envelope, InvalidEntryError, envelope_from_fields
from aktypes.events.streams import dlq_stream, status_stream
from aktypes.testing import example_envelope, example_payloads

EXAMPLES = example_payloads()
ORDER = EXAMPLES[0].order_id  # type: ignore[attr-defined]
LEASE = EXAMPLES[4].lease_id  # type: ignore[attr-defined]
AT = {"height": 1200, "tx_index": 0, "event_index": 2}


envelope = example_envelope


def union_members() -> set[type]:
    union = typing.get_args(ev.Event)[0]
    return set(typing.get_args(union))


def test_examples_cover_every_payload_type() -> None:
    assert {type(e) for e in EXAMPLES} == union_members()
    assert len(EXAMPLES) == len(union_members())


def test_wire_tags_are_unique_and_dotted() -> None:
    tags = [e.type for e in EXAMPLES]  # type: ignore[attr-defined]
    assert len(set(tags)) == len(tags)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+", tag) for tag in tags)


def test_every_stream_type_is_in_the_union() -> None:
    for types in ev.STREAM_TYPES.values():
        assert set(types) <= union_members()
    assert status_stream("cluster") == "akash.provider.cluster.status"
    assert dlq_stream(ev.streams.CHAIN_TX) == "akash.provider.chain.tx.dlq"
    with pytest.raises(ValueError, match="unknown service"):
        status_stream("nope")


@pytest.mark.parametrize("payload", EXAMPLES, ids=lambda p: p.type)
def test_round_trip_through_stream_fields(payload: ev.Payload) -> None:
    original = envelope(payload)
    fields = original.to_fields()
    assert all(isinstance(v, str) for v in fields.values())
    back = envelope_from_fields({k.encode(): v.encode() for k, v in fields.items()})
    assert back == original
    assert EVENT_ADAPTER.validate_json(fields["payload"]) == payload


def test_envelope_fields_are_plain_and_causation_links() -> None:
    cause = envelope(EXAMPLES[0])
    reply = Envelope.wrap(
        ev.UnreserveResources(order_id=ORDER), producer="bidengine", causation=cause, reply_to="r1"
    )
    fields = reply.to_fields()
    assert fields["causation_id"] == cause.id
    assert fields["correlation_id"] == cause.id  # a chain starts its correlation at the first cause
    assert fields["reply_to"] == "r1"
    assert fields["schema"] == "1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", fields["time"])


def test_readers_tolerate_fields_added_later() -> None:
    data = json.loads(ev.OrderClosed(order_id=ORDER, **AT).model_dump_json())
    data["new_field"] = "from a newer producer"
    assert EVENT_ADAPTER.validate_python(data) == ev.OrderClosed(order_id=ORDER, **AT)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda f: f.pop("payload"), "lacks fields"),
        (lambda f: f.__setitem__("payload", "{"), "invalid"),
        (lambda f: f.__setitem__("type", "chain.order.closed"), "does not match"),
        (lambda f: f.__setitem__("payload", '{"type": "no.such.event"}'), "invalid"),
        (lambda f: f.__setitem__("time", "yesterday"), "envelope is invalid"),
    ],
)
def test_bad_entries_say_what_is_wrong(change: typing.Any, fragment: str) -> None:
    fields = envelope(EXAMPLES[0]).to_fields()
    change(fields)
    with pytest.raises(InvalidEntryError, match=fragment):
        envelope_from_fields(fields)


def test_payloads_validate_their_fields() -> None:
    with pytest.raises(ValidationError):
        ev.BroadcastTx(key="", msgs=[ev.WithdrawLease(lease_id=LEASE)])
    with pytest.raises(ValidationError):
        ev.BroadcastTx(key="k", msgs=[])
    with pytest.raises(ValidationError):
        ev.DeploymentCreated(deployment_id=LEASE.deployment_id, hash="not-hex", **AT)
    with pytest.raises(ValidationError):
        Envelope[ev.Payload](producer="", payload=EXAMPLES[0])
    with pytest.raises(ValidationError, match="timezone"):
        Envelope[ev.Payload](producer="p", payload=EXAMPLES[0], time=datetime(2026, 1, 1))


def test_chain_positions_are_unique_keys() -> None:
    assert ev.OrderCreated(order_id=ORDER, **AT).position == "1200/0/2"
    assert (
        ev.LeaseClosed(
            lease_id=LEASE, reason=ev.LeaseClosedReason.OWNER, height=9, event_index=1
        ).position
        == "9/block/1"
    )
    assert ev.LeaseClosedReason.INSUFFICIENT_FUNDS.code == 20000
