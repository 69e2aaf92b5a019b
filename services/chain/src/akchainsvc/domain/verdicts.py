"""What a chain error code means for a transaction: retry with a fresh sequence, more gas,
wait, or give up."""

from __future__ import annotations

from enum import Enum


class Verdict(Enum):
    """What to do after the chain answered a transaction with an error code."""

    RESIGN = "resign"  # the sequence moved on: sign again with a fresh one
    MORE_GAS = "more_gas"  # out of gas: sign again with a higher limit
    WAIT = "wait"  # already in the mempool: wait for it
    RETRY = "retry"  # the node is busy (mempool full): try the same bytes later
    FAIL = "fail"  # the chain refused the messages themselves: report it


def verdict(code: int, codespace: str) -> Verdict:
    if codespace not in ("", "sdk"):
        return Verdict.FAIL
    return {
        32: Verdict.RESIGN,  # account sequence mismatch
        11: Verdict.MORE_GAS,  # out of gas
        19: Verdict.WAIT,  # tx already in the mempool cache
        20: Verdict.RETRY,  # mempool is full
    }.get(code, Verdict.FAIL)
