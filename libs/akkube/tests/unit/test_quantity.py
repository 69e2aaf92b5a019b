"""Quantities as the API server parses them, and resource lists in whole units."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from akkube.pods import Use, use_of
from akkube.quantity import amount, parse_quantity

GiB = 2**30


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", Decimal(8)),
        ("7500m", Decimal("7.5")),
        ("32Gi", Decimal(32 * GiB)),
        ("500M", Decimal(500 * 10**6)),
        ("64G", Decimal(64 * 10**9)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("1E", Decimal(10**18)),
        ("1.5G", Decimal(15 * 10**8)),
        ("100n", Decimal("1e-7")),
        (".5Ki", Decimal(512)),
        ("+2", Decimal(2)),
    ],
)
def test_quantities_parse_as_the_api_server_parses_them(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["1K", "1ki", "NaN", "Infinity", "1_000", "1e3Gi", "", "Gi", "1e99999999999"]
)
def test_quantities_the_api_server_refuses_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)


def test_capacities_round_up_and_count_both_gpu_vendors() -> None:
    assert use_of(
        {"cpu": "100n", "memory": "1.5", "nvidia.com/gpu": "2", "amd.com/gpu": "1"}
    ) == Use(cpu=1, memory=2, gpu=3)


def test_what_no_server_sends_counts_as_nothing_and_is_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert use_of({"cpu": "lots"}) == Use()
    assert amount({}, "memory") == 0
    assert amount({"memory": "-1Gi"}, "memory") == 0  # never below zero
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "ignoring resource cpu: lots"
    ]


def test_an_amount_past_decimals_range_counts_as_nothing() -> None:
    assert amount({"cpu": "9e999999"}, "cpu", 1000) == 0
