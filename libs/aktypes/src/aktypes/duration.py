"""Durations written the way Go writes them (``300ms``, ``5m``, ``1h30m``).

Akash's SDL (``reclamation.min_window``) and its provider's settings (``AP_BID_TIMEOUT=5m``)
use Go's ``time.ParseDuration`` syntax: a sequence of decimal numbers with a unit each
(``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``, ``h``), optionally signed. One parser serves
both; settings also take a bare number of seconds (``30``, ``0.5``).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Annotated

from pydantic import BeforeValidator

UNITS = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "µs": Fraction(1, 10**6),  # the micro sign
    "μs": Fraction(1, 10**6),  # and the Greek mu
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")
EXAMPLES = "examples: 30s, 5m, 1h30m, 250ms"


def go_duration(text: str) -> Fraction | None:
    """Go's ``time.ParseDuration`` in exact seconds; ``None`` if ``text`` is not one."""
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    if body == "0":
        return Fraction(0)
    pos, total = 0, Fraction(0)
    for match in _PART.finditer(body):
        if match.start() != pos:
            return None
        total += Fraction(match.group(1)) * UNITS[match.group(2)]
        pos = match.end()
    if pos != len(body) or not body:
        return None
    return sign * total


def parse_duration(value: object) -> float:
    """Seconds from a Go duration (``"1h30m"``) or a number of seconds (``30``, ``"0.5"``).

    Raises ``ValueError`` saying what a duration looks like.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration ({EXAMPLES})")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.fullmatch(text):
            return float(text)
        seconds = go_duration(text)
        if seconds is not None:
            return float(seconds)
    raise ValueError(f"{value!r} is not a duration ({EXAMPLES})")


def format_duration(seconds: float) -> str:
    """The shortest Go-style spelling of ``seconds``: ``30s``, ``500ms``, ``1h30m``."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        return f"{round(seconds * 1000, 3):g}ms"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    secs_part = f"{secs + (seconds - whole):g}s" if secs or seconds != whole else ""
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + secs_part
    return text or "0s"


Duration = Annotated[float, BeforeValidator(parse_duration)]
"""Seconds in a pydantic model or setting, written ``"5m"``, ``"1h30m"``, ``"250ms"`` or ``30``."""
