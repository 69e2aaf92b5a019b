"""Test helpers for code that uses the bus: an in-memory bus, fast settings, waiting.

bus = memory_bus()                 # the same Bus, on MemoryBackend
async with running(subscriber):    # run in the background; drain on exit
    await eventually(lambda: seen == expected)
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from akbus.bus import Bus
from akbus.memory import MemoryBackend
from akbus.settings import BusSettings
from akbus.subscriber import Subscriber

T = TypeVar("T")

FAST_SETTINGS = BusSettings(
    batch=50,
    block_ms=50,
    concurrency=16,
    max_deliveries=4,
    retry_initial_s=0.01,
    retry_max_s=0.05,
    claim_interval_s=0.05,
    claim_idle_s=2.0,
    ack_interval_s=0.002,
    drain_timeout_s=2.0,
    stats_interval_s=0.05,
    retention_interval_s=3600,
    reply_ttl_s=60,
)
"""Settings that make retries, claims and shutdowns happen in milliseconds."""


def memory_bus(producer: str = "test", settings: BusSettings | None = None) -> Bus:
    """A bus on the in-memory backend."""
    return Bus(MemoryBackend(), producer=producer, settings=settings or FAST_SETTINGS)


@contextlib.asynccontextmanager
async def running(*subscribers: Subscriber) -> AsyncIterator[None]:
    """Run subscribers in the background until the block ends; then stop (drain) them."""
    tasks = [asyncio.create_task(s.run()) for s in subscribers]
    try:
        for sub in subscribers:
            await asyncio.wait_for(sub.ready.wait(), 10)
        yield
    finally:
        for sub in subscribers:
            await sub.stop()
        await asyncio.gather(*tasks)


async def eventually(
    check: Callable[[], T | Awaitable[T]],
    timeout_s: float = 10.0,
    what: str = "condition",
    *,
    until: Callable[[T], object] = bool,
) -> T:
    """Call ``check()`` (sync or async) until ``until(value)`` holds; that value.

    By default until the value is true. Raises ``AssertionError`` naming ``what`` and the
    last value after ``timeout_s``. :func:`eventually_sync` is the same outside a loop.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout_s}s (last: {value!r})")
        await asyncio.sleep(0.01)


def eventually_sync(
    check: Callable[[], T],
    timeout_s: float = 10.0,
    what: str = "condition",
    *,
    until: Callable[[T], object] = bool,
) -> T:
    """:func:`eventually` for threads and synchronous clients."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout_s}s (last: {value!r})")
        time.sleep(0.01)
