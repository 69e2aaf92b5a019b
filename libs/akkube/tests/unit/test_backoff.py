"""The delays between a watch's failed attempts."""

from __future__ import annotations

from akkube.watch import Backoff, describe


def test_failures_back_off_exponentially_with_jitter() -> None:
    backoff = Backoff(0.1, 1.0)
    delays = [backoff.next() for _ in range(6)]
    for delay, ceiling in zip(delays, (0.1, 0.2, 0.4, 0.8, 1.0, 1.0), strict=True):
        assert ceiling / 2 <= delay <= ceiling
    backoff.reset()
    assert backoff.next() <= 0.1


def test_a_failure_is_told_by_its_status_else_its_cause() -> None:
    class Answered(Exception):
        status, reason = 503, "Service Unavailable"

    class Unanswered(Exception):
        reason = ConnectionRefusedError("refused")

    assert describe(Answered()) == "503 Service Unavailable"
    assert describe(Unanswered()) == "Unanswered: refused"
    assert describe(TimeoutError("slow")) == "TimeoutError: slow"
