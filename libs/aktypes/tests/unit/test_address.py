from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aktypes.address import address_bytes, encode_address, is_address, validate_address
from aktypes.errors import InvalidAddressError
from aktypes.testing import AUDITOR


def test_real_akash_address_is_valid() -> None:
    raw = address_bytes(AUDITOR)
    assert len(raw) == 20
    assert encode_address(raw) == AUDITOR


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "empty"),
        (AUDITOR[:-1] + ("q" if AUDITOR[-1] != "q" else "p"), "bech32"),  # checksum broken
        (AUDITOR.upper(), "lower case"),
        ("cosmos1365yvmc4s7awdyj3n2sav7xfx76adc6dnmlx63", "bech32"),  # checksum is per prefix
        ("akash1", "bech32"),
        ("not an address", "bech32"),
    ],
)
def test_invalid_addresses_are_refused_with_a_reason(value: str, reason: str) -> None:
    with pytest.raises(InvalidAddressError, match=reason):
        validate_address(value)
    assert not is_address(value)


def test_other_prefix_is_reported() -> None:
    cosmos = encode_address(b"\x07" * 20, hrp="cosmos")
    with pytest.raises(InvalidAddressError, match="prefix 'cosmos'"):
        address_bytes(cosmos)
    assert is_address(cosmos, hrp="cosmos")


@given(st.binary(min_size=1, max_size=64))
def test_address_round_trip(raw: bytes) -> None:
    address = encode_address(raw)
    assert address.startswith("akash1")
    assert address_bytes(address) == raw
