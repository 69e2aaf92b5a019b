"""Errors of the cluster service.

    ClusterError
    ├── InventoryFileError   the null backend's nodes file is missing or wrong (exit 2 at start)
    ├── NoInventory          no inventory yet (none from the inventory operator): retried later
    ├── Unavailable          the cluster cannot be reached or cannot answer now (5xx,
    │                        timeouts, our own credentials refused): nothing can be judged now
    ├── Rejected             a lease's objects refused (a 4xx, a hostname or endpoint already
    │                        claimed): names what and why
    ├── LeaseNotFound        no namespace or Manifest for the lease
    ├── ChainUnavailable     the node cannot answer now (the capabilities check keeps what
    │                        it read last; the reconciliation skips its sweep)
    └── MoveRefused          a hostname or endpoint cannot move to the lease asking for it
                             (``invalid``: not in use; ``forbidden``: another tenant's)

The deployment backends raise these at their boundary (the kube adapter translates every
Kubernetes answer into one), so the deployments never see an adapter's own exceptions.

``NoInventory`` is an :class:`akbus.RetryableError`, so a command that arrives before the
first inventory stays pending and is handled once there is one.
"""

from __future__ import annotations

from typing import Literal

from akbus import RetryableError


class ClusterError(Exception):
    """Base of the cluster service's errors."""


class InventoryFileError(ClusterError):
    """The inventory file cannot be read or does not describe a cluster; says where."""


class NoInventory(ClusterError, RetryableError):
    """No inventory yet: the inventory operator has published none."""


class Unavailable(ClusterError):
    """The cluster cannot be reached or cannot answer now: nothing can be judged."""


class Rejected(ClusterError):
    """A lease's objects were refused; the message names what and why."""


class LeaseNotFound(ClusterError):
    """The lease's namespace or Manifest resource is not in the cluster."""


class ChainUnavailable(ClusterError):
    """The node cannot answer a query now (the capabilities check's, the reconciliation's);
    says which and why."""


class MoveRefused(ClusterError):
    """A move that cannot be done; ``code`` is the reply's (``invalid``, ``forbidden``)."""

    def __init__(self, code: Literal["invalid", "forbidden"], message: str) -> None:
        super().__init__(message)
        self.code: Literal["invalid", "forbidden"] = code
