"""Akash's typed chain events, read from CometBFT ``block_results``, and a gap-free block follower.

The Cosmos SDK turns a typed event (``EmitTypedEvent``) into an ABCI event whose type is the
proto name (``akash.market.v1.EventOrderCreated``) and whose attributes are the message's
fields, each value the field's JSON (``{"owner":"akash1…","dseq":"42",…}``); transactions'
events also carry ``msg_index``. Events of transaction ``i`` are in ``txs_results[i].events``;
events of the block itself (escrow settling at the end of a block) are in
``finalize_block_events``. Each decoded event keeps its position, ``(height, tx index,
event index)``, which is how the relay publishes it exactly once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import random
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from akchain.convert import (
    bid_id_from_json,
    dec_coin_from_json,
    deployment_id_from_json,
    group_id_from_json,
    lease_id_from_json,
    order_id_from_json,
)
from akchain.errors import BadResponse, ChainError, NodeUnavailable
from akchain.rpc import RPCClient, RPCError
from akchain.versions import AUDIT, DEPLOYMENT_TYPES, MARKET_TYPES, PROVIDER
from aktypes.events import chain as ev
from aktypes.events.base import LeaseClosedReason

log = logging.getLogger(__name__)

Attrs = Mapping[str, Any]
_Builder = Callable[[Attrs, dict[str, Any]], ev.ChainEvent]

_MARKET = f"akash.market.{MARKET_TYPES}"
_DEPLOYMENT = f"akash.deployment.{DEPLOYMENT_TYPES}"


def _hash(value: str) -> str:
    return base64.b64decode(value or "").hex()


def _reason(value: Any) -> LeaseClosedReason:
    if isinstance(value, int) or str(value).isdigit():
        by_code = {r.code: r for r in LeaseClosedReason}
        return by_code.get(int(value), LeaseClosedReason.INVALID)
    return LeaseClosedReason(value)


BUILDERS: dict[str, _Builder] = {
    f"{_MARKET}.EventOrderCreated": lambda a, p: ev.OrderCreated(
        order_id=order_id_from_json(a["id"]), **p
    ),
    f"{_MARKET}.EventOrderClosed": lambda a, p: ev.OrderClosed(
        order_id=order_id_from_json(a["id"]), **p
    ),
    f"{_MARKET}.EventBidCreated": lambda a, p: ev.BidCreated(
        bid_id=bid_id_from_json(a["id"]), price=dec_coin_from_json(a["price"]), **p
    ),
    f"{_MARKET}.EventBidClosed": lambda a, p: ev.BidClosed(bid_id=bid_id_from_json(a["id"]), **p),
    f"{_MARKET}.EventLeaseCreated": lambda a, p: ev.LeaseCreated(
        lease_id=lease_id_from_json(a["id"]), price=dec_coin_from_json(a["price"]), **p
    ),
    f"{_MARKET}.EventLeaseClosed": lambda a, p: ev.LeaseClosed(
        lease_id=lease_id_from_json(a["id"]), reason=_reason(a.get("reason", 0)), **p
    ),
    f"{_MARKET}.EventLeaseReclaimStarted": lambda a, p: ev.LeaseReclaimStarted(
        lease_id=lease_id_from_json(a["id"]),
        reason=_reason(a.get("reason", 0)),
        deadline=int(a.get("deadline") or 0),
        **p,
    ),
    f"{_DEPLOYMENT}.EventDeploymentCreated": lambda a, p: ev.DeploymentCreated(
        deployment_id=deployment_id_from_json(a["id"]), hash=_hash(a.get("hash", "")), **p
    ),
    f"{_DEPLOYMENT}.EventDeploymentUpdated": lambda a, p: ev.DeploymentUpdated(
        deployment_id=deployment_id_from_json(a["id"]), hash=_hash(a.get("hash", "")), **p
    ),
    f"{_DEPLOYMENT}.EventDeploymentClosed": lambda a, p: ev.DeploymentClosed(
        deployment_id=deployment_id_from_json(a["id"]), **p
    ),
    f"{_DEPLOYMENT}.EventGroupStarted": lambda a, p: ev.GroupStarted(
        group_id=group_id_from_json(a["id"]), **p
    ),
    f"{_DEPLOYMENT}.EventGroupPaused": lambda a, p: ev.GroupPaused(
        group_id=group_id_from_json(a["id"]), **p
    ),
    f"{_DEPLOYMENT}.EventGroupClosed": lambda a, p: ev.GroupClosed(
        group_id=group_id_from_json(a["id"]), **p
    ),
    f"akash.provider.{PROVIDER}.EventProviderCreated": lambda a, p: ev.ProviderUpdated(
        owner=a["owner"], **p
    ),
    f"akash.provider.{PROVIDER}.EventProviderUpdated": lambda a, p: ev.ProviderUpdated(
        owner=a["owner"], **p
    ),
    f"akash.provider.{PROVIDER}.EventProviderDeleted": lambda a, p: ev.ProviderUpdated(
        owner=a["owner"], **p
    ),
    f"akash.audit.{AUDIT}.EventTrustedAuditorCreated": lambda a, p: ev.AuditorAttributesChanged(
        owner=a["owner"], auditor=a["auditor"], action="signed", **p
    ),
    f"akash.audit.{AUDIT}.EventTrustedAuditorDeleted": lambda a, p: ev.AuditorAttributesChanged(
        owner=a["owner"], auditor=a["auditor"], action="deleted", **p
    ),
}
"""Akash's typed events the provider reacts to, by ABCI event type."""


class EventDecodeError(ChainError):
    """A known event type whose attributes cannot be read."""


def _attribute_value(raw: Any) -> Any:
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw


def decode_event(
    event: Mapping[str, Any], *, height: int, tx_index: int | None, event_index: int
) -> ev.ChainEvent | None:
    """One ABCI event as an :mod:`aktypes` chain event; ``None`` for types the provider ignores."""
    builder = BUILDERS.get(str(event.get("type", "")))
    if builder is None:
        return None
    attrs = {a["key"]: _attribute_value(a.get("value")) for a in event.get("attributes") or ()}
    position = {"height": height, "tx_index": tx_index, "event_index": event_index}
    try:
        return builder(attrs, position)
    except (KeyError, TypeError, ValueError) as exc:
        raise EventDecodeError(
            f"{event.get('type')} at {height}/{tx_index}/{event_index}: {exc}"
        ) from exc


def decode_block_results(results: Mapping[str, Any]) -> list[ev.ChainEvent]:
    """Every known event of one block, in chain order: transactions first, then the block's own."""
    height = int(results["height"])
    decoded: list[ev.ChainEvent] = []
    for tx_index, tx in enumerate(results.get("txs_results") or ()):
        if int(tx.get("code") or 0) != 0:
            continue  # a failed transaction's events are discarded by the chain
        for event_index, event in enumerate(tx.get("events") or ()):
            item = decode_event(event, height=height, tx_index=tx_index, event_index=event_index)
            if item is not None:
                decoded.append(item)
    block_events = results.get("finalize_block_events")
    if block_events is None:  # CometBFT < 0.38 split them in two
        block_events = [
            *(results.get("begin_block_events") or ()),
            *(results.get("end_block_events") or ()),
        ]
    for event_index, event in enumerate(block_events):
        item = decode_event(event, height=height, tx_index=None, event_index=event_index)
        if item is not None:
            decoded.append(item)
    return decoded


@dataclass(frozen=True)
class Block:
    """A block's decoded events."""

    height: int
    events: list[ev.ChainEvent] = field(default_factory=list)


@dataclass
class Backoff:
    """Exponential backoff with full jitter, reset after a success."""

    initial: float = 0.2
    maximum: float = 10.0
    _next: float = 0.0

    def reset(self) -> None:
        self._next = 0.0

    def delay(self) -> float:
        self._next = min(self.maximum, self._next * 2 if self._next else self.initial)
        return random.uniform(self._next / 2, self._next)  # noqa: S311 - jitter, not crypto


class BlockFollower:
    """Yields every block from ``start_height`` on, in order, none skipped.

    A websocket subscription to new block headers wakes the follower; whatever the
    subscription says, the follower fetches each height in turn, so a dropped push, a
    node restart or a reconnect cannot open a gap. When the websocket is down it polls.
    """

    def __init__(
        self,
        rpc: RPCClient,
        start_height: int,
        *,
        poll_interval: float = 1.0,
        backoff: Backoff | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self.rpc = rpc
        self.next_height = max(start_height, 1)
        self.node_height = 0
        self.poll_interval = poll_interval
        self.backoff = backoff or Backoff()
        self.on_error = on_error or (lambda _: None)
        self._wake = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None

    async def _listen(self) -> None:
        backoff = Backoff(initial=self.backoff.initial, maximum=self.backoff.maximum)
        while True:
            try:
                async for height in self.rpc.new_block_heights():
                    backoff.reset()
                    self.node_height = max(self.node_height, height)
                    self._wake.set()
            except ChainError as exc:
                log.debug("new-block subscription lost: %s", exc)
            await asyncio.sleep(backoff.delay())

    async def _refresh_node_height(self) -> None:
        status = await self.rpc.status()
        self.node_height = status.latest_height
        if self.next_height < status.earliest_height:
            raise ChainError(
                f"the node keeps blocks from {status.earliest_height} on; "
                f"height {self.next_height} "
                "is gone (use an archive node or reset the cursor)"
            )

    async def __aiter__(self) -> AsyncIterator[Block]:
        self._listener = asyncio.create_task(self._listen(), name="akchain-new-blocks")
        try:
            while True:
                self._wake.clear()
                try:
                    await self._refresh_node_height()
                    while self.next_height <= self.node_height:
                        results = await self.rpc.block_results(self.next_height)
                        block = Block(self.next_height, decode_block_results(results))
                        yield block
                        self.next_height += 1
                    self.backoff.reset()
                except (NodeUnavailable, RPCError, BadResponse) as exc:
                    self.on_error(exc)
                    await asyncio.sleep(self.backoff.delay())
                    continue
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a
                # cancellation that arrives as the event is set, and the follower runs on
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_interval):
                        await self._wake.wait()
        finally:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
