"""Errors of the balance service.

BalanceServiceError
├── ChainUnavailable      a chain query failed for now (look again after AP_WITHDRAWAL_RETRY)
└── NodeCatchingUp        the node is syncing: its escrow figures are old (look again later)
"""

from __future__ import annotations

from akbus import RetryableError


class BalanceServiceError(Exception):
    """Base of the balance service's errors."""


class ChainUnavailable(BalanceServiceError, RetryableError):
    """The node did not answer a query; try again later."""


class NodeCatchingUp(BalanceServiceError, RetryableError):
    """The node is catching up: what it says of escrow accounts is not current."""
