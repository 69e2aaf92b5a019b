"""Kubernetes resource quantities ("500m", "2", "512Mi", "1.5G", "1e3") as exact decimals.

Parsed as the API server's `resource.ParseQuantity` parses them, with its error messages;
like it, an amount is capped at 2^63-1 and a tiny non-zero one rounded up to 1n.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY = re.compile(PATTERN)
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")
MAX = Decimal(2**63 - 1)
_NANO = Decimal("1e-9")


def parse(value: str | int | float) -> Decimal:
    """A quantity as a Decimal; ValueError says what is wrong, as the API server does."""
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"quantities must match the regular expression '{PATTERN}'")
    number, suffix = match.groups()
    try:
        amount = Decimal(number)
    except InvalidOperation:
        raise ValueError("unable to parse numeric part of quantity") from None
    if suffix in _SUFFIXES:
        scale, exponent = _SUFFIXES[suffix], 0
    elif (power := _EXPONENT.match(suffix)) is not None:
        scale, exponent = Decimal(1), int(power.group(1))
    else:
        raise ValueError("unable to parse quantity's suffix")
    if not amount:
        return Decimal(0)
    magnitude = amount.adjusted() + exponent
    if magnitude > 30:  # beyond any cap: no need to compute it
        return MAX.copy_sign(amount)
    if magnitude < -30:
        return _NANO.copy_sign(amount)
    result = amount * scale * Decimal(10) ** exponent
    if abs(result) > MAX:
        return MAX.copy_sign(result)
    if abs(result) < _NANO:
        return _NANO.copy_sign(result)
    return result
