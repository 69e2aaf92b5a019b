"""Shared pieces of every event and command payload."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from aktypes.resources import Resources

HexHash = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
"""A SHA-256 digest as 64 lower-case hex characters (e.g. a deployment's manifest hash)."""

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
Count = Annotated[int, Field(ge=0)]


class Payload(BaseModel):
    """Base of every event and command: frozen, tolerant of fields added later.

    Subclasses declare ``type: Literal["area.thing.happened"]`` (the wire tag) and may raise
    ``schema_version`` when they change in a way readers should know about.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: ClassVar[int] = 1


class LeaseClosedReason(StrEnum):
    """Why a lease or bid was closed (Akash ``market.v1.LeaseClosedReason`` names)."""

    INVALID = "lease_closed_invalid"
    OWNER = "lease_closed_owner"
    UNSTABLE = "lease_closed_reason_unstable"
    DECOMMISSION = "lease_closed_reason_decommission"
    UNSPECIFIED = "lease_closed_reason_unspecified"
    MANIFEST_TIMEOUT = "lease_closed_reason_manifest_timeout"
    INSUFFICIENT_FUNDS = "lease_closed_reason_insufficient_funds"

    @property
    def code(self) -> int:
        """The protobuf enum number."""
        return _REASON_CODES[self]


_REASON_CODES = {
    LeaseClosedReason.INVALID: 0,
    LeaseClosedReason.OWNER: 1,
    LeaseClosedReason.UNSTABLE: 10000,
    LeaseClosedReason.DECOMMISSION: 10001,
    LeaseClosedReason.UNSPECIFIED: 10002,
    LeaseClosedReason.MANIFEST_TIMEOUT: 10003,
    LeaseClosedReason.INSUFFICIENT_FUNDS: 20000,
}


class ResourceOffer(BaseModel):
    """Resources a provider offers (or allocated) for one resource unit of a group."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    resources: Resources
    count: Count
