"""The envelope around every stream entry, and its plain-field wire form.

On Redis a stream entry is a flat map of strings, readable with ``redis-cli XRANGE``:

    type  id  time  producer  correlation_id  causation_id  schema  payload  [reply_to]

``payload`` is the JSON of the event or command; absent ids are empty strings. The
envelope's ``id`` is unique per entry and is what "process once" bookkeeping keys on.

Both directions are on the bus's hot path: :meth:`Envelope.wrap` and
:func:`envelope_from_fields` check every field themselves and then build the model without
pydantic's second pass; anything unusual goes through full pydantic validation.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aktypes.errors import AkTypesError
from aktypes.events.base import Payload
from aktypes.events.union import EVENT_ADAPTER

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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
_PREFIXES: dict[int, str] = {}  # whole seconds since the epoch -> "YYYY-MM-DDTHH:MM:SS"


def format_time(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds and a ``Z``: ``2026-11-22T10:00:00.000000Z``."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    second = (moment - _EPOCH) // _SECOND  # formatting whole dates is costly: once a second
    prefix = _PREFIXES.get(second)
    if prefix is None:
        if len(_PREFIXES) >= 1024:
            _PREFIXES.clear()
        prefix = _PREFIXES[second] = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{prefix}.{moment.microsecond:06d}Z"


def _new_id() -> str:
    return os.urandom(16).hex()


def _now() -> datetime:
    return datetime.now(UTC)


class Envelope(BaseModel, Generic[P]):
    """An event or command with who sent it, when, and what caused it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=_new_id, min_length=1)
    time: datetime = Field(default_factory=_now)
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
        causation_id = None
        if causation is not None:
            correlation_id = correlation_id or causation.correlation_id or causation.id
            causation_id = causation.id
        schema_version = type(payload).schema_version
        values: dict[str, Any] = {
            "id": _new_id(),
            "time": _now(),
            "producer": producer,
            "correlation_id": correlation_id,
            "causation_id": causation_id,
            "reply_to": reply_to,
            "schema_version": schema_version,
            "payload": payload,
        }
        if (
            type(producer) is str
            and producer
            and (correlation_id is None or type(correlation_id) is str)
            and (causation_id is None or type(causation_id) is str)
            and (reply_to is None or type(reply_to) is str)
            and type(schema_version) is int
            and schema_version >= 1
        ):
            return _built(values)  # every field checked just above
        envelope: Envelope[P] = _AnyEnvelope(**values)  # says what is wrong
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
# Shared by every envelope _built makes: a frozen model never changes it in place (pydantic
# copies it before a model_copy updates it), and making one per envelope is costly.
_ALL_FIELDS_SET = set(_AnyEnvelope.model_fields)
_set = object.__setattr__
if _AnyEnvelope.__pydantic_post_init__ or _AnyEnvelope.__private_attributes__:
    raise TypeError("Envelope gained a post-init hook or private attributes: update _built")


def _built(values: dict[str, Any]) -> Envelope[Any]:
    """An envelope from values checked already: what ``model_construct`` does, minus its
    per-field bookkeeping (defaults, aliases), which the envelope does not need here.
    """
    envelope = _AnyEnvelope.__new__(_AnyEnvelope)
    _set(envelope, "__dict__", values)
    _set(envelope, "__pydantic_fields_set__", _ALL_FIELDS_SET)
    _set(envelope, "__pydantic_extra__", None)
    _set(envelope, "__pydantic_private__", None)
    return envelope


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
    data = _text_fields(fields)
    try:
        tag, entry_id, time, producer = data["type"], data["id"], data["time"], data["producer"]
        correlation_id, causation_id = data["correlation_id"], data["causation_id"]
        schema, payload_json = data["schema"], data["payload"]
    except KeyError:
        missing = [name for name in WIRE_FIELDS if name not in data]
        raise InvalidEntryError(f"stream entry lacks fields {missing}") from None
    try:
        payload = EVENT_ADAPTER.validate_json(payload_json)
    except ValidationError as exc:
        raise InvalidEntryError(f"payload of type {tag!r} is invalid: {exc}") from exc
    if getattr(payload, "type", None) != tag:
        raise InvalidEntryError(
            f"entry type {tag!r} does not match its payload type {payload.type!r}"
        )
    try:
        moment = datetime.fromisoformat(time)
        schema_version = int(schema)
    except ValueError as exc:
        raise InvalidEntryError(f"stream entry envelope is invalid: {exc}") from exc
    if moment.tzinfo is None or not entry_id or not producer or schema_version < 1:
        raise InvalidEntryError("stream entry envelope is invalid: id, producer, time or schema")
    # Every field is checked above; skip pydantic's second pass on the hot path.
    return _built(
        {
            "id": entry_id,
            "time": moment if moment.tzinfo is UTC else moment.astimezone(UTC),
            "producer": producer,
            "correlation_id": correlation_id or None,
            "causation_id": causation_id or None,
            "reply_to": data.get("reply_to") or None,
            "schema_version": schema_version,
            "payload": payload,
        }
    )


def _text_fields(fields: Mapping[str, str] | Mapping[bytes, bytes]) -> Mapping[str, str]:
    """``fields`` as text, refusing text that holds bytes which are not UTF-8."""
    keys: Iterable[Any] = fields
    values: Iterable[Any] = fields.values()
    try:  # the usual case: all text and all ASCII (str.isascii refuses anything but str)
        if all(map(str.isascii, values)) and all(map(str.isascii, keys)):
            return fields  # type: ignore[return-value]  # every key and value is a str
    except TypeError:  # bytes (a client without decoding)
        pass
    text = decode_fields(fields)
    for name, value in text.items():
        if not value.isascii() and not _is_utf8(value):
            raise InvalidEntryError(f"stream entry field {name!r} is not valid UTF-8: {value!a}")
    return text
