"""Errors of the bus; the exception class is the retry policy.

    BusError
     ├── HandlerError                raised by handlers to say what the bus should do
     │    ├── RetryableError         leave the entry pending; redeliver after a backoff
     │    └── PermanentError         dead-letter the entry now: retrying cannot help
     ├── ConnectionLost              Redis is unreachable or restarting; the bus retries
     ├── RequestTimeout              no reply to a command within its timeout
     ├── UnexpectedReply             a command was answered with a reply of another type
     └── StreamMismatch              a payload was published to a stream it does not belong on

Any other exception from a handler is treated like ``RetryableError`` (a bug may be
transient; a poison entry still reaches the dead-letter stream after ``max_deliveries``).
"""

from __future__ import annotations


class BusError(Exception):
    """Base class of the bus's errors."""


class HandlerError(BusError):
    """Raised by a handler to choose what happens to the entry."""


class RetryableError(HandlerError):
    """The entry stays pending and is delivered again after a backoff."""


class PermanentError(HandlerError):
    """The entry goes to the dead-letter stream at once."""


class ConnectionLost(BusError):
    """Redis could not be reached (down, restarting, loading its data, network cut)."""


class RequestTimeout(BusError):
    """A command got no reply within its timeout."""


class UnexpectedReply(BusError):
    """A command was answered with a payload the caller did not expect."""


class StreamMismatch(BusError, ValueError):
    """A payload type does not belong on the stream it was published to."""
