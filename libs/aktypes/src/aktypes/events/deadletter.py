"""Dead letters on ``<stream>.dlq``: an entry that could not be handled, with provenance."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from aktypes.events.base import NonEmptyStr, Payload


class DeadLetter(Payload):
    """Where the entry came from, who failed on it, why, and the entry itself."""

    type: Literal["bus.dead_letter"] = "bus.dead_letter"
    source_stream: NonEmptyStr
    entry_id: NonEmptyStr
    group: NonEmptyStr
    consumer: str = ""
    error: str
    attempts: Annotated[int, Field(ge=1)]
    fields: dict[str, str] = Field(default_factory=dict)
