"""Errors a transaction fails with, as the chain reports them: codespace, code, log.

Akash's modules register their errors per codespace (``market`` 21 is "invalid bid: bid
exists from provider"); a failure's log reads like Cosmos's, ``"<context>: <description>"``.
Errors Akash builds with ``fmt.Errorf`` rather than its registry surface on a real node
as codespace ``undefined`` code 1; :func:`unregistered` reproduces that.
"""

from __future__ import annotations


class TxFailure(Exception):
    """A transaction (or one of its messages) failed; nothing it wrote is kept."""

    def __init__(self, codespace: str, code: int, log: str) -> None:
        self.codespace, self.code, self.log = codespace, code, log
        super().__init__(f"{codespace} {code}: {log}")


def fail(codespace: str, code: int, description: str, context: str = "") -> TxFailure:
    """A registered error, optionally wrapped with context (``"context: description"``)."""
    return TxFailure(codespace, code, f"{context}: {description}" if context else description)


def unregistered(log: str) -> TxFailure:
    return TxFailure("undefined", 1, log)


# Cosmos SDK root errors (codespace "sdk").
def sdk(code: int, description: str, context: str = "") -> TxFailure:
    return fail("sdk", code, description, context)


TX_DECODE = 2
INVALID_SEQUENCE = 3
UNAUTHORIZED = 4
INSUFFICIENT_FUNDS = 5
UNKNOWN_REQUEST = 6
INVALID_ADDRESS = 7
INVALID_PUBKEY = 8
UNKNOWN_ADDRESS = 9
INVALID_COINS = 10
OUT_OF_GAS = 11
INSUFFICIENT_FEE = 13
TX_IN_CACHE = 19
MEMPOOL_FULL = 20
WRONG_SEQUENCE = 32
CONFLICT = 36
