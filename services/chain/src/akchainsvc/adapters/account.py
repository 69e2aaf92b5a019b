"""The provider account on the node: its number and next sequence, shared by every
transaction the relay signs."""

from __future__ import annotations

import asyncio
import logging

from akchain.lcd import LCDClient
from akchainsvc import metrics

log = logging.getLogger("akchainsvc.account")


class Account:
    """The provider account's number and next sequence, shared by every transaction."""

    def __init__(self, lcd: LCDClient, address: str) -> None:
        self.lcd = lcd
        self.address = address
        self.number: int | None = None
        self.next_sequence = 0
        self.lock = asyncio.Lock()

    async def load(self) -> None:
        account = await self.lcd.account(self.address)
        self.number, self.next_sequence = account.account_number, account.sequence

    async def resync(self) -> None:
        """Re-read the sequence from the node (takes the signing lock)."""
        async with self.lock:
            await self.resync_locked()

    async def resync_locked(self, expected: int | None = None) -> None:
        """Adopt ``expected`` (from a mismatch error) or the node's sequence; lock held."""
        before = self.next_sequence
        if expected is not None and self.number is not None:
            self.next_sequence = expected
        else:
            await self.load()
        metrics.SEQUENCE_RESYNCS.inc()
        log.info("account sequence re-synced: %d -> %d", before, self.next_sequence)
