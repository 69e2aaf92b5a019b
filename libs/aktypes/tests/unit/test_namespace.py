from __future__ import annotations

import hashlib
import re

from hypothesis import given

from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace
from aktypes.testing import lease_ids

BASE32HEX = "0123456789abcdefghijklmnopqrstuv"


def _by_hand(text: str) -> str:
    """Base32hex by bit arithmetic, independent of the base64 module."""
    digest = hashlib.sha224(text.encode()).digest()
    bits = int.from_bytes(digest, "big") << 1  # 224 bits padded to 225 = 45 × 5
    return "".join(BASE32HEX[(bits >> (5 * i)) & 31] for i in reversed(range(45)))


@given(lease_ids())
def test_namespace_is_base32hex_sha224_of_the_lease_id(lease: LeaseID) -> None:
    name = lease_namespace(lease)
    assert name == _by_hand(str(lease))
    assert len(name) == 45
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name)  # a DNS-1123 label


@given(lease_ids(), lease_ids())
def test_distinct_leases_get_distinct_namespaces(a: LeaseID, b: LeaseID) -> None:
    assert (lease_namespace(a) == lease_namespace(b)) == (a == b)
