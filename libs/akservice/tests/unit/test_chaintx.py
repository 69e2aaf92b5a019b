"""A command's transaction through the relay: sent once per key, earlier answers reused, a
failed key retried under the next key only when asked."""

from __future__ import annotations

import asyncio

import pytest

from akbus import Bus
from akbus.testing import memory_bus
from akservice.chaintx import NoAnswer, broadcast_once, relay_address
from aktypes.events import (
    BroadcastTx,
    ChainStatus,
    Send,
    TxCommitted,
    TxFailed,
    envelope_from_fields,
)
from aktypes.events.streams import CHAIN_RESULTS, CHAIN_TX
from aktypes.testing import address

SEND = Send(to_address=address(3), amount=[{"denom": "uakt", "amount": 1}])  # type: ignore[list-item]


async def commands(bus: Bus) -> list[BroadcastTx]:
    entries = await bus.backend.entries(CHAIN_TX)
    return [envelope_from_fields(e.fields).payload for e in entries]


async def relay(bus: Bus, answer: type[TxCommitted | TxFailed], seen: int = 0) -> None:
    """Answer the next command after the ``seen`` first ones, as the relay would."""
    while len(sent := await commands(bus)) <= seen:
        await asyncio.sleep(0.01)
    key = sent[seen].key
    if answer is TxCommitted:
        await bus.publish(CHAIN_RESULTS, TxCommitted(key=key, tx_hash="AB", height=7))
    else:
        await bus.publish(CHAIN_RESULTS, TxFailed(key=key, code=5, log="insufficient funds"))


async def test_a_command_is_sent_once_and_its_answer_reused() -> None:
    bus = memory_bus()
    answering = asyncio.create_task(relay(bus, TxCommitted))
    first = await broadcast_once(bus, "send/1", [SEND], timeout=10)
    await answering
    assert (first.key, first.earlier, type(first.result)) == ("send/1", False, TxCommitted)
    again = await broadcast_once(bus, "send/1", [SEND], timeout=10)
    assert again.earlier and again.result == first.result
    assert [c.key for c in await commands(bus)] == ["send/1"]


async def test_a_failed_key_is_retried_under_the_next_key_only_when_asked() -> None:
    bus = memory_bus()
    answering = asyncio.create_task(relay(bus, TxFailed))
    failed = await broadcast_once(bus, "k", [SEND], timeout=10, retry_failed=True)
    await answering
    assert isinstance(failed.result, TxFailed) and not failed.earlier
    assert (await broadcast_once(bus, "k", [SEND], timeout=10)).earlier  # not asked: reused
    answering = asyncio.create_task(relay(bus, TxCommitted, seen=1))
    retried = await broadcast_once(bus, "k", [SEND], timeout=10, retry_failed=True)
    await answering
    assert (retried.key, type(retried.result)) == ("k/retry-2", TxCommitted)
    assert [c.key for c in await commands(bus)] == ["k", "k/retry-2"]
    assert (await broadcast_once(bus, "k", [SEND], timeout=10, retry_failed=True)).earlier


async def test_no_answer_says_the_relay_may_be_down_and_the_address_comes_from_its_status() -> None:
    bus = memory_bus()
    with pytest.raises(NoAnswer, match="is the chain relay running"):
        await broadcast_once(bus, "lonely", [SEND], timeout=0.2)
    assert await relay_address(bus, wait_s=0) is None
    await bus.publish_status("chain", ChainStatus(height=1, node_height=1, provider=address(2)))
    assert await relay_address(bus, wait_s=0) == address(2)


async def test_again_steps_past_every_answered_key() -> None:
    bus = memory_bus()
    answering = asyncio.create_task(relay(bus, TxCommitted))
    await broadcast_once(bus, "u", [SEND], timeout=10)
    await answering
    answering = asyncio.create_task(relay(bus, TxCommitted, seen=1))
    again = await broadcast_once(bus, "u", [SEND], timeout=10, again=True)
    await answering
    assert (again.key, again.earlier) == ("u/retry-2", False)
    assert [c.key for c in await commands(bus)] == ["u", "u/retry-2"]
