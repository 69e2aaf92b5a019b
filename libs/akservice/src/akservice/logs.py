"""Structured logs: key/value on a terminal, one JSON object per line everywhere else.

Every library logs through the standard :mod:`logging` module and passes its facts as
``extra`` fields (akbus: ``stream``, ``entry``, ``error``…); the formatter installed here
(structlog's) keeps them as fields, next to the service's name and whatever ids the code
being run has bound with :func:`bound` (``order_id``, ``lease_id``…). Output goes to
standard error.

The log is rate-limited (:class:`RateLimit`, ``AP_LOG_RATE``): each logger writes at most
that many lines a second of one message template, so a stranger repeating a refused request
cannot fill the disk; the next line let through says how many similar ones were dropped.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

import structlog

# Attributes every LogRecord has; anything else on a record came in through ``extra``.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}
# Payload fields that identify what a log line is about.
ID_FIELDS = ("order_id", "lease_id", "deployment_id", "bid_id", "group_id", "owner")


def _extras(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    record: logging.LogRecord | None = event.get("_record")
    if record is not None:
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_") and key not in event:
                event[key] = value
    return event


class RateLimit(logging.Filter):
    """At most ``per_second`` records a second (a burst of as many) per logger and message
    template (the format string, before its arguments); the others are dropped and
    counted, and the next record let through carries ``dropped`` (how many similar lines
    were not written). ``per_second`` 0: no limit."""

    MAX_KEYS = 4096  # templates tracked at once; more (a logger misusing templates): reset

    def __init__(self, per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.per_second = per_second
        self.clock = clock
        self._buckets: dict[tuple[str, str], list[float]] = {}  # key → [tokens, at, dropped]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.per_second <= 0:
            return True
        key = (record.name, str(record.msg)[:200])
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.MAX_KEYS:
                self._buckets.clear()
            bucket = self._buckets[key] = [self.per_second, now, 0.0]
        tokens = min(self.per_second, bucket[0] + (now - bucket[1]) * self.per_second)
        bucket[1] = now
        if tokens < 1:
            bucket[0] = tokens
            bucket[2] += 1
            return False
        bucket[0] = tokens - 1
        if bucket[2]:
            record.dropped = int(bucket[2])
            bucket[2] = 0
        return True


def setup(
    service: str,
    *,
    level: str = "info",
    fmt: Literal["auto", "json", "text"] = "auto",
    stream: Any = None,
    rate: float = 0,
) -> None:
    """Route every logger of the process through one structured formatter, at most
    ``rate`` lines a second of each message template (:class:`RateLimit`; 0: no limit)."""
    out = stream or sys.stderr
    as_json = fmt == "json" or (fmt == "auto" and not out.isatty())
    renderer: Any = (
        structlog.processors.JSONRenderer(default=str)
        if as_json
        else structlog.dev.ConsoleRenderer(colors=False, pad_event_to=0)
    )
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _extras,
    ]
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    handler.addFilter(RateLimit(rate))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(service=service)


@contextlib.contextmanager
def bound(**fields: object) -> Iterator[None]:
    """Add ``fields`` to every log line written inside the block (this task only)."""
    values = {k: str(v) for k, v in fields.items() if v is not None}
    with structlog.contextvars.bound_contextvars(**values):
        yield


def ids_of(payload: object) -> dict[str, object]:
    """The identifying fields of an event or command (order, lease, deployment…)."""
    return {name: getattr(payload, name) for name in ID_FIELDS if hasattr(payload, name)}
