"""What a handler receives, and the transaction it applies its effects in.

``await msg.apply_once(body)`` runs ``body(tx)`` and commits its writes, the events it
publishes and the reply it sends in one Redis transaction together with an "applied" mark
keyed by the envelope id (or a domain key). A redelivered entry finds the mark and changes
nothing, so a handler's effects happen once even though delivery is at-least-once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, overload

from akbus.backend import Backend, Fields, Tx
from akbus.keys import applied_key, reply_key
from akbus.settings import BusSettings
from aktypes.events import Envelope, Payload

P = TypeVar("P", bound=Payload)
R = TypeVar("R", bound=Payload)
R2 = TypeVar("R2", bound=Payload)


class BusLike(Protocol):
    """What messages, their transactions and subscribers use of the :class:`akbus.Bus` that
    delivers them: a protocol, so that these modules need not import the one that makes
    them."""

    @property
    def backend(self) -> Backend: ...
    @property
    def settings(self) -> BusSettings: ...

    def envelope(
        self,
        payload: Payload,
        *,
        causation: Envelope[Any] | None = None,
        correlation_id: str | None = None,
        reply_to: str | None = None,
        stream: str | None = None,
    ) -> Envelope[Payload]: ...
    async def publish(
        self,
        stream: str,
        payload: Payload,
        *,
        causation: Envelope[Any] | None = None,
        correlation_id: str | None = None,
    ) -> str: ...
    async def apply_once(
        self,
        marker: str,
        body: TxFn | None = None,
        *,
        cause: Envelope[Any] | None = None,
        durable: bool = False,
    ) -> bool: ...
    async def transact(
        self, body: TxFn, *, cause: Envelope[Any] | None = None, durable: bool = False
    ) -> None: ...
    async def request(
        self,
        stream: str,
        command: Payload,
        expect: Any = None,
        *,
        timeout_s: float = 10.0,
        attempts: int = 1,
        command_id: str | None = None,
        cause: Envelope[Any] | None = None,
    ) -> Payload: ...
    async def trim(self, stream: str, *, keep_s: float | None = None) -> int: ...


class BusTx:
    """A :class:`~akbus.backend.Tx` that can also publish events and send the reply."""

    def __init__(self, tx: Tx, bus: BusLike, cause: Envelope[Any] | None) -> None:
        self.state = tx
        self._bus = bus
        self._cause = cause

    def publish(self, stream: str, payload: Payload) -> Envelope[Payload]:
        """Publish ``payload`` if, and only if, the transaction commits (an outbox)."""
        envelope = self._bus.envelope(payload, causation=self._cause, stream=stream)
        self.state.xadd(stream, envelope.to_fields())
        return envelope

    def reply(self, payload: Payload) -> None:
        """Answer the command being handled; a redelivered command gets this same reply."""
        cause = self._cause
        if cause is None or not cause.reply_to:
            raise ValueError("this entry carries no reply_to: there is nobody to answer")
        fields = self._bus.envelope(payload, causation=cause).to_fields()
        ttl = self._bus.settings.reply_ttl_s
        self.state.set(reply_key(cause.id), json.dumps(fields), ex=ttl)
        self.state.xadd(cause.reply_to, fields)
        self.state.expire(cause.reply_to, ttl)


TxFn = Callable[[BusTx], Awaitable[None]]


@dataclass
class Message(Generic[P]):
    """One delivered entry: its envelope, where it came from, and how often it was delivered."""

    envelope: Envelope[P]
    stream: str
    entry_id: str
    group: str
    consumer: str
    deliveries: int
    bus: BusLike
    _requests: int = field(default=0, repr=False)  # requests made by this delivery

    @property
    def payload(self) -> P:
        return self.envelope.payload

    async def apply_once(
        self, body: TxFn | None = None, *, key: str | None = None, durable: bool = False
    ) -> bool:
        """Apply ``body``'s effects once per ``key`` (default: this envelope) for this group.

        Returns False when they were applied before (a redelivery or a duplicate).
        ``durable``: see :meth:`akbus.Bus.apply_once`.
        """
        marker = applied_key(self.group, key or self.envelope.id)
        return await self.bus.apply_once(marker, body, cause=self.envelope, durable=durable)

    async def publish(self, stream: str, payload: Payload) -> str:
        """Publish an event caused by this entry (outside any transaction)."""
        return await self.bus.publish(stream, payload, causation=self.envelope)

    @overload
    async def request(
        self,
        stream: str,
        command: Payload,
        expect: type[R],
        *,
        key: str | None = ...,
        timeout_s: float = ...,
        attempts: int = ...,
    ) -> R: ...

    @overload
    async def request(
        self,
        stream: str,
        command: Payload,
        expect: tuple[type[R], type[R2]],
        *,
        key: str | None = ...,
        timeout_s: float = ...,
        attempts: int = ...,
    ) -> R | R2: ...

    async def request(
        self,
        stream: str,
        command: Payload,
        expect: type[Payload] | tuple[type[Payload], ...],
        *,
        key: str | None = None,
        timeout_s: float = 10.0,
        attempts: int = 3,
    ) -> Payload:
        """Send ``command`` on behalf of this entry and wait for its reply (one of ``expect``).

        The command's id derives from this entry, the group and ``key`` (default: the
        command's type and how many requests this delivery made before it), so a handler
        that runs again after a failure or a crash sends the same command and gets the
        reply already given instead of a second effect.
        """
        self._requests += 1
        name = key if key is not None else f"{command.type}#{self._requests}"  # type: ignore[attr-defined]
        seed = "\0".join((self.group, self.envelope.id, stream, name))
        command_id = hashlib.sha256(seed.encode()).hexdigest()[:32]
        reply: Payload = await self.bus.request(
            stream,
            command,
            expect,
            timeout_s=timeout_s,
            attempts=attempts,
            command_id=command_id,
            cause=self.envelope,
        )
        return reply

    async def reply(self, payload: Payload) -> None:
        """Answer this command; idempotent for redeliveries of the same command."""

        async def body(tx: BusTx) -> None:
            tx.reply(payload)

        await self.bus.transact(body, cause=self.envelope)


def stored_reply(raw: str | None) -> Fields | None:
    """The reply fields kept for a command, if it was answered already."""
    if raw is None:
        return None
    data: Mapping[str, str] = json.loads(raw)
    return dict(data)
