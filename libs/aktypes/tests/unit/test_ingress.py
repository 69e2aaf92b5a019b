from __future__ import annotations

import base64
import hashlib
import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host, ingress_host_label, is_domain_name
from aktypes.testing import lease_ids

OWNER = "akash1365yvmc4s7awdyj3n2sav7xfx76adc6dnmlx63"
PROVIDER = "akash1qgpqyqszqgpqyqszqgpqyqszqgpqyqszwv2uls"
BASE32HEX = "0123456789abcdefghijklmnopqrstuv"

PAIRS = [
    (LeaseID(owner=OWNER, dseq=1, gseq=1, oseq=1, provider=PROVIDER), "web"),
    (LeaseID(owner=OWNER, dseq=18_446_744_073, gseq=2, oseq=3, provider=PROVIDER), "ghost"),
    (LeaseID(owner=PROVIDER, dseq=4_242_424, gseq=1, oseq=1, provider=OWNER), "big-dipper"),
]


def _uuid5_by_hand(name: str) -> bytes:
    """RFC 4122 §4.3 name-based UUID, version 5: SHA-1 over the DNS namespace's bytes and
    the name, the version and variant bits set (Go's ``uuid.NewSHA1``)."""
    namespace = bytes.fromhex("6ba7b8109dad11d180b400c04fd430c8")  # RFC 4122 NameSpace_DNS
    digest = bytearray(hashlib.sha1(namespace + name.encode()).digest()[:16])  # noqa: S324 - RFC 4122 v5 is SHA-1
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    return bytes(digest)


def _base32hex_by_hand(data: bytes) -> str:
    bits = int.from_bytes(data, "big") << 2  # 128 bits padded to 130 = 26 × 5
    return "".join(BASE32HEX[(bits >> (5 * i)) & 31] for i in reversed(range(26)))


@pytest.mark.parametrize(("lease", "service"), PAIRS)
def test_the_label_is_gos_ingress_host(lease: LeaseID, service: str) -> None:
    name = f"{lease.owner}/{lease.dseq}/{lease.gseq}/{lease.oseq}/{lease.provider}{service}"
    expected = base64.b32hexencode(uuid.uuid5(uuid.NAMESPACE_DNS, name).bytes)
    assert ingress_host_label(lease, service) == expected.decode().rstrip("=").lower()
    assert ingress_host_label(lease, service) == _base32hex_by_hand(_uuid5_by_hand(name))
    assert ingress_host(lease, service, "Ingress.Example.COM") == (
        f"{_base32hex_by_hand(_uuid5_by_hand(name))}.ingress.example.com"
    )


@given(lease_ids(), st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True))
def test_labels_are_26_characters_of_a_dns_label(lease: LeaseID, service: str) -> None:
    label = ingress_host_label(lease, service)
    assert re.fullmatch(r"[0-9a-v]{26}", label)
    assert label == _base32hex_by_hand(_uuid5_by_hand(f"{lease}{service}"))


def test_services_and_leases_get_their_own_labels() -> None:
    lease = PAIRS[0][0]
    other = lease.model_copy(update={"oseq": 2})
    labels = {ingress_host_label(lease, "web"), ingress_host_label(lease, "api")}
    labels.add(ingress_host_label(other, "web"))
    assert len(labels) == 3


@pytest.mark.parametrize(
    "name",
    ["example.com", "ingress.example.com", "localhost", "a_b.example.com", "Foo.BAR.com",
     "x.example.com.", "1.example.com", "a" * 63 + ".com", "d.io",
     ("a" * 62 + ".") * 4 + "a"],
)  # fmt: skip
def test_go_accepts_these_domains(name: str) -> None:
    assert is_domain_name(name)


@pytest.mark.parametrize(
    "name",
    ["", "*.foo.bar.com", "foo.bar.com-", "foo.ba!!!r.com", "-foo.com", "foo-.com",
     "foo..com", ".foo.com", "127.0.0.1", "123", "a" * 64 + ".com", "föö.com", "foo com",
     ("a" * 62 + ".") * 4 + "aa"],
)  # fmt: skip
def test_go_refuses_these_domains(name: str) -> None:
    assert not is_domain_name(name)
