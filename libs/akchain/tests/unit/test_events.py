"""Decoding Akash's typed events from CometBFT block results, as the Cosmos SDK encodes them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from akchain.events import EventDecodeError, decode_block_results, decode_event
from aktypes.coin import Dec, DecCoin
from aktypes.events import chain as ev
from aktypes.events.base import LeaseClosedReason
from aktypes.ids import LeaseID, OrderID
from aktypes.testing import address

OWNER, PROVIDER = address(1), address(2)


def typed(kind: str, msg_index: int | None = 0, **fields: Any) -> dict[str, Any]:
    """An ABCI event the way the SDK's TypedEventToEvent builds it: sorted keys, JSON values."""
    attributes = [
        {"key": k, "value": json.dumps(fields[k], separators=(",", ":")), "index": True}
        for k in sorted(fields)
    ]
    if msg_index is not None:
        attributes.append({"key": "msg_index", "value": str(msg_index), "index": True})
    return {"type": kind, "attributes": attributes}


LEASE = {"owner": OWNER, "dseq": "42", "gseq": 1, "oseq": 2, "provider": PROVIDER, "bseq": 0}
ORDER = {"owner": OWNER, "dseq": "42", "gseq": 1, "oseq": 2}


def results(*txs: dict[str, Any], block: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"height": "10", "txs_results": list(txs), "finalize_block_events": block or []}


def tx(*events: dict[str, Any], code: int = 0) -> dict[str, Any]:
    return {"code": code, "events": list(events)}


def test_typed_events_become_chain_events_with_their_position() -> None:
    noise = {
        "type": "message",
        "attributes": [{"key": "action", "value": "/akash.market.v1beta5.MsgCreateLease"}],
    }
    decoded = decode_block_results(
        results(
            tx(noise, typed("akash.market.v1.EventOrderCreated", id=ORDER)),
            tx(
                noise,
                typed(
                    "akash.market.v1.EventLeaseCreated",
                    id=LEASE,
                    price={"denom": "uact", "amount": "1.250000000000000000"},
                ),
                typed(
                    "akash.market.v1.EventLeaseClosed",
                    id=LEASE,
                    reason="lease_closed_reason_insufficient_funds",
                ),
            ),
            block=[
                typed(
                    "akash.deployment.v1.EventDeploymentUpdated",
                    msg_index=None,
                    id={"owner": OWNER, "dseq": "42"},
                    hash=base64.b64encode(bytes(range(32))).decode(),
                )
            ],
        )
    )
    assert [e.position for e in decoded] == ["10/0/1", "10/1/1", "10/1/2", "10/block/0"]
    order, created, closed, updated = decoded
    assert isinstance(order, ev.OrderCreated) and order.order_id == OrderID(
        owner=OWNER, dseq=42, gseq=1, oseq=2
    )
    assert isinstance(created, ev.LeaseCreated)
    assert created.lease_id == LeaseID(owner=OWNER, dseq=42, gseq=1, oseq=2, provider=PROVIDER)
    assert created.price == DecCoin(denom="uact", amount=Dec("1.25"))
    assert (
        isinstance(closed, ev.LeaseClosed) and closed.reason == LeaseClosedReason.INSUFFICIENT_FUNDS
    )
    assert isinstance(updated, ev.DeploymentUpdated) and updated.hash == bytes(range(32)).hex()
    assert updated.tx_index is None


def test_failed_transactions_and_unknown_types_are_skipped() -> None:
    decoded = decode_block_results(
        results(
            tx(typed("akash.market.v1.EventOrderCreated", id=ORDER), code=5),
            tx(
                typed("akash.market.v1.EventSomethingNew", id=ORDER),
                typed("cosmos.bank.v1beta1.EventX", a=1),
            ),
        )
    )
    assert decoded == []


def test_provider_and_audit_events() -> None:
    decoded = decode_block_results(
        results(
            tx(
                typed("akash.provider.v1beta4.EventProviderUpdated", owner=PROVIDER),
                typed("akash.audit.v1.EventTrustedAuditorCreated", owner=PROVIDER, auditor=OWNER),
                typed("akash.audit.v1.EventTrustedAuditorDeleted", owner=PROVIDER, auditor=OWNER),
            )
        )
    )
    assert [type(e).__name__ for e in decoded] == [
        "ProviderUpdated",
        "AuditorAttributesChanged",
        "AuditorAttributesChanged",
    ]
    assert [getattr(e, "action", None) for e in decoded] == [None, "signed", "deleted"]


def test_a_known_event_with_unreadable_attributes_is_an_error_not_a_silent_skip() -> None:
    broken = typed("akash.market.v1.EventBidCreated", id={"owner": OWNER})
    with pytest.raises(EventDecodeError, match="EventBidCreated at 10/0/3"):
        decode_event(broken, height=10, tx_index=0, event_index=3)


def test_numeric_lease_close_reasons_are_understood() -> None:
    event = typed("akash.market.v1.EventLeaseClosed", id=LEASE, reason=10003)
    decoded = decode_event(event, height=1, tx_index=0, event_index=0)
    assert (
        isinstance(decoded, ev.LeaseClosed) and decoded.reason == LeaseClosedReason.MANIFEST_TIMEOUT
    )
