"""Chain events into ``akash.chain.events``, each exactly once, no block skipped.

The relay follows the chain block by block from a cursor kept in Redis (the last height
whose events are published). A block's events and the cursor's move to that height are one
Redis transaction, guarded by a per-height mark: a relay killed at any moment resumes at
the first unpublished block, and two relays racing on the same height publish it once.
Gaps (a missed websocket push, a node restart, a relay that was down) are filled because
the follower fetches every height in turn rather than trusting pushes. Each commit is fenced
by the relay's lease: a relay that lost it to another writes nothing (and stops).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from akbus import Bus, BusTx
from akbus.retry import until_reachable
from akchain.events import Backoff, BlockFollower
from akchain.rpc import RPCClient
from akchainsvc import metrics
from akchainsvc.domain.events import concerns
from akservice.leadership import Fence, unfenced
from aktypes.events.chain import ChainEvent
from aktypes.events.streams import CHAIN_EVENTS

log = logging.getLogger("akchainsvc.ingest")

CURSOR_KEY = "akchainsvc:cursor"


def block_mark(height: int) -> str:
    return f"akchainsvc:block:{height}"


class EventRelay:
    """Follows the chain and publishes the events that concern ``provider``."""

    def __init__(
        self,
        bus: Bus,
        rpc: RPCClient,
        provider: str,
        *,
        start_height: int | None = None,
        poll_interval: float = 1.0,
        on_error: Callable[[Exception], None] | None = None,
        fence: Fence = unfenced,
    ) -> None:
        self.bus = bus
        self.fence = fence
        self.rpc = rpc
        self.provider = provider
        self.start_height = start_height
        self.poll_interval = poll_interval
        self.on_error = on_error or (lambda _: None)
        self.height = 0  # last height published
        self.follower: BlockFollower | None = None

    @property
    def node_height(self) -> int:
        return self.follower.node_height if self.follower else 0

    async def _first_height(self) -> int:
        stored = await until_reachable("cursor", lambda: self.bus.backend.get(CURSOR_KEY))
        if stored is not None:
            return int(stored) + 1
        if self.start_height is not None:
            return self.start_height
        return (await self.rpc.status()).latest_height

    async def run(self) -> None:
        first = await self._first_height()
        self.height = first - 1
        log.info("relaying chain events from height %d", first)
        self.follower = BlockFollower(
            self.rpc,
            first,
            poll_interval=self.poll_interval,
            backoff=Backoff(),
            on_error=self._node_error,
        )
        async for block in self.follower:
            events = [e for e in block.events if concerns(e, self.provider)]
            applied = await self._commit(block.height, events)
            self.height = block.height
            metrics.RELAY_HEIGHT.set(block.height)
            metrics.NODE_HEIGHT.set(self.node_height)
            if applied:
                for event in events:
                    metrics.EVENTS_PUBLISHED.labels(type(event).__name__).inc()
            else:
                log.warning("block %d was already published (another relay?)", block.height)

    async def _commit(self, height: int, events: list[ChainEvent]) -> bool:
        """Publish a block's events and move the cursor, atomically, once per height."""

        async def publish(tx: BusTx) -> None:
            await self.fence(tx)
            for event in events:
                tx.publish(CHAIN_EVENTS, event)
            tx.state.set(CURSOR_KEY, str(height))

        mark = block_mark(height)
        applied: bool = await until_reachable(
            "publish block", lambda: self.bus.apply_once(mark, publish)
        )
        return applied

    def _node_error(self, exc: Exception) -> None:
        log.warning("node unavailable while following blocks: %s", exc)
        self.on_error(exc)
