"""Retrying Redis operations across outages with exponential backoff (tenacity)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_delay,
    stop_never,
    wait_exponential_jitter,
)

from akbus import metrics
from akbus.errors import ConnectionLost

T = TypeVar("T")
log = logging.getLogger("akbus")


async def until_reachable(
    where: str,
    operation: Callable[[], Awaitable[T]],
    *,
    give_up_after_s: float | None = None,
    keep_going: Callable[[], bool] = lambda: True,
) -> T:
    """Run ``operation``, retrying while Redis is unreachable.

    Waits grow exponentially (50 ms up to 2 s, with jitter). Gives up, re-raising
    :class:`ConnectionLost`, after ``give_up_after_s`` or as soon as ``keep_going()`` is false.
    The first attempt runs directly; the retry machinery is only set up once it failed.
    """
    try:
        return await operation()
    except ConnectionLost as exc:
        first_failure: ConnectionLost | None = exc

    def stop(state: RetryCallState) -> bool:
        if not keep_going():
            return True
        limit = stop_never if give_up_after_s is None else stop_after_delay(give_up_after_s)
        return bool(limit(state))

    def note(state: RetryCallState) -> None:
        metrics.RECONNECTS.labels(where).inc()
        if state.attempt_number in (1, 10) or state.attempt_number % 50 == 0:
            error = state.outcome.exception() if state.outcome else None
            log.warning("redis unreachable, retrying", extra={"where": where, "error": str(error)})

    retrying = AsyncRetrying(
        retry=retry_if_exception_type(ConnectionLost),
        wait=wait_exponential_jitter(multiplier=0.05, max=2.0, jitter=0.1),
        stop=stop,
        before_sleep=note,
        reraise=True,
    )

    async def attempt() -> T:
        nonlocal first_failure
        if first_failure is not None:  # the attempt made above counts as the first one
            failure, first_failure = first_failure, None
            raise failure
        return await operation()

    result: T = await retrying(attempt)
    return result
