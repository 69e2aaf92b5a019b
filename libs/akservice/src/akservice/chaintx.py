"""One transaction through the chain relay, from a command: sent at most once, its answer.

The relay signs with the provider's key and broadcasts each ``BroadcastTx`` key at most once
(a repeated key is dropped without an answer). A command therefore first looks for an
answer to its key already on ``akash.provider.chain.results``: found, it is the answer and
nothing is sent again; else it publishes the command on ``akash.provider.chain.tx`` and
waits for ``TxCommitted``/``TxFailed`` with that key. A key is deterministic for what the
command asks, so running the same command twice is harmless.

``retry_failed``: a key that failed before (the account had no funds, say) is followed by
``<key>/retry-2``, ``/retry-3``… — the first one without a failure is used, so running the
command again after fixing the cause sends it once more, and only once. ``again``: the first
of those keys without any answer is used — for a change made before and undone since by
someone else, which the caller has seen on chain.

The gateway's ``cert publish`` and ``akash-provider provider create|update`` use it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from akbus import Bus
from aktypes.events import BroadcastTx, TxCommitted, TxFailed, TxMsg, envelope_from_fields
from aktypes.events.streams import CHAIN_RESULTS, CHAIN_TX

TxResult = TxCommitted | TxFailed


class NoAnswer(Exception):
    """The relay did not answer within the time given (the command stays queued for it)."""

    def __init__(self, key: str, timeout: float) -> None:
        self.key = key
        super().__init__(
            f"no result for {key} within {timeout:g}s: is the chain relay running "
            "(python -m akchainsvc)? The command stays queued for it"
        )


@dataclass(frozen=True)
class Outcome:
    """The answer to a command; ``earlier``: it was answered before, nothing was sent now."""

    key: str
    result: TxResult
    earlier: bool


async def relay_address(bus: Bus, *, wait_s: float = 10.0) -> str | None:
    """The provider address the chain relay's status names, waiting up to ``wait_s`` for it."""
    deadline = time.monotonic() + wait_s
    while True:
        envelope = await bus.status("chain")
        provider = getattr(envelope.payload, "provider", "") if envelope is not None else ""
        if provider:
            return str(provider)
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.2)


async def results_by_key(bus: Bus) -> tuple[str, dict[str, TxResult]]:
    """The last entry id of the results stream and the last result of each key on it."""
    last, found = "0", {}
    for entry in await bus.backend.entries(CHAIN_RESULTS):
        last = entry.id
        if entry.fields.get("type") not in ("tx.committed", "tx.failed"):
            continue
        payload = envelope_from_fields(entry.fields).payload
        if isinstance(payload, TxCommitted | TxFailed):
            found[payload.key] = payload
    return last, found


async def wait_result(bus: Bus, key: str, after: str, timeout: float) -> TxResult:
    """The first result for ``key`` after entry ``after``; :class:`NoAnswer` past ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in await bus.backend.read(CHAIN_RESULTS, after, count=100, block_ms=500):
            after = entry.id
            if entry.fields.get("type") not in ("tx.committed", "tx.failed"):
                continue
            payload = envelope_from_fields(entry.fields).payload
            if isinstance(payload, TxCommitted | TxFailed) and payload.key == key:
                return payload
    raise NoAnswer(key, timeout)


async def broadcast_once(
    bus: Bus,
    key: str,
    msgs: Sequence[TxMsg],
    *,
    timeout: float,
    retry_failed: bool = False,
    again: bool = False,
    memo: str = "",
) -> Outcome:
    """Send ``msgs`` as one transaction under ``key`` unless it was answered already."""
    last, known = await results_by_key(bus)
    if retry_failed or again:
        base, attempt = key, 1
        while (earlier := known.get(key)) is not None and (again or isinstance(earlier, TxFailed)):
            attempt += 1
            key = f"{base}/retry-{attempt}"
    earlier = known.get(key)
    if earlier is not None:
        return Outcome(key, earlier, earlier=True)
    await bus.publish(CHAIN_TX, BroadcastTx(key=key, msgs=list(msgs), memo=memo))
    return Outcome(key, await wait_result(bus, key, last, timeout), earlier=False)
