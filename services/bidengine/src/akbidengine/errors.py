"""Errors of the bid engine.

    BidEngineError
    ├── ProviderConfigError   the provider config file is missing or wrong (exit 2 at start)
    └── ChainUnavailable      a chain query failed for now: the event is handled again later

``ChainUnavailable`` is an :class:`akbus.RetryableError`: the entry that needed the query
stays pending and is delivered again after a backoff.
"""

from __future__ import annotations

from akbus import RetryableError


class BidEngineError(Exception):
    """Base of the bid engine's errors."""


class ProviderConfigError(BidEngineError):
    """The provider config file cannot be read or does not list attributes; says where."""


class ChainUnavailable(BidEngineError, RetryableError):
    """The node did not answer a query; try again later."""
