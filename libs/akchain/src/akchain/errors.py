"""Errors of the chain client.

ChainError
 ├── NodeUnavailable          the node did not answer (down, restarting, network); retry
 ├── NotFound                 the queried object does not exist
 ├── BadResponse              the node answered something this client cannot read
 ├── TxRejected               the chain refused a transaction (code, codespace, log)
 │    └── SequenceMismatch    the account sequence moved on: re-read it and sign again
 └── KeyFileError             a key file is missing, malformed, or the passphrase is wrong
"""

from __future__ import annotations

import re

# Cosmos SDK codespace "sdk" codes the client reacts to.
CODE_UNAUTHORIZED = 4
CODE_INSUFFICIENT_FUNDS = 5
CODE_TX_IN_MEMPOOL = 19
CODE_WRONG_SEQUENCE = 32


class ChainError(Exception):
    """Base class of the chain client's errors."""


class NodeUnavailable(ChainError):
    """The node could not be reached or timed out."""


class NotFound(ChainError):
    """The object does not exist on chain."""


class BadResponse(ChainError):
    """The node's answer could not be read."""


class TxRejected(ChainError):
    """The chain refused a transaction."""

    def __init__(self, code: int, codespace: str, log: str, tx_hash: str | None = None) -> None:
        self.code = code
        self.codespace = codespace
        self.log = log
        self.tx_hash = tx_hash
        super().__init__(f"transaction rejected ({codespace or 'sdk'} {code}): {log}")


_EXPECTED = re.compile(r"expected (\d+), got (\d+)")


class SequenceMismatch(TxRejected):
    """``account sequence mismatch, expected N, got M``: someone else used the sequence."""

    @property
    def expected(self) -> int | None:
        match = _EXPECTED.search(self.log)
        return int(match.group(1)) if match else None


def rejection(code: int, codespace: str, log: str, tx_hash: str | None = None) -> TxRejected:
    """The right :class:`TxRejected` subclass for a chain error code."""
    if code == CODE_WRONG_SEQUENCE and codespace in ("", "sdk"):
        return SequenceMismatch(code, codespace, log, tx_hash)
    return TxRejected(code, codespace, log, tx_hash)


class KeyFileError(ChainError):
    """A key file cannot be used (missing, malformed, wrong passphrase)."""


def describe(exc: BaseException) -> str:
    """An exception's message, or its type when it has none (timeouts)."""
    return str(exc) or type(exc).__name__
