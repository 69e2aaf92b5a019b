"""Bech32 account addresses (``akash1…``) with checksum validation.

Akash addresses are Cosmos SDK account addresses: bech32 (BIP-173, not bech32m) with the
human-readable prefix ``akash`` over 1–255 bytes (20 for keys, 32 for module accounts).
``AkashAddress`` is the annotated ``str`` type to use in models.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

import bech32
from pydantic import AfterValidator

from aktypes.errors import InvalidAddressError

AKASH_HRP = "akash"
_MAX_ADDRESS_BYTES = 255


@lru_cache(maxsize=65_536)
def address_bytes(address: str, hrp: str = AKASH_HRP) -> bytes:
    """Decode ``address`` and return the account bytes; raise if anything is off.

    Cached: a provider sees the same few thousand addresses over and over, and the
    checksum is costly in pure Python.
    """
    if not address:
        raise InvalidAddressError("address is empty")
    if address != address.lower():
        raise InvalidAddressError(f"address {address!r} must be lower case")
    decoded_hrp, data = bech32.bech32_decode(address)
    if decoded_hrp is None or data is None:
        raise InvalidAddressError(f"address {address!r} is not valid bech32 (bad checksum or form)")
    if decoded_hrp != hrp:
        raise InvalidAddressError(
            f"address {address!r} has prefix {decoded_hrp!r}, expected {hrp!r}"
        )
    raw = bech32.convertbits(data, 5, 8, False)
    if raw is None or not 1 <= len(raw) <= _MAX_ADDRESS_BYTES:
        raise InvalidAddressError(f"address {address!r} has an invalid payload length")
    return bytes(raw)


def encode_address(raw: bytes, hrp: str = AKASH_HRP) -> str:
    """Encode account bytes as a bech32 address with prefix ``hrp``."""
    if not 1 <= len(raw) <= _MAX_ADDRESS_BYTES:
        raise InvalidAddressError(f"cannot encode {len(raw)} bytes as an address")
    data = bech32.convertbits(list(raw), 8, 5, True)
    if data is None:  # pragma: no cover - convertbits only fails on out-of-range input
        raise InvalidAddressError("cannot convert address bytes")
    result: str = bech32.bech32_encode(hrp, data)
    return result


def is_address(value: str, hrp: str = AKASH_HRP) -> bool:
    """True when ``value`` is a valid address with prefix ``hrp``."""
    try:
        address_bytes(value, hrp)
    except InvalidAddressError:
        return False
    return True


def validate_address(value: str) -> str:
    """Return ``value`` unchanged if it is a valid ``akash1…`` address, else raise."""
    address_bytes(value)
    return value


AkashAddress = Annotated[str, AfterValidator(validate_address)]
"""A ``str`` that must be a valid ``akash1…`` bech32 address."""
