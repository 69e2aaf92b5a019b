"""Exact decimal amounts and coins, as the Cosmos SDK computes them.

``Dec`` is Cosmos's ``LegacyDec``: a signed integer scaled by 10^18. Addition, subtraction
and multiplication by an integer are exact; ``Dec × Dec`` and ``Dec ÷ Dec`` round half to
even at the 18th decimal, like the SDK. Floats are refused everywhere.

``DecCoin`` (denom + Dec) is how the chain prices resources; ``Coin`` (denom + integer) is
how it moves funds. Both travel in JSON with the amount as a string, like Cosmos.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    GetCoreSchemaHandler,
    PlainSerializer,
    PlainValidator,
    StringConstraints,
)
from pydantic_core import core_schema

from aktypes.errors import InvalidPriceError

PRECISION = 18
_SCALE: int = 10**PRECISION
_HALF: int = _SCALE // 2
_MAX_BITS = 315  # LegacyDec refuses values wider than 256 + 59 bits
_DEC_RE = re.compile(r"^([+-])?(\d*)(?:\.(\d+))?$")
DENOM_PATTERN = r"^[a-zA-Z][a-zA-Z0-9/:._-]{2,127}$"
_DENOM_RE = re.compile(DENOM_PATTERN)

Denom = Annotated[str, StringConstraints(pattern=DENOM_PATTERN)]
"""A Cosmos coin denomination such as ``uakt``, ``uact`` or ``ibc/…``."""


def validate_denom(denom: str) -> str:
    if not _DENOM_RE.match(denom):
        raise InvalidPriceError(f"invalid denomination {denom!r}")
    return denom


def _chop_round_half_even(value: int) -> int:
    """Divide by 10^18 rounding half to even (Cosmos ``chopPrecisionAndRound``)."""
    if value < 0:
        return -_chop_round_half_even(-value)
    quotient, remainder = divmod(value, _SCALE)
    if remainder > _HALF or (remainder == _HALF and quotient % 2 == 1):
        quotient += 1
    return quotient


class Dec:
    """An exact decimal with 18 fractional digits (Cosmos ``LegacyDec``)."""

    __slots__ = ("_raw",)
    _raw: int

    def __init__(self, value: int | str | Dec = 0) -> None:
        if isinstance(value, Dec):
            raw = value._raw
        elif isinstance(value, bool) or not isinstance(value, int | str):
            raise InvalidPriceError(f"a decimal must be built from int or str, not {value!r}")
        elif isinstance(value, int):
            raw = value * _SCALE
        else:
            raw = self._parse_raw(value)
        self._raw = self._checked(raw)

    @staticmethod
    def _checked(raw: int) -> int:
        if raw.bit_length() > _MAX_BITS:
            raise InvalidPriceError("decimal value out of range")
        return raw

    @staticmethod
    def _parse_raw(text: str) -> int:
        match = _DEC_RE.match(text)
        if not text or not match or not (match.group(2) or match.group(3)):
            raise InvalidPriceError(f"invalid decimal {text!r}")
        sign, whole, frac = match.groups()
        frac = frac or ""
        if len(frac) > PRECISION:
            raise InvalidPriceError(f"decimal {text!r} has more than {PRECISION} decimals")
        raw = int((whole or "0") + frac.ljust(PRECISION, "0"))
        return -raw if sign == "-" else raw

    @classmethod
    def from_raw(cls, raw: int) -> Dec:
        """Build from the scaled integer (``1.5`` is ``1500000000000000000``)."""
        dec = cls.__new__(cls)
        dec._raw = cls._checked(raw)
        return dec

    @property
    def raw(self) -> int:
        """The scaled integer, as Cosmos puts a LegacyDec on the protobuf wire."""
        return self._raw

    def __str__(self) -> str:
        sign = "-" if self._raw < 0 else ""
        whole, frac = divmod(abs(self._raw), _SCALE)
        return f"{sign}{whole}.{frac:018d}"

    def __repr__(self) -> str:
        return f"Dec('{self.normalized()}')"

    def normalized(self) -> str:
        """Shortest exact form: ``1.5`` rather than ``1.500000000000000000``."""
        text = str(self).rstrip("0").rstrip(".")
        return "0" if text in ("", "-0") else text

    def to_decimal(self) -> Decimal:
        return Decimal(str(self))  # exact: no context rounding

    def is_zero(self) -> bool:
        return self._raw == 0

    def is_negative(self) -> bool:
        return self._raw < 0

    def is_positive(self) -> bool:
        return self._raw > 0

    def truncate(self) -> int:
        """Integer part, rounding toward zero."""
        return abs(self._raw) // _SCALE * (-1 if self._raw < 0 else 1)

    def ceil(self) -> int:
        return -((-self._raw) // _SCALE)

    @staticmethod
    def _coerce(other: object) -> Dec | None:
        if isinstance(other, Dec):
            return other
        if isinstance(other, int) and not isinstance(other, bool):
            return Dec(other)
        return None

    def __add__(self, other: Dec | int) -> Dec:
        rhs = self._coerce(other)
        if rhs is None:
            return NotImplemented
        return Dec.from_raw(self._raw + rhs._raw)

    __radd__ = __add__

    def __sub__(self, other: Dec | int) -> Dec:
        rhs = self._coerce(other)
        if rhs is None:
            return NotImplemented
        return Dec.from_raw(self._raw - rhs._raw)

    def __rsub__(self, other: int) -> Dec:
        lhs = self._coerce(other)
        if lhs is None:
            return NotImplemented
        return Dec.from_raw(lhs._raw - self._raw)

    def __neg__(self) -> Dec:
        return Dec.from_raw(-self._raw)

    def __abs__(self) -> Dec:
        return Dec.from_raw(abs(self._raw))

    def __mul__(self, other: Dec | int) -> Dec:
        if isinstance(other, int) and not isinstance(other, bool):
            return Dec.from_raw(self._raw * other)
        if isinstance(other, Dec):
            return Dec.from_raw(_chop_round_half_even(self._raw * other._raw))
        return NotImplemented

    __rmul__ = __mul__

    def quo(self, other: Dec | int) -> Dec:
        """Divide, rounding half to even at the 18th decimal (Cosmos ``Quo``)."""
        rhs = self._coerce(other)
        if rhs is None:
            raise TypeError(f"cannot divide a Dec by {other!r}")
        if rhs._raw == 0:
            raise ZeroDivisionError("decimal division by zero")
        numerator = self._raw * _SCALE * _SCALE
        quotient = abs(numerator) // abs(rhs._raw)
        if (numerator < 0) != (rhs._raw < 0):
            quotient = -quotient
        return Dec.from_raw(_chop_round_half_even(quotient))

    def __truediv__(self, other: Dec | int) -> Dec:
        return self.quo(other)

    def _cmp_raw(self, other: object) -> int | None:
        rhs = self._coerce(other)
        return None if rhs is None else rhs._raw

    def __eq__(self, other: object) -> bool:
        raw = self._cmp_raw(other)
        return raw is not None and self._raw == raw

    def __hash__(self) -> int:
        return hash(("Dec", self._raw))

    def __lt__(self, other: Dec | int) -> bool:
        raw = self._cmp_raw(other)
        if raw is None:
            return NotImplemented
        return self._raw < raw

    def __le__(self, other: Dec | int) -> bool:
        raw = self._cmp_raw(other)
        if raw is None:
            return NotImplemented
        return self._raw <= raw

    def __gt__(self, other: Dec | int) -> bool:
        raw = self._cmp_raw(other)
        if raw is None:
            return NotImplemented
        return self._raw > raw

    def __ge__(self, other: Dec | int) -> bool:
        raw = self._cmp_raw(other)
        if raw is None:
            return NotImplemented
        return self._raw >= raw

    def __bool__(self) -> bool:
        return self._raw != 0

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def validate(value: Any) -> Dec:
            if isinstance(value, Dec):
                return value
            if isinstance(value, str | int) and not isinstance(value, bool):
                return Dec(value)
            raise InvalidPriceError(f"a decimal must be a string or an integer, not {value!r}")

        return core_schema.no_info_plain_validator_function(
            validate,
            json_schema_input_schema=core_schema.str_schema(),
            serialization=core_schema.to_string_ser_schema(),
        )


class DecCoin(BaseModel):
    """A decimal amount of one denomination: how the chain prices resources."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    denom: Denom
    amount: Dec

    @classmethod
    def parse(cls, text: str) -> DecCoin:
        """Parse Cosmos's compact form, e.g. ``"1.5uakt"``."""
        match = re.match(r"^([+-]?\d*\.?\d+)([a-zA-Z][a-zA-Z0-9/:._-]{2,127})$", text.strip())
        if not match:
            raise InvalidPriceError(f"invalid decimal coin {text!r}")
        return cls(denom=match.group(2), amount=Dec(match.group(1)))

    def __str__(self) -> str:
        return f"{self.amount}{self.denom}"

    def _same_denom(self, other: DecCoin) -> None:
        if other.denom != self.denom:
            raise InvalidPriceError(f"denominations differ: {self.denom} != {other.denom}")

    def __add__(self, other: DecCoin) -> DecCoin:
        self._same_denom(other)
        return DecCoin(denom=self.denom, amount=self.amount + other.amount)

    def __sub__(self, other: DecCoin) -> DecCoin:
        self._same_denom(other)
        return DecCoin(denom=self.denom, amount=self.amount - other.amount)

    def __mul__(self, count: int) -> DecCoin:
        return DecCoin(denom=self.denom, amount=self.amount * count)

    def is_valid(self) -> bool:
        """Cosmos validity: a known-good denomination and a non-negative amount."""
        return not self.amount.is_negative()

    def __lt__(self, other: DecCoin) -> bool:
        self._same_denom(other)
        return self.amount < other.amount

    def __le__(self, other: DecCoin) -> bool:
        self._same_denom(other)
        return self.amount <= other.amount


def _validate_coin_amount(value: Any) -> int:
    if isinstance(value, bool):
        raise InvalidPriceError("a coin amount must be an integer")
    if isinstance(value, int):
        amount = value
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        amount = int(value)
    else:
        raise InvalidPriceError(f"invalid coin amount {value!r}")
    if amount < 0:
        raise InvalidPriceError("a coin amount cannot be negative")
    return amount


CoinAmount = Annotated[
    int, PlainValidator(_validate_coin_amount), PlainSerializer(str, return_type=str)
]
"""A non-negative integer amount; a decimal string in JSON, like Cosmos."""


class Coin(BaseModel):
    """An integer amount of one denomination: how the chain moves funds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    denom: Denom
    amount: CoinAmount

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse Cosmos's compact form, e.g. ``"500000uakt"``."""
        match = re.match(r"^(\d+)([a-zA-Z][a-zA-Z0-9/:._-]{2,127})$", text.strip())
        if not match:
            raise InvalidPriceError(f"invalid coin {text!r}")
        return cls(denom=match.group(2), amount=int(match.group(1)))

    def __str__(self) -> str:
        return f"{self.amount}{self.denom}"
