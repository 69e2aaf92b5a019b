"""Sign, broadcast and wait: the simple way for one key to send transactions.

Keeps the account number and sequence between transactions and re-reads them from the
node when the chain reports a sequence mismatch, so tools and tests can send transactions
back to back. The provider's own pipeline (in the chain relay) adds persistence and
exactly-once delivery on top of the same pieces.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from google.protobuf.message import Message

from akchain.errors import SequenceMismatch, rejection
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.models import TxResult
from akchain.rpc import RPCClient
from akchain.tx import Fee, sign_tx


class Wallet:
    """One signer's transactions against one node. Not safe for concurrent ``send`` calls."""

    def __init__(
        self,
        signer: Signer,
        rpc: RPCClient,
        lcd: LCDClient,
        *,
        chain_id: str,
        fee: Fee | None = None,
    ) -> None:
        self.signer = signer
        self.rpc = rpc
        self.lcd = lcd
        self.chain_id = chain_id
        self.fee = fee or Fee()
        self._account: tuple[int, int] | None = None  # (number, next sequence)
        self._lock = asyncio.Lock()

    @property
    def address(self) -> str:
        return self.signer.address

    async def refresh(self) -> tuple[int, int]:
        account = await self.lcd.account(self.signer.address)
        self._account = (account.account_number, account.sequence)
        return self._account

    def sign(
        self, messages: Sequence[Message], *, memo: str = "", sequence: int | None = None
    ) -> bytes:
        if self._account is None:
            raise RuntimeError("call refresh() before signing")
        number, next_sequence = self._account
        return sign_tx(
            self.signer,
            messages,
            chain_id=self.chain_id,
            account_number=number,
            sequence=next_sequence if sequence is None else sequence,
            fee=self.fee,
            memo=memo,
        )

    async def broadcast(
        self, messages: Sequence[Message], *, memo: str = "", attempts: int = 3
    ) -> TxResult:
        """Sign and submit; the CheckTx result (raises ``TxRejected`` if the node refuses it)."""
        async with self._lock:
            if self._account is None:
                await self.refresh()
            for attempt in range(attempts):
                raw = self.sign(messages, memo=memo)
                result = await self.rpc.broadcast_tx_sync(raw)
                if result.code == 0:
                    number, sequence = self._account  # type: ignore[misc]
                    self._account = (number, sequence + 1)
                    return result
                error = rejection(result.code, result.codespace, result.log, result.hash)
                if not isinstance(error, SequenceMismatch) or attempt == attempts - 1:
                    raise error
                await self.refresh()
            raise AssertionError("unreachable")  # pragma: no cover

    async def send(self, *messages: Message, memo: str = "", timeout: float = 30.0) -> TxResult:
        """Broadcast and wait until committed; ``TxRejected`` if the chain refused it."""
        submitted = await self.broadcast(messages, memo=memo)
        committed = await self.rpc.wait_tx(submitted.hash, timeout=timeout)
        if not committed.ok:
            raise rejection(committed.code, committed.codespace, committed.log, committed.hash)
        return committed
