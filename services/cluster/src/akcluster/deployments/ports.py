"""What the deployment managers need from a cluster: a :class:`Backend` that applies, reads
and removes a lease's objects, and the :class:`Scan` that reads every lease's objects back at
start. The ``kube`` adapter (:mod:`akcluster.adapters.kube_deploy`) and the ``null`` one
(:mod:`akcluster.adapters.null_deploy`) implement both; the managers know only these."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from types import TracebackType
from typing import Any, Protocol

from aktypes.events import LeaseStatusReport
from aktypes.ids import LeaseID

LeaseStatus = LeaseStatusReport
"""What ``lease_status`` answers: services, forwarded ports and leased IPs of a lease."""


class Backend(Protocol):
    """What the deployment managers need from a cluster (``kube`` or ``null``)."""

    async def install(self, crds: Sequence[dict[str, Any]]) -> None: ...
    async def apply(self, objects: Sequence[dict[str, Any]]) -> int: ...
    async def prune(self, lease_id: LeaseID, keep: Collection[tuple[str, str]]) -> int: ...
    async def teardown(self, lease_id: LeaseID) -> None: ...
    async def lease_status(
        self, lease_id: LeaseID, services: Sequence[tuple[str, int]], public_hostname: str
    ) -> LeaseStatus: ...
    async def pods_failing(self, lease_id: LeaseID) -> dict[str, str]: ...
    async def manifest(self, lease_id: LeaseID) -> dict[str, Any] | None: ...
    def scan(self) -> Scan: ...
    async def server_version(self) -> dict[str, str]: ...


class Scan(Protocol):
    """One reading of every lease's objects, for recovery (``async with`` it): each lease's
    objects compared with the cluster's, leases in the order of their namespaces' names;
    then the leases of the Manifest resources and lease namespaces nobody asked for."""

    async def __aenter__(self) -> Scan: ...
    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
    async def unchanged(self, objects: Sequence[dict[str, Any]]) -> bool: ...
    async def unclaimed(self) -> tuple[list[LeaseID], list[LeaseID]]: ...
