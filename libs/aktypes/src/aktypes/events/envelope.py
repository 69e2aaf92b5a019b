"""The envelope around every stream entry, and its plain-field wire form.

On Redis a stream entry is a flat map of strings, readable with ``redis-cli XRANGE``:

    type  id  time  producer  correlation_id  causation_id  schema  payload  [reply_to]

``payload`` is the JSON of the event or command; absent ids are empty strings. The
envelope's ``id`` is unique per entry and is what "process once" bookkeeping keys on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Generic, TypeGuard, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aktypes.errors import AkTypesError
from aktypes.events.base import Payload

P = TypeVar("P", bound=Payload)

WIRE_FIELDS = (
    "type",
    "id",
    "time",
    "producer",
    "correlation_id",
    "causation_id",
    "schema",
    "payload",
)


class InvalidEntryError(AkTypesError):
    """A stream entry is not a valid envelope (missing field, bad JSON, unknown type)."""


def format_time(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds and a ``Z``: ``2026-11-22T10:00:00.000000Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Envelope(BaseModel, Generic[P]):
    """An event or command with who sent it, when, and what caused it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=lambda: os.urandom(16).hex(), min_length=1)
    time: datetime = Field(default_factory=lambda: datetime.now(UTC))
    producer: str = Field(min_length=1)
    correlation_id: str | None = None
    causation_id: str | None = None
    reply_to: str | None = None
    schema_version: int = Field(default=1, ge=1)
    payload: P

    @field_validator("time")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("time must carry a timezone")
        return value.astimezone(UTC)

    @property
    def type(self) -> str:
        tag: str = getattr(self.payload, "type")  # noqa: B009 - every payload declares it
        return tag

    @classmethod
    def wrap(
        cls,
        payload: P,
        *,
        producer: str,
        causation: Envelope[Any] | None = None,
        correlation_id: str | None = None,
        reply_to: str | None = None,
    ) -> Envelope[P]:
        """A new envelope; ``causation`` links it to the entry that caused it."""
        if causation is not None:
            correlation_id = correlation_id or causation.correlation_id or causation.id
        envelope: Envelope[P] = _AnyEnvelope(
            producer=producer,
            payload=payload,
            causation_id=causation.id if causation is not None else None,
            correlation_id=correlation_id,
            reply_to=reply_to,
            schema_version=type(payload).schema_version,
        )
        return envelope

    def to_fields(self) -> dict[str, str]:
        """The flat string fields written to the stream."""
        fields = {
            "type": self.type,
            "id": self.id,
            "time": format_time(self.time),
            "producer": self.producer,
            "correlation_id": self.correlation_id or "",
            "causation_id": self.causation_id or "",
            "schema": str(self.schema_version),
            "payload": self.payload.model_dump_json(),
        }
        if self.reply_to:
            fields["reply_to"] = self.reply_to
        return fields


_AnyEnvelope = Envelope[Any]  # parametrising a generic model on every call is costly


def decode_fields(fields: Mapping[str, str] | Mapping[bytes, bytes]) -> dict[str, str]:
    """Stream fields as ``str`` whether the client returned bytes or text.

    Bytes that are not UTF-8 become lone surrogates (``surrogateescape``), which
    :func:`envelope_from_fields` then refuses with a clear error.
    """
    return {_text(k): _text(v) for k, v in fields.items()}


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _is_utf8(value: str) -> bool:
    """False for text holding lone surrogates (bytes that did not decode as UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_fields(fields: Mapping[str, str]) -> dict[str, str]:
    """``fields`` safe to serialise: undecodable bytes shown as ``\\xNN`` escapes."""
    return {_printable(key): _printable(value) for key, value in fields.items()}


def _printable(value: str) -> str:
    if value.isascii() or _is_utf8(value):
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def envelope_from_fields(fields: Mapping[str, str] | Mapping[bytes, bytes]) -> Envelope[Any]:
    """Parse a stream entry; raise ``InvalidEntryError`` saying what is wrong."""
    from aktypes.events import EVENT_ADAPTER  # noqa: PLC0415 - the union imports this module

    data: Mapping[str, str] = fields if _all_text(fields) else decode_fields(fields)
    for name, value in data.items():
        if not value.isascii() and not _is_utf8(value):
            raise InvalidEntryError(f"stream entry field {name!r} is not valid UTF-8: {value!a}")
    missing = [name for name in WIRE_FIELDS if name not in data]
    if missing:
        raise InvalidEntryError(f"stream entry lacks fields {missing}")
    try:
        payload = EVENT_ADAPTER.validate_json(data["payload"])
    except ValidationError as exc:
        raise InvalidEntryError(f"payload of type {data['type']!r} is invalid: {exc}") from exc
    if getattr(payload, "type", None) != data["type"]:
        raise InvalidEntryError(
            f"entry type {data['type']!r} does not match its payload type {payload.type!r}"
        )
    try:
        moment = datetime.fromisoformat(data["time"])
        schema = int(data["schema"])
    except ValueError as exc:
        raise InvalidEntryError(f"stream entry envelope is invalid: {exc}") from exc
    if moment.tzinfo is None or not data["id"] or not data["producer"] or schema < 1:
        raise InvalidEntryError("stream entry envelope is invalid: id, producer, time or schema")
    # Every field is checked above; skip pydantic's second pass on the hot path.
    return _AnyEnvelope.model_construct(
        id=data["id"],
        time=moment.astimezone(UTC),
        producer=data["producer"],
        correlation_id=data["correlation_id"] or None,
        causation_id=data["causation_id"] or None,
        reply_to=data.get("reply_to") or None,
        schema_version=schema,
        payload=payload,
    )


def _all_text(fields: Mapping[Any, Any]) -> TypeGuard[Mapping[str, str]]:
    return all(isinstance(key, str) and isinstance(value, str) for key, value in fields.items())
