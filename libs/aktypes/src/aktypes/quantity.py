"""Parsing and formatting of resource quantities, with Akash's exact semantics.

- CPU is counted in millicpu: ``"500m"`` is 500, ``"0.5"`` and ``"1"`` are 500 and 1000.
- Memory and storage are bytes, with decimal (``k M G T P E``) or binary (``Ki Mi Gi Ti Pi
  Ei``) suffixes; GPU memory (``ram``) accepts the binary suffixes only.
- GPU units are whole numbers.

Akash reads fractional quantities as a float64 multiplied by the unit and truncated, so
``"2.01"`` CPU becomes 2009 millicpu there. A manifest must hash identically to the one
Akash's tools produce, so :func:`parse_cpu` and :func:`parse_bytes` keep that behaviour and
report, in ``Quantity.exact``, the value the text really means; callers warn when they differ.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

from aktypes.errors import InvalidQuantityError

K, KI = 1000, 1024
DECIMAL_SUFFIXES: dict[str, int] = {"k": K, "M": K**2, "G": K**3, "T": K**4, "P": K**5, "E": K**6}
BINARY_SUFFIXES: dict[str, int] = {
    "Ki": KI,
    "Mi": KI**2,
    "Gi": KI**3,
    "Ti": KI**4,
    "Pi": KI**5,
    "Ei": KI**6,
}
BYTE_SUFFIXES: dict[str, int] = {**DECIMAL_SUFFIXES, **BINARY_SUFFIXES}

MAX_UINT32 = 2**32 - 1
MAX_UINT64 = 2**64 - 1
_NUMBER_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


class Quantity(NamedTuple):
    """A parsed quantity: ``value`` as Akash computes it, ``exact`` as the text means it.

    ``lenient`` is set when the text only parses with Akash Console's looser rules (unit
    letters in any case, an optional ``b``: ``"16gb"``, ``"512Mb"``), which Akash's CLI
    refuses; callers warn about it.
    """

    value: int
    exact: Fraction
    lenient: bool = False

    @property
    def drifted(self) -> bool:
        """True when Akash's float arithmetic gives a different integer than exact math."""
        return self.value != int(self.exact)


def _number(text: str, what: str) -> tuple[float, Fraction]:
    if not _NUMBER_RE.match(text):
        raise InvalidQuantityError(f"{what} {text!r} is not a number")
    return float(text), Fraction(text)


def _scaled(text: str, unit: int, what: str, maximum: int) -> Quantity:
    approx, exact = _number(text, what)
    if exact < 0:
        raise InvalidQuantityError(f"{what} {text!r} is negative")
    approx *= unit
    exact *= unit
    if exact > maximum:
        raise InvalidQuantityError(f"{what} {text!r} is too large")
    return Quantity(int(approx), exact)


def parse_cpu(text: str) -> Quantity:
    """CPU units in millicpu: ``"500m"``, ``"0.5"``, ``"2"``."""
    text = text.strip()
    if text.startswith("-"):
        raise InvalidQuantityError(f"cpu units {text!r} is negative")
    if text.endswith("m"):
        digits = text[:-1]
        if not digits.isascii() or not digits.isdigit():
            raise InvalidQuantityError(f"cpu units {text!r}: millicpu must be a whole number")
        value = int(digits)
        if value > MAX_UINT32:
            raise InvalidQuantityError(f"cpu units {text!r} is too large")
        return Quantity(value, Fraction(value))
    return _scaled(text, 1000, "cpu units", MAX_UINT32)


def _split_suffix(text: str, suffixes: dict[str, int]) -> tuple[str, int]:
    for suffix, unit in suffixes.items():
        if text.endswith(suffix):
            return text[: -len(suffix)], unit
    return text, 1


_LENIENT_SIZE_RE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([kmgtpe])(i?)b?$", re.IGNORECASE)


def parse_bytes(text: str) -> Quantity:
    """Bytes with an optional decimal or binary suffix: ``"512Mi"``, ``"1.5G"``, ``"1024"``.

    Spellings only Akash Console reads (``"16gb"``, ``"1ti"``) are accepted the way it reads
    them (decimal unless ``i``, rounded up) with ``lenient`` set.
    """
    text = text.strip()
    number, unit = _split_suffix(text, BYTE_SUFFIXES)
    try:
        return _scaled(number, unit, "size", MAX_UINT64)
    except InvalidQuantityError:
        match = _LENIENT_SIZE_RE.match(text)
        if not match:
            raise
    base = 1024 if match.group(3) else 1000
    exact = Fraction(match.group(1)) * base ** ("kmgtpe".index(match.group(2).lower()) + 1)
    if exact > MAX_UINT64:
        raise InvalidQuantityError(f"size {text!r} is too large")
    value = -(-exact.numerator // exact.denominator)  # Console rounds up
    return Quantity(value, Fraction(value), lenient=True)


def parse_binary_bytes(text: str) -> Quantity:
    """Bytes with an optional binary suffix only (GPU memory): ``"80Gi"``."""
    text = text.strip()
    number, unit = _split_suffix(text, BINARY_SUFFIXES)
    return _scaled(number, unit, "size", MAX_UINT64)


def parse_gpu_units(text: str) -> int:
    """GPU units: a whole, non-negative number."""
    text = text.strip()
    if not text.isascii() or not text.isdigit():
        raise InvalidQuantityError(f"gpu units {text!r} must be a whole number")
    value = int(text)
    if value > MAX_UINT64:
        raise InvalidQuantityError(f"gpu units {text!r} is too large")
    return value


def format_bytes(value: int) -> str:
    """The shortest exact binary form: 536870912 → ``"512Mi"``, 1000 → ``"1000"``."""
    for suffix, unit in reversed(BINARY_SUFFIXES.items()):
        if value and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def format_cpu(millicpu: int) -> str:
    """Whole CPUs when exact, else millicpu: 2000 → ``"2"``, 500 → ``"500m"``."""
    if millicpu % 1000 == 0:
        return str(millicpu // 1000)
    return f"{millicpu}m"
