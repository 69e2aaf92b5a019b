"""What the manifest service keeps in Redis, and under which keys.

- ``akmanifest:deployment:<owner>/<dseq>``: a :class:`DeploymentRecord` — the accepted
  manifest (its canonical JSON, so it hashes to ``version`` again) and the leases it was
  sent to; after ``DeploymentClosed`` a ``closed`` tombstone for a while, so a submission
  checked against a stale chain read, or a late ``LeaseWon``, cannot bring it back.
- ``akmanifest:deployments``: set of deployments with an accepted manifest (status, gauge).
- ``akmanifest:waiting``: hash lease → deadline of the leases won and waiting for a manifest;
  ``akmanifest:deadlines``: the same as a sorted set by deadline, for the watchdog's scan.
  The hash is what a transaction reads (and so watches) to claim a lease.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aktypes.ids import DeploymentID, LeaseID
from aktypes.manifest import Manifest

RECORD_PREFIX = "akmanifest:deployment:"
DEPLOYMENTS_KEY = "akmanifest:deployments"
WAITING_KEY = "akmanifest:waiting"
DEADLINES_KEY = "akmanifest:deadlines"
CLOSED_TTL_S = 24 * 3600  # written for every closed deployment on chain, ours or not


def record_key(deployment_id: DeploymentID | str) -> str:
    return f"{RECORD_PREFIX}{deployment_id}"


def close_bid_key(lease_id: LeaseID) -> str:
    """The chain relay's idempotency key of a manifest-timeout bid close."""
    return f"close-bid/manifest-timeout/{lease_id}"


class DeploymentRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    deployment_id: str
    state: Literal["accepted", "closed"]
    version: str = ""
    manifest: str = ""  # canonical JSON of the accepted manifest
    leases: list[str] = Field(default_factory=list)  # leases the manifest was sent to
    updated_at: float = 0.0

    @classmethod
    def accepted(
        cls, deployment_id: DeploymentID, manifest: Manifest, leases: list[LeaseID], now: float
    ) -> DeploymentRecord:
        return cls(
            deployment_id=str(deployment_id),
            state="accepted",
            version=manifest.version_hex(),
            manifest=manifest.canonical_json().decode(),
            leases=sorted(str(lease) for lease in leases),
            updated_at=now,
        )

    def parsed(self) -> Manifest:
        return Manifest.from_json(self.manifest)

    def has_lease(self, lease_id: LeaseID) -> bool:
        return str(lease_id) in self.leases

    def with_leases(self, leases: set[str], now: float) -> DeploymentRecord:
        return self.model_copy(update={"leases": sorted(leases), "updated_at": now})

    def closed(self, now: float) -> DeploymentRecord:
        return DeploymentRecord(deployment_id=self.deployment_id, state="closed", updated_at=now)


def parse_record(raw: str | None) -> DeploymentRecord | None:
    return DeploymentRecord.model_validate_json(raw) if raw else None
