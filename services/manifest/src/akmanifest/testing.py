"""Test helpers: the manifest service as a subprocess, and an in-memory chain for unit tests.

``ManifestProcess`` runs ``python -m akmanifest`` on a free port with fast timings;
``MemoryChain`` answers :class:`~akmanifest.adapters.chain.ChainQueries` from dicts and
counts the deployment queries (to see the cache at work).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from akmanifest.domain.checks import DeploymentFacts
from akmanifest.errors import ChainUnavailable
from akservice.testing import RuntimeProcess
from aktypes.ids import DeploymentID, LeaseID


class ManifestProcess(RuntimeProcess):
    def __init__(
        self,
        *,
        redis_url: str,
        api: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        env = {
            "AP_API": api,
            "AP_MANIFEST_STATUS_INTERVAL": "500ms",
            "AP_MANIFEST_HOSTNAME_CHECK_TIMEOUT": "2s",
            **(extra_env or {}),
        }
        super().__init__("akmanifest", "manifest", redis_url=redis_url, log_path=log_path, env=env)


@dataclass
class MemoryChain:
    """Deployments (with our active leases) and lease states in memory."""

    deployments: dict[str, DeploymentFacts] = field(default_factory=dict)
    lease_states: dict[str, str] = field(default_factory=dict)
    host: str = ""  # the provider's host URI's host
    queries: int = 0
    down: bool = False

    async def deployment(self, deployment_id: DeploymentID) -> DeploymentFacts | None:
        self.queries += 1
        if self.down:
            raise ChainUnavailable("the node is down (test)")
        return self.deployments.get(str(deployment_id))

    async def lease_state(self, lease_id: LeaseID) -> str | None:
        if self.down:
            raise ChainUnavailable("the node is down (test)")
        return self.lease_states.get(str(lease_id))

    async def provider_host(self) -> str:
        if self.down:
            raise ChainUnavailable("the node is down (test)")
        return self.host
