from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from aktypes.coin import Coin, Dec, DecCoin
from aktypes.errors import InvalidPriceError

decs = st.integers(min_value=-(10**30), max_value=10**30).map(Dec.from_raw)


def test_string_form_is_cosmos_legacy_dec() -> None:
    assert str(Dec("200")) == "200.000000000000000000"
    assert str(Dec("-0.5")) == "-0.500000000000000000"
    assert str(Dec(".25")) == "0.250000000000000000"
    assert Dec("1.5").raw == 1_500_000_000_000_000_000
    assert Dec("1.500").normalized() == "1.5"
    assert Dec(0).normalized() == "0"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "invalid decimal"),
        ("1.", "invalid decimal"),
        ("abc", "invalid decimal"),
        ("1e3", "invalid decimal"),
        ("0.0000000000000000001", "more than 18 decimals"),
    ],
)
def test_bad_decimals(text: str, reason: str) -> None:
    with pytest.raises(InvalidPriceError, match=reason):
        Dec(text)


def test_floats_are_refused() -> None:
    with pytest.raises(InvalidPriceError):
        Dec(0.1)  # type: ignore[arg-type]

    class Price(BaseModel):
        amount: Dec

    with pytest.raises(ValueError, match="string or an integer"):
        Price.model_validate({"amount": 0.1})
    assert Price.model_validate_json('{"amount": "0.1"}').amount == Dec("0.1")
    assert Price(amount=Dec("2.5")).model_dump_json() == '{"amount":"2.500000000000000000"}'


def test_sums_are_exact_where_floats_are_not() -> None:
    total = Dec(0)
    for _ in range(10):
        total += Dec("0.1")
    assert total == Dec(1)
    assert sum(0.1 for _ in range(10)) != 1.0  # the reason floats are banned


def test_multiplication_and_division_round_half_to_even() -> None:
    tiny = Dec.from_raw(5)  # 5e-18
    assert (tiny * Dec("0.1")).raw == 0  # 0.5e-18 → 0 (even)
    assert (Dec.from_raw(15) * Dec("0.1")).raw == 2  # 1.5e-18 → 2 (even)
    assert Dec(1).quo(3) == Dec("0.333333333333333333")
    assert Dec(2).quo(3) == Dec("0.666666666666666667")
    assert Dec(-2).quo(3) == Dec("-0.666666666666666667")
    with pytest.raises(ZeroDivisionError):
        Dec(1).quo(0)


@given(decs, decs)
def test_addition_is_exact(a: Dec, b: Dec) -> None:
    assert (a + b) - b == a
    assert a + b == b + a
    with localcontext() as ctx:
        ctx.prec = 100
        assert (a + b).to_decimal() == a.to_decimal() + b.to_decimal()


@given(decs, st.integers(min_value=0, max_value=1000))
def test_integer_multiplication_is_repeated_addition(a: Dec, n: int) -> None:
    total = Dec(0)
    for _ in range(min(n, 50)):
        total += a
    assert a * min(n, 50) == total


@given(decs, decs.filter(lambda d: not d.is_zero()))
def test_dec_product_and_quotient_match_exact_rounding(a: Dec, b: Dec) -> None:
    scale = 10**18
    exact_product = Fraction(a.raw * b.raw, scale)
    assert abs(Fraction((a * b).raw) - exact_product) <= Fraction(1, 2)
    exact_quotient = Fraction(a.raw * scale, b.raw)
    assert abs(Fraction(a.quo(b).raw) - exact_quotient) <= 1


@given(decs)
def test_string_round_trip(a: Dec) -> None:
    assert Dec(str(a)) == a
    assert Dec(a.normalized()) == a
    assert Decimal(str(a)) == a.to_decimal()


def test_dec_coin_arithmetic() -> None:
    price = DecCoin(denom="uakt", amount=Dec("1.25"))
    assert price * 4 == DecCoin(denom="uakt", amount=Dec(5))
    assert price + price == DecCoin.parse("2.5uakt")
    with pytest.raises(InvalidPriceError, match="denominations differ"):
        _ = price + DecCoin(denom="uact", amount=Dec(1))
    assert DecCoin.model_validate_json(price.model_dump_json()) == price
    with pytest.raises(ValueError, match="pattern"):
        DecCoin(denom="x", amount=Dec(1))


def test_coin() -> None:
    coin = Coin.parse("500000uakt")
    assert (coin.amount, coin.denom, str(coin)) == (500000, "uakt", "500000uakt")
    assert coin.model_dump_json() == '{"denom":"uakt","amount":"500000"}'
    assert Coin.model_validate_json('{"denom":"uakt","amount":"7"}').amount == 7
    with pytest.raises(ValueError, match="negative"):
        Coin(denom="uakt", amount=-1)
    with pytest.raises(InvalidPriceError):
        Coin.parse("1.5uakt")
