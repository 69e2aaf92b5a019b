"""The provider account's transaction pipeline: BroadcastTx commands in, results out.

Each command ``key`` is carried through a record in Redis (``akchainsvc:tx:<key>``):

    claimed ─ sign ─▶ signed ─ CheckTx ok ─▶ broadcast ─ in a block ─▶ committed | failed
                        ▲                       │
                        └── sequence moved on ──┘   (re-signed with a fresh sequence)

- A command is claimed once per key (a guarded transaction): a second command with the same
  key, or the same command delivered again, never leads to a second broadcast.
- The signed bytes are stored *before* they are broadcast. A relay killed mid-way resumes
  from the record: it looks the transaction up by hash, re-sends the same bytes if the node
  lost them, and signs again only when the account's sequence has provably moved past them.
- Signing and CheckTx happen one transaction at a time, so sequences are handed out in
  order; several transactions can wait for their block at once (``tx_concurrency``).
- The sequence is re-read after a mismatch (someone else used the key, a node restarted):
  from the "expected N" of the error when there is one, else from the node.
- The result is published together with the record's final state, in one transaction.
- Every write (the claim, the signed bytes before their broadcast, the result) is fenced
  by the relay's lease: a relay that lost it to its standby writes and broadcasts nothing
  more, and the standby resumes each command from its record.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from akbus import Bus, BusTx, Message
from akbus.retry import until_reachable
from akchain import msgs
from akchain.errors import ChainError, NodeUnavailable, NotFound, SequenceMismatch
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.models import TxResult
from akchain.rpc import RPCClient
from akchain.tx import Fee, sign_tx, tx_hash
from akchainsvc import metrics
from akchainsvc.adapters.account import Account
from akchainsvc.domain.verdicts import Verdict, verdict
from akchainsvc.errors import Refused
from akservice.leadership import Fence, unfenced
from aktypes.events import BroadcastTx, TxCommitted, TxFailed
from aktypes.events.streams import CHAIN_RESULTS

log = logging.getLogger("akchainsvc.handlers")

RECORD_TTL_S = 7 * 24 * 3600
LOCAL_CODESPACE = "akchainsvc"  # failures decided here, before anything reached the chain


def record_key(key: str) -> str:
    return f"akchainsvc:tx:{key}"


def claim_mark(key: str) -> str:
    return f"akchainsvc:claim:{key}"


@dataclass
class Job:
    """One command on its way to the chain."""

    command: BroadcastTx
    protos: list[Any]
    attempts: int
    gas_scale: float
    raw: bytes | None
    sequence: int


class TxPipeline:
    """Handles ``BroadcastTx`` for one signer."""

    def __init__(
        self,
        bus: Bus,
        rpc: RPCClient,
        lcd: LCDClient,
        signer: Signer,
        *,
        chain_id: str,
        fee: Callable[[int], Fee],
        commit_timeout: float = 30.0,
        poll_interval: float = 0.5,
        max_attempts: int = 10,
        fence: Fence = unfenced,
    ) -> None:
        self.bus = bus
        self.fence = fence
        self.rpc = rpc
        self.lcd = lcd
        self.signer = signer
        self.chain_id = chain_id
        self.fee = fee
        self.commit_timeout = commit_timeout
        self.poll_interval = poll_interval
        self.max_attempts = max_attempts
        self.account = Account(lcd, signer.address)
        self.in_flight = 0
        self.last_error = ""

    # -- the handler ----------------------------------------------------------------------
    async def handle(self, message: Message[BroadcastTx]) -> None:
        command = message.payload
        record = await self._claim(message)
        if record is None:
            log.info("command %s is a duplicate of one already taken", command.key)
            metrics.TXS.labels("duplicate").inc()
            return
        if record.get("state") in ("committed", "failed"):
            return  # answered before this delivery
        self.in_flight += 1
        try:
            await self._drive(message, record)
        finally:
            self.in_flight -= 1

    async def _claim(self, message: Message[BroadcastTx]) -> dict[str, str] | None:
        """The command's record, created now if new; ``None`` if another command owns the key."""
        key = record_key(message.payload.key)

        async def create(tx: BusTx) -> None:
            await self.fence(tx)
            tx.state.hset(key, {"owner": message.envelope.id, "state": "claimed", "attempts": "0"})
            tx.state.expire(key, RECORD_TTL_S)

        await until_reachable(
            "claim",
            lambda: self.bus.apply_once(claim_mark(message.payload.key), create, durable=True),
        )
        record = await until_reachable("record", lambda: self.bus.backend.hgetall(key))
        if record.get("owner") != message.envelope.id:
            return None
        return record

    async def _save(self, key: str, values: dict[str, str]) -> None:
        async def write(tx: BusTx) -> None:
            await self.fence(tx)
            tx.state.hset(record_key(key), values)

        await until_reachable("record", lambda: self.bus.transact(write, durable=True))

    async def _finish(self, message: Message[BroadcastTx], result: TxCommitted | TxFailed) -> None:
        state = "committed" if isinstance(result, TxCommitted) else "failed"

        async def write(tx: BusTx) -> None:
            await self.fence(tx)
            tx.publish(CHAIN_RESULTS, result)
            tx.state.hset(record_key(message.payload.key), {"state": state})

        await until_reachable(
            "result", lambda: self.bus.transact(write, cause=message.envelope, durable=True)
        )
        metrics.TXS.labels(state).inc()
        if isinstance(result, TxFailed):
            log.warning(
                "tx %s failed: %s %s %s", result.key, result.codespace, result.code, result.log
            )

    # -- driving one command to its end ---------------------------------------------------
    async def _drive(self, message: Message[BroadcastTx], record: dict[str, str]) -> None:
        command = message.payload
        try:
            self._check_signers(command)
            protos = [msgs.from_command(m, sender=self.signer.address) for m in command.msgs]
        except (Refused, ValueError) as exc:
            await self._finish(message, self._failed(command, str(exc)))
            return
        job = Job(
            command=command,
            protos=protos,
            attempts=int(record.get("attempts", "0")),
            gas_scale=float(record.get("gas_scale", "1")),
            raw=bytes.fromhex(record["raw"]) if record.get("raw") else None,
            sequence=int(record.get("sequence", "-1")),
        )
        resumed = job.raw is not None
        while True:
            if job.raw is None:
                if job.attempts >= self.max_attempts:
                    text = f"gave up after {job.attempts} signatures: {self.last_error}"
                    await self._finish(message, self._failed(command, text, job.attempts))
                    return
                failure = await self._sign_and_submit(job)
                if failure is not None:
                    await self._finish(message, failure)
                    return
                if job.raw is None:
                    continue  # not accepted: sign again (fresh sequence or more gas)
            result = await self._await_commit(job.raw, job.sequence, resend_first=resumed)
            resumed = False
            if result is not None and result.ok:
                committed = TxCommitted(
                    key=command.key,
                    tx_hash=result.hash,
                    height=result.height,
                    gas_wanted=result.gas_wanted,
                    gas_used=result.gas_used,
                )
                await self._finish(message, committed)
                return
            if result is not None:
                self.last_error = f"{result.codespace} {result.code}: {result.log}"
                action = verdict(result.code, result.codespace)
                if action is Verdict.RESIGN:
                    await self._node(self.account.resync)
                elif action is Verdict.MORE_GAS:
                    job.gas_scale *= 2
                elif action is not Verdict.RETRY:
                    failed = TxFailed(
                        key=command.key,
                        code=result.code,
                        codespace=result.codespace,
                        log=result.log,
                        tx_hash=result.hash,
                        attempts=max(job.attempts, 1),
                    )
                    await self._finish(message, failed)
                    return
            job.raw = None  # lost and overtaken, or refused in its block: sign again
            await self._save(
                command.key, {"state": "claimed", "raw": "", "gas_scale": str(job.gas_scale)}
            )

    @staticmethod
    def _failed(command: BroadcastTx, text: str, attempts: int = 1) -> TxFailed:
        return TxFailed(
            key=command.key, code=1, codespace=LOCAL_CODESPACE, log=text, attempts=max(attempts, 1)
        )

    def _check_signers(self, command: BroadcastTx) -> None:
        for item in command.msgs:
            ident = getattr(item, "bid_id", None) or getattr(item, "lease_id", None)
            owner = getattr(ident, "provider", None)
            if owner is not None and owner != self.signer.address:
                raise Refused(
                    f"{item.type} for provider {owner}, "
                    f"but this relay signs for {self.signer.address}"
                )

    async def _sign_and_submit(self, job: Job) -> TxFailed | None:
        """Sign with the next sequence, store the bytes, CheckTx; ``job.raw`` set when accepted."""
        base = self.fee(len(job.protos))
        fee = Fee(
            gas_limit=int(base.gas_limit * job.gas_scale),
            amount=int(base.amount * job.gas_scale),
            denom=base.denom,
        )
        job.attempts += 1
        async with self.account.lock:
            if self.account.number is None:
                await self._node(self.account.load)
            number = self.account.number or 0
            sequence = self.account.next_sequence
            raw = sign_tx(
                self.signer,
                job.protos,
                chain_id=self.chain_id,
                account_number=number,
                sequence=sequence,
                fee=fee,
                memo=job.command.memo,
            )
            await self._save(
                job.command.key,
                {
                    "state": "signed",
                    "raw": raw.hex(),
                    "hash": tx_hash(raw),
                    "sequence": str(sequence),
                    "attempts": str(job.attempts),
                    "gas_scale": str(job.gas_scale),
                },
            )
            answer = await self._node(lambda: self.rpc.broadcast_tx_sync(raw))
            action = Verdict.WAIT if answer.code == 0 else verdict(answer.code, answer.codespace)
            if action is Verdict.WAIT:
                self.account.next_sequence = sequence + 1
                await self._save(job.command.key, {"state": "broadcast"})
                job.raw, job.sequence = raw, sequence
                return None
            self.last_error = f"{answer.codespace or 'sdk'} {answer.code}: {answer.log}"
            if action is Verdict.RESIGN:
                expected = SequenceMismatch(answer.code, answer.codespace, answer.log).expected
                await self._node(lambda: self.account.resync_locked(expected))
            elif action is Verdict.MORE_GAS:
                job.gas_scale *= 2
            elif action is Verdict.RETRY:
                await asyncio.sleep(self.poll_interval)
            else:
                return TxFailed(
                    key=job.command.key,
                    code=answer.code,
                    codespace=answer.codespace,
                    log=answer.log,
                    tx_hash=answer.hash,
                    attempts=job.attempts,
                )
            await self._save(job.command.key, {"state": "claimed", "raw": ""})
            return None

    async def _await_commit(
        self, raw: bytes, sequence: int, *, resend_first: bool = False
    ) -> TxResult | None:
        """The committed result; ``None`` if the transaction is gone and its sequence used."""
        digest = tx_hash(raw)
        deadline = time.monotonic() - 1 if resend_first else time.monotonic() + self.commit_timeout
        while True:
            try:
                return await self.rpc.tx(digest)
            except NotFound:
                pass
            except NodeUnavailable as exc:
                self.last_error = str(exc)
            if time.monotonic() >= deadline:
                # Not in a block yet. Still in the mempool, lost by a restarted node, or overtaken?
                account = await self._node(lambda: self.lcd.account(self.signer.address))
                if account.sequence > sequence:
                    try:
                        return await self.rpc.tx(digest)  # committed after all
                    except (NotFound, NodeUnavailable):
                        return None
                async with self.account.lock:
                    answer = await self._node(lambda: self.rpc.broadcast_tx_sync(raw))
                    if (
                        answer.code != 0
                        and verdict(answer.code, answer.codespace) is Verdict.RESIGN
                    ):
                        return None
                    if answer.code == 0:  # the node had lost it; it is queued again
                        self.account.next_sequence = max(self.account.next_sequence, sequence + 1)
                deadline = time.monotonic() + self.commit_timeout
            await asyncio.sleep(self.poll_interval)

    async def _node(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """Call the node, waiting out outages with backoff."""
        delay = 0.2
        while True:
            try:
                return await call()
            except NodeUnavailable as exc:
                self.last_error = str(exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
            except ChainError as exc:
                self.last_error = str(exc)
                raise
