"""Errors of the manifest service.

    ManifestServiceError
    └── ChainUnavailable      a chain query failed for now

A submission that meets ``ChainUnavailable`` is answered ``chain_unavailable`` (the gateway
says 503: send it again); an event handler that meets it leaves its entry pending (it is an
:class:`akbus.RetryableError`) and the watchdog tries the lease again on its next round.
"""

from __future__ import annotations

from akbus import RetryableError


class ManifestServiceError(Exception):
    """Base of the manifest service's errors."""


class ChainUnavailable(ManifestServiceError, RetryableError):
    """The node did not answer a query; try again later."""
