"""The life of a service process: start, run supervised, drain and stop on a signal.

    SPEC = ServiceSpec(name="chain", title="chain relay", settings=ChainSettings,
                       health_listen="0.0.0.0:8091", start=start, distribution="akchainsvc")

    async def start(rt: Runtime[ChainSettings]) -> None:
        node = await rt.wait_for("the node", rpc.status, retry_on=(NodeUnavailable,))
        sub = rt.subscriber(streams.CHAIN_TX)     # group "chain", this process's consumer
        sub.add(BroadcastTx, handle)
        rt.supervise(relay.run(), "relay")        # its end (or failure) stops the process

:func:`run` serves ``/healthz``/``/readyz``/``/metrics``, connects the bus, waits for
Redis, takes the consumer name's lease, awaits ``start`` (whose dependency waits are
retried with tenacity and interrupted by a signal), then runs the subscribers and tasks.
SIGTERM or SIGINT, at any of those moments: subscribers stop reading and let running
handlers finish, the rest is cancelled, unfinished entries stay pending for the next
consumer, and the process exits within ``AKBUS_DRAIN_TIMEOUT_S`` (plus a second) — even
while Redis or the node is unreachable — without a traceback. A supervised task that ends
stops the process with exit code 1 and a log line saying which task and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Generic, TypeVar

from aiohttp import web
from pydantic_settings import BaseSettings
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_exponential_jitter

from akbus import Bus, ConnectionLost, Message, Subscriber
from akbus.subscriber import Handler, PartitionKey
from akservice import logs
from akservice.consumer import ConsumerLease, consumer_name
from akservice.health import HealthServer, Readiness, Routes, StartupError
from akservice.leadership import (
    Candidate,
    LeaderElectionSettings,
    Leadership,
    LeadershipLost,
    NotLeader,
)
from akservice.settings import Config, RuntimeSettings, env_name, runtime_settings
from aktypes.events import ChainStatus, Payload

S = TypeVar("S", bound=BaseSettings)
T = TypeVar("T")
GC_THRESHOLDS = (20_000, 50, 100)
"""Young collections every 20 000 allocations instead of 700, older ones rarer still: a
service allocates a few hundred objects per event, and each collection pass stalls every
handler in the process (the bid engine's p99 latency halved; bench/bidengine.py)."""

log = logging.getLogger("akservice")

PROBE_INTERVAL_S = 2.0
TASK_CANCEL_WAIT_S = 1.0  # a cancelled task that takes longer is left behind


@dataclass(frozen=True)
class ServiceSpec(Generic[S]):
    """What the runtime needs to know of a service."""

    name: str  # consumer group, status stream, AP_<NAME>_* settings
    title: str  # "chain relay", for people
    summary: str  # one line for --help
    distribution: str  # the package whose version --version prints
    settings: type[S]
    health_listen: str
    start: Callable[[Runtime[S]], Awaitable[None]]
    bus_defaults: dict[str, Any] = field(default_factory=dict)
    fatal: tuple[type[Exception], ...] = ()  # errors that end the process with one line
    module: str = ""  # what `python -m` runs, when not the distribution's name

    @property
    def runtime_settings(self) -> type[RuntimeSettings]:
        return runtime_settings(self.name, self.health_listen)


class _LoggedSubscriber(Subscriber):
    """A subscriber whose handlers log with the entry's stream, type and ids bound."""

    def add(self, payload_type: type[Payload], fn: Handler) -> None:
        stream = self.stream

        async def handler(msg: Message[Any]) -> None:
            with logs.bound(stream=stream, entry=msg.entry_id, type=msg.envelope.type,
                            **logs.ids_of(msg.payload)):  # fmt: skip
                await fn(msg)

        super().add(payload_type, handler)


class Runtime(Generic[S]):
    """One running service process: its settings, bus, consumer name and tasks."""

    def __init__(self, spec: ServiceSpec[S], config: Config[S]) -> None:
        self.spec = spec
        self.config = config
        self.settings: S = config.service
        self.consumer = consumer_name(spec.name, config.runtime.instance_id)
        self.bus = Bus.connect(config.redis, producer=self.consumer, settings=config.bus)
        self.stopping = asyncio.Event()
        self._subscribers: list[Subscriber] = []
        self._consuming: list[Subscriber] = []  # subscribers whose run() was started
        self._tasks: dict[asyncio.Task[Any], str] = {}
        self._checks: list[Readiness] = []
        self._routes: Routes = {}
        self._resources = contextlib.AsyncExitStack()
        self._awaiting: dict[str, str] = {}  # dependency -> why it is not there yet
        self._redis_problem: str | None = "not connected yet"
        self._started = False
        self._fatal: tuple[type[Exception], ...] = (
            StartupError,
            LeadershipLost,
            NotLeader,
            *spec.fatal,
        )
        self._main: asyncio.Task[Any] | None = None
        self.leadership: Leadership | None = None

    # -- what services call ---------------------------------------------------------------
    def subscriber(
        self, stream: str, *, partition_key: PartitionKey | None = None, **bus: Any
    ) -> Subscriber:
        """A consumer of ``stream`` in the service's group, run once ``start`` returns.

        ``bus`` overrides ``AKBUS_*`` settings for this subscriber (``concurrency=1``).
        """
        sub = _LoggedSubscriber(
            self.bus,
            stream,
            group=self.spec.name,
            consumer=self.consumer,
            settings=self.config.bus.model_copy(update=bus) if bus else self.config.bus,
            partition_key=partition_key,
        )
        self._subscribers.append(sub)
        return sub

    def supervise(self, work: Coroutine[Any, Any, Any], name: str) -> None:
        """Run ``work`` until shutdown; if it ends first, the process stops with code 1."""
        self._tasks[asyncio.create_task(work, name=f"{self.spec.name}-{name}")] = name

    def publish_status(
        self,
        compute: Callable[[], Awaitable[Payload | None]],
        every: float,
        *,
        wake: asyncio.Event | None = None,
        name: str | None = None,
    ) -> None:
        """Publish ``compute()`` on the status stream of ``name`` (the service's own by
        default) now, then every ``every`` seconds and soon after ``wake`` is set (a burst of
        wakes makes one status); None from ``compute`` publishes nothing this turn, and a
        turn without Redis is skipped."""
        self.supervise(self._statuses(compute, every, wake, name or self.spec.name), "status")

    async def _statuses(
        self,
        compute: Callable[[], Awaitable[Payload | None]],
        every: float,
        wake: asyncio.Event | None,
        name: str,
    ) -> None:
        while not self.stopping.is_set():
            if wake is not None:
                wake.clear()  # a change while computing is another turn
            with contextlib.suppress(ConnectionLost):
                status = await compute()
                if status is not None:
                    await self.bus.publish_status(name, status)
            waits = [asyncio.ensure_future(self.stopping.wait())]
            if wake is not None:
                waits.append(asyncio.ensure_future(wake.wait()))
            try:
                await asyncio.wait(waits, timeout=every, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()
            if wake is not None and wake.is_set() and not self.stopping.is_set():
                await asyncio.sleep(0.05)  # the rest of a burst of changes

    async def resource(self, manager: AbstractAsyncContextManager[T]) -> T:
        """Enter ``manager`` (a client, a pool); it is exited at shutdown, after the tasks."""
        return await self._resources.enter_async_context(manager)

    def route(
        self,
        method: str,
        path: str,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> None:
        """Serve ``handler`` for ``method path`` on the health port, beside ``/healthz``
        (an operator's REST API); it answers 404 until ``start`` adds it."""
        self._routes[method.upper(), path] = handler

    def reclaim_signals(self) -> None:
        """Make SIGTERM and SIGINT stop the process through the runtime again, after a
        library (kopf) installed handlers of its own."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig, self._main)

    def readiness(self, check: Readiness) -> None:
        """Add a check to ``/readyz``: it returns what is not ready (empty when ready)."""
        self._checks.append(check)

    async def wait_for(
        self,
        what: str,
        probe: Callable[[], Awaitable[T]],
        *,
        retry_on: tuple[type[BaseException], ...] = (ConnectionLost,),
    ) -> T:
        """``await probe()`` until it stops raising ``retry_on``, with growing pauses.

        Meanwhile ``/readyz`` reports ``waiting for <what>: <error>`` and the log says so
        now and then; a signal interrupts the wait.
        """

        def note(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            self._awaiting[what] = str(error)
            if state.attempt_number in (1, 5) or state.attempt_number % 20 == 0:
                log.warning("waiting for %s", what, extra={"error": str(error)})

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(retry_on),
            wait=wait_exponential_jitter(initial=0.2, max=10.0, jitter=0.2),
            before_sleep=note,
            reraise=True,
        )

        async def attempt() -> T:  # tenacity awaits only what it sees is a coroutine function
            return await probe()

        self._awaiting[what] = "not reached yet"
        try:
            return await retrying(attempt)
        finally:
            self._awaiting.pop(what, None)

    async def lead(self, candidate: Candidate, settings: LeaderElectionSettings) -> Leadership:
        """Wait as a standby until ``candidate``'s lease is this process's, then keep it (a
        supervised task: losing it stops the process) and give it up at shutdown.

        A standby is ready on ``/readyz`` (its role and the leader are in the answer): it
        can take over, and a rolling update waits for new pods to be ready. What the
        service wires after this call runs on the leader alone.
        """
        leadership = self.leadership = Leadership(candidate, settings)
        await leadership.acquire()
        self._resources.push_async_callback(candidate.release)
        self.supervise(leadership.keep(), "leader-lease")
        return leadership

    def role(self) -> dict[str, str]:
        """Of a part with a standby: its ``role`` (``standby``, ``leader``), the ``leader``'s
        identity as last seen and its own ``identity`` (both consumer names)."""
        if self.leadership is None:
            return {}
        return {
            "role": self.leadership.role,
            "leader": self.leadership.leader,
            "identity": self.consumer,
        }

    async def provider_address(self, configured: str = "") -> str:
        """The provider's account: ``configured`` (``AP_PROVIDER_ADDRESS``) or, when empty,
        the one the chain relay signs for, from its retained status (waited for)."""
        if configured:
            return configured

        async def from_relay() -> str:
            envelope = await self.bus.status("chain")
            payload = envelope.payload if envelope is not None else None
            if not isinstance(payload, ChainStatus) or not payload.provider:
                raise _NoRelayStatus("the chain relay has not published its status yet")
            return payload.provider

        return await self.wait_for(
            "the chain relay's status (the provider's address)",
            from_relay,
            retry_on=(_NoRelayStatus, ConnectionLost),
        )

    async def sleep(self, seconds: float) -> bool:
        """Sleep, or return early (False) when the process is stopping."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):  # not wait_for: it can swallow a cancellation
                await self.stopping.wait()
        return not self.stopping.is_set()

    # -- readiness ------------------------------------------------------------------------
    def not_ready(self) -> list[str]:
        problems = []
        if self._redis_problem:
            problems.append(f"Redis ({self.config.redis.where}): {self._redis_problem}")
        problems.extend(f"waiting for {what}: {why}" for what, why in self._awaiting.items())
        standby = self.leadership is not None and self.leadership.role == "standby"
        if standby and self.leadership is not None and self.leadership.last_error:
            problems.append(f"leader election: {self.leadership.last_error}")
        elif not self._started and not self._awaiting and not standby:
            problems.append("starting")
        for check in self._checks:
            problems.extend(check())
        return problems

    async def _probe_redis(self) -> None:
        while True:
            try:
                async with asyncio.timeout(PROBE_INTERVAL_S):
                    await self.bus.backend.ping()
                self._redis_problem = None
            except (ConnectionLost, TimeoutError) as exc:
                self._redis_problem = f"unreachable: {str(exc) or 'no answer'}"
            await asyncio.sleep(PROBE_INTERVAL_S)

    # -- the process ----------------------------------------------------------------------
    async def run(self) -> int:
        """Run until a signal (exit code 0) or a failure (1)."""
        host, port = self.config.runtime.listen()
        runtime_cls = self.spec.runtime_settings
        health = HealthServer(
            host,
            port,
            self.not_ready,
            variable=env_name(runtime_cls, "health_listen"),
            routes=self._routes,
            details=self.role,
        )
        try:
            await health.start()
        except StartupError as exc:
            log.error("%s", exc)
            await self.bus.close()
            return 1
        loop = asyncio.get_running_loop()
        main = self._main = asyncio.current_task()
        self.reclaim_signals()
        probe = asyncio.create_task(self._probe_redis(), name="akservice-redis-probe")
        lease = ConsumerLease(self.bus, self.consumer)
        code = 0
        try:
            code = await self._serve(lease)
        except asyncio.CancelledError:
            if not self.stopping.is_set() or main is None:
                raise
            main.uncancel()  # cancelled by our own signal handler: carry on shutting down
        except self._fatal as exc:
            log.error("%s", exc)
            code = 1
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            probe.cancel()
            code = max(code, await self._shutdown(lease, health))
        return code

    def _on_signal(self, sig: signal.Signals, main: asyncio.Task[Any] | None) -> None:
        if self.stopping.is_set():
            return
        log.info("%s received: stopping", sig.name)
        self.stopping.set()
        if not self._started and main is not None:
            main.cancel()  # interrupt whatever start-up is waiting for

    async def _serve(self, lease: ConsumerLease) -> int:
        await self.wait_for(f"Redis at {self.config.redis.where}", self.bus.backend.ping)
        await self.wait_for("the consumer name", lease.acquire)
        self.supervise(lease.keep(), "consumer-lease")
        log.info(
            "%s starting",
            self.spec.title,
            extra={"consumer": self.consumer, "version": version_of(self.spec.distribution)},
        )
        await self.spec.start(self)
        for sub in self._subscribers:
            self.supervise(sub.run(), f"consume-{sub.stream}")
            self._consuming.append(sub)
        self._started = True
        gc.freeze()  # what start-up built lives as long as the process: keep it out of GC passes
        gc.set_threshold(*GC_THRESHOLDS)
        log.info("%s ready", self.spec.title)
        stop = asyncio.create_task(self.stopping.wait())
        done, _ = await asyncio.wait([stop, *self._tasks], return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        # a task may end because the process is stopping (a loop that watches `stopping`)
        ended = [t for t in done if t is not stop]
        failed = [t for t in ended if not self.stopping.is_set() or _raised(t)]
        for task in failed:
            name = self._tasks[task]
            if task.cancelled():
                log.error("task %s was cancelled: stopping", name)
            elif (error := task.exception()) is not None:
                if isinstance(error, self._fatal):
                    log.error("task %s failed: %s", name, error)
                else:
                    log.error("task %s failed: stopping", name, exc_info=error)
            else:
                log.error("task %s ended on its own: stopping", name)
        return 1 if failed else 0

    async def _shutdown(self, lease: ConsumerLease, health: HealthServer) -> int:
        self.stopping.set()
        limit = self.config.bus.drain_timeout_s + 1.0
        started = time.monotonic()
        try:
            async with asyncio.timeout(limit):
                await self._drain(lease, health)
        except TimeoutError:
            log.warning("shutdown did not finish within %.1fs: leaving the rest pending", limit)
            return 0
        log.info("stopped", extra={"seconds": round(time.monotonic() - started, 3)})
        return 0

    async def _drain(self, lease: ConsumerLease, health: HealthServer) -> None:
        await asyncio.gather(*(sub.stop() for sub in self._consuming), return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        stuck: set[asyncio.Task[Any]] = set()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=TASK_CANCEL_WAIT_S)
        for task in stuck:
            log.warning("task %s did not stop when cancelled; leaving it", self._tasks[task])
        await self._resources.aclose()
        await lease.release()
        await self.bus.close()
        await health.stop()


class _NoRelayStatus(Exception):
    """The chain relay has not said which account it signs for yet."""


def _raised(task: asyncio.Task[Any]) -> bool:
    return not task.cancelled() and task.exception() is not None


def version_of(distribution: str) -> str:
    """The installed version of ``distribution`` (``unknown`` outside an installation)."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"
