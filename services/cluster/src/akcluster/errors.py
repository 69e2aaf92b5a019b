"""Errors of the cluster service.

    ClusterError
    ├── InventoryFileError   the null backend's nodes file is missing or wrong (exit 2 at start)
    ├── NoInventory          no inventory yet (kube still listing): commands are retried later
    ├── KubeUnavailable      (adapters.kube_deploy) the API server cannot be reached, 5xx,
    │                        timeouts, our own credentials refused: nothing can be judged now
    ├── KubeRejected         (adapters.kube_deploy) an object refused (4xx): names it and why
    └── LeaseNotFound        (adapters.kube_deploy) no namespace or Manifest for the lease

``NoInventory`` is an :class:`akbus.RetryableError`, so a command that arrives before the
first inventory stays pending and is handled once there is one.
"""

from __future__ import annotations

from akbus import RetryableError


class ClusterError(Exception):
    """Base of the cluster service's errors."""


class InventoryFileError(ClusterError):
    """The inventory file cannot be read or does not describe a cluster; says where."""


class NoInventory(ClusterError, RetryableError):
    """The inventory backend has not produced an inventory yet."""
