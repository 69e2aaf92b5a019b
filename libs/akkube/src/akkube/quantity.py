"""Kubernetes quantities ("7500m", "32Gi", "1e3") as exact numbers, and resource amounts in
whole units.

Pure: no I/O library, so services' pure ``domain/`` packages may use it. What the API
server accepts (``resource.ParseQuantity``) is a decimal number, then a binary or decimal SI
suffix or a decimal exponent; anything else ("1K", "NaN", "1_000") is refused here too.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal, DecimalException
from typing import Any

log = logging.getLogger("akkube.quantity")

_QUANTITY = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?"
)
_SCALE = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15, "E": Decimal(10) ** 18, "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}  # fmt: skip


def parse_quantity(text: object) -> Decimal:
    """A Kubernetes quantity (``7500m``, ``32Gi``, ``1e3``) as an exact Decimal;
    ValueError if the API server would not take it."""
    return _parse_quantity(str(text).strip())


@functools.lru_cache(maxsize=1024)
def _parse_quantity(value: str) -> Decimal:
    """Remembered: the same few quantities come back in every pod of a big cluster."""
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        if suffix in _SCALE:  # "E" alone is exa, not an exponent
            return Decimal(number) * _SCALE[suffix]
        return Decimal(number) * Decimal(10) ** int(suffix[1:])
    except (DecimalException, OverflowError):  # an exponent past Decimal's range
        raise ValueError(f"{value!r} is not a Kubernetes quantity") from None


def amount(resources: Mapping[str, Any], name: str, scale: int = 1) -> int:
    """A resource as a whole number (rounded up, as Quantity.Value does); 0 if missing or
    unusable (a warning says which)."""
    value = resources.get(name)
    if value is None:
        return 0
    try:
        parsed = parse_quantity(value) * scale
    except (ValueError, DecimalException):  # not a quantity, or scaled past Decimal's range
        log.warning("ignoring resource %s: %s", name, value, extra={"resource": name})
        return 0
    return max(int(parsed.to_integral_value(ROUND_CEILING)), 0)
