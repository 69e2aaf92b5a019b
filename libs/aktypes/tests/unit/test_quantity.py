from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aktypes.errors import InvalidQuantityError
from aktypes.quantity import (
    BYTE_SUFFIXES,
    format_bytes,
    format_cpu,
    parse_binary_bytes,
    parse_bytes,
    parse_cpu,
    parse_gpu_units,
)


@pytest.mark.parametrize(
    ("text", "millicpu"),
    [("500m", 500), ("0.5", 500), ("1", 1000), ("2.5", 2500), ("0.01", 10), (".25", 250)],
)
def test_cpu(text: str, millicpu: int) -> None:
    assert parse_cpu(text).value == millicpu
    assert not parse_cpu(text).drifted


def test_cpu_keeps_akash_float_truncation_and_reports_it() -> None:
    # Akash multiplies a float64 by 1000 and truncates: 2.01 CPU becomes 2009 millicpu.
    quantity = parse_cpu("2.01")
    assert quantity.value == 2009
    assert quantity.exact == Fraction(2010)
    assert quantity.drifted


@pytest.mark.parametrize("text", ["", "abc", "1.5m", "-1", "-100m", "1e", "inf", "nan", "0x10"])
def test_bad_cpu(text: str) -> None:
    with pytest.raises(InvalidQuantityError):
        parse_cpu(text)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512Mi", 512 * 2**20),
        ("1Gi", 2**30),
        ("1.5G", 1_500_000_000),
        ("1k", 1000),
        ("2Ki", 2048),
        ("1Ei", 2**60),
        ("1024", 1024),
        ("1e3", 1000),
        ("1.1Gi", 1181116006),  # truncated, as Akash does
    ],
)
def test_bytes(text: str, size: int) -> None:
    quantity = parse_bytes(text)
    assert quantity.value == size
    assert not quantity.lenient


@pytest.mark.parametrize(
    ("text", "size"),
    [("16gb", 16 * 10**9), ("512Mb", 512 * 10**6), ("1ti", 2**40), ("2gi", 2 * 2**30)],
)
def test_console_only_spellings_are_read_as_console_reads_them(text: str, size: int) -> None:
    quantity = parse_bytes(text)
    assert (quantity.value, quantity.lenient) == (size, True)


@pytest.mark.parametrize("text", ["", "Gi", "1Zi", "-1Gi", "1 G B", "1GiB2"])
def test_bad_bytes(text: str) -> None:
    with pytest.raises(InvalidQuantityError):
        parse_bytes(text)


def test_binary_only_bytes_refuse_decimal_units() -> None:
    assert parse_binary_bytes("80Gi").value == 80 * 2**30
    with pytest.raises(InvalidQuantityError):
        parse_binary_bytes("80G")


def test_gpu_units() -> None:
    assert parse_gpu_units("2") == 2
    for bad in ("1.0", "-1", "one", ""):
        with pytest.raises(InvalidQuantityError):
            parse_gpu_units(bad)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_millicpu_round_trip(millicpu: int) -> None:
    assert parse_cpu(f"{millicpu}m").value == millicpu
    assert parse_cpu(format_cpu(millicpu)).value == millicpu


@given(st.integers(min_value=0, max_value=2**40), st.sampled_from(sorted(BYTE_SUFFIXES)))
def test_whole_sizes_are_exact(number: int, suffix: str) -> None:
    unit = BYTE_SUFFIXES[suffix]
    if number * unit > 2**64 - 1:
        with pytest.raises(InvalidQuantityError):
            parse_bytes(f"{number}{suffix}")
        return
    quantity = parse_bytes(f"{number}{suffix}")
    assert quantity.exact == number * unit
    assert quantity.value == int(float(number) * unit)  # Akash's float arithmetic


@given(st.integers(min_value=0, max_value=2**62))
def test_format_bytes_round_trip(size: int) -> None:
    quantity = parse_bytes(format_bytes(size))
    assert quantity.exact == size
    if size <= 2**53:  # beyond, Akash's float64 parsing cannot hold every integer
        assert quantity.value == size


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=999))
def test_decimal_cpu_drift_is_detected_exactly(whole: int, thousandths: int) -> None:
    text = f"{whole}.{thousandths:03d}"
    quantity = parse_cpu(text)
    assert quantity.exact == whole * 1000 + thousandths
    assert quantity.drifted == (quantity.value != whole * 1000 + thousandths)
