"""The public certificate's rules (names, pairs of files, when to renew, the TLS-ALPN-01
certificate), its settings, and the swap into live TLS contexts, without a process."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import ValidationError

from akgateway.adapters.acme import AcmeConfig, AcmeIssuer, Folder
from akgateway.adapters.public_tls import PublicTLS
from akgateway.domain.public_tls import (
    ACME_IDENTIFIER,
    alpn_challenge_certificate,
    dns_record,
    hostname,
    order_reason,
    read_pair,
    retry_after,
    serves,
)
from akgateway.errors import AcmeError, PublicCertificateError
from akgateway.settings import GatewaySettings
from akservice.settings import describe_error

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def issue(
    *names: str, start: dt.datetime = NOW, days: float = 90
) -> tuple[bytes, bytes, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else "x")])
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
    )
    if names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False
        )
    cert = builder.sign(key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem, cert


def test_hostnames_are_dns_names_as_sni_carries_them() -> None:
    assert hostname(" Provider.Example.COM. ") == "provider.example.com"
    assert hostname("*.example.com") == "*.example.com"
    for bad in ("10.0.0.1", "::1", "localhost", "a..b", "-a.example.com", "a b.example", ""):
        with pytest.raises(ValueError, match="not a DNS name|IP address"):
            hostname(bad)


def test_a_name_is_served_exactly_or_one_level_under_a_wildcard() -> None:
    names = ["provider.example.com", "*.api.example.com"]
    assert serves("provider.example.com", names)
    assert serves("PROVIDER.example.com.", names)
    assert serves("eu.api.example.com", names)
    assert not serves("a.eu.api.example.com", names)
    assert not serves("api.example.com", names)
    assert not serves("other.example.com", names)
    assert not serves(None, names)
    assert not serves("", names)


def test_a_pair_is_a_chain_and_the_key_of_its_leaf() -> None:
    cert, key, leaf = issue("provider.example.com", "*.example.com")
    found = read_pair(cert, key, "c.pem", "k.pem")
    assert found.leaf == leaf
    assert found.names == {"provider.example.com", "*.example.com"}
    assert found.covers("anything.example.com")
    assert found.serial == format(leaf.serial_number, "x")
    assert found.pem.startswith(cert) and b"PRIVATE KEY" in found.pem

    _, other_key, _ = issue("provider.example.com")
    with pytest.raises(PublicCertificateError, match=r"^k.pem: the key does not belong"):
        read_pair(cert, other_key, "c.pem", "k.pem")
    with pytest.raises(PublicCertificateError, match=r"^c.pem: no PEM certificate"):
        read_pair(b"garbage", key, "c.pem", "k.pem")
    with pytest.raises(PublicCertificateError, match=r"^k.pem: no unencrypted PEM private key"):
        read_pair(cert, b"garbage", "c.pem", "k.pem")


def test_a_certificate_is_renewed_at_two_thirds_of_its_lifetime() -> None:
    cert, key, _ = issue("p.example.com", start=NOW, days=90)
    current = read_pair(cert, key, "c", "k")
    assert current.renewal_time() == NOW + dt.timedelta(days=60)
    names = ["p.example.com"]
    assert order_reason(None, names, NOW) == "no certificate yet"
    assert order_reason(current, names, NOW + dt.timedelta(days=59)) is None
    assert "two thirds" in str(order_reason(current, names, NOW + dt.timedelta(days=60)))
    assert order_reason(current, names, NOW + dt.timedelta(days=91)) == "the certificate expired"
    assert order_reason(current, [*names, "q.example.com"], NOW) == (
        "the certificate does not cover q.example.com"
    )


def test_failed_orders_wait_longer_each_time_up_to_an_hour() -> None:
    assert [retry_after(n, 60) for n in (1, 2, 3, 6, 7, 20)] == [
        60, 120, 240, 1920, 3600, 3600
    ]  # fmt: skip
    assert retry_after(1, 7200) == 7200


def test_dns01_record_names() -> None:
    assert dns_record("p.example.com") == "_acme-challenge.p.example.com"
    assert dns_record("*.example.com") == "_acme-challenge.example.com"


def test_the_tls_alpn01_certificate_carries_the_key_authorization_digest() -> None:
    pem = alpn_challenge_certificate("p.example.com", "token.thumbprint")
    cert = x509.load_pem_x509_certificate(pem)
    assert serialization.load_pem_private_key(pem, None).public_key() == cert.public_key()
    extension = cert.extensions.get_extension_for_oid(ACME_IDENTIFIER)
    assert extension.critical
    digest = hashlib.sha256(b"token.thumbprint").digest()
    assert isinstance(extension.value, x509.UnrecognizedExtension)
    assert extension.value.value == b"\x04\x20" + digest  # DER OCTET STRING of 32 bytes
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["p.example.com"]


def test_settings_name_the_public_certificate_and_its_hostnames(tmp_path: Path) -> None:
    plain = GatewaySettings(cluster_public_hostname="Provider.Example.com")
    assert plain.public_files() is None
    assert plain.public_hostnames() == ("provider.example.com",)
    acme = GatewaySettings.model_validate(
        {
            "gateway_tls_dir": tmp_path,
            "gateway_acme_directory": "https://ca.example/dir",
            "gateway_tls_hostnames": "a.example.com, b.example.com,a.example.com",
        }
    )
    assert acme.public_hostnames() == ("a.example.com", "b.example.com")
    assert acme.public_files() == (tmp_path / "acme" / "cert.pem", tmp_path / "acme" / "key.pem")
    files = GatewaySettings.model_validate(
        {
            "gateway_tls_cert": tmp_path / "c",
            "gateway_tls_key": tmp_path / "k",
            "cluster_public_hostname": "p.example.com",
        }
    )
    assert files.public_files() == (tmp_path / "c", tmp_path / "k")


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"AP_GATEWAY_TLS_CERT": "/x.crt"}, "set both AP_GATEWAY_TLS_CERT and AP_GATEWAY_TLS_KEY"),
        (
            {"AP_GATEWAY_TLS_CERT": "/x", "AP_GATEWAY_TLS_KEY": "/y",
             "AP_GATEWAY_ACME_DIRECTORY": "https://ca/dir", "AP_GATEWAY_TLS_HOSTNAMES": "p.example.com"},
            "from AP_GATEWAY_TLS_CERT/KEY or from ACME",
        ),
        ({"AP_GATEWAY_ACME_DIRECTORY": "https://ca/dir"}, "needs AP_GATEWAY_TLS_HOSTNAMES"),
        (
            {"AP_GATEWAY_ACME_DIRECTORY": "https://ca/dir", "AP_GATEWAY_TLS_HOSTNAMES": "p.example.com",
             "AP_GATEWAY_ACME_CHALLENGE": "dns-01"},
            "dns-01 needs AP_GATEWAY_ACME_DNS_HOOK",
        ),
        ({"AP_GATEWAY_TLS_HOSTNAMES": "10.0.0.1"}, "AP_GATEWAY_TLS_HOSTNAMES='10.0.0.1'"),
        ({"AP_GATEWAY_ACME_CHALLENGE": "http-02"}, "AP_GATEWAY_ACME_CHALLENGE='http-02'"),
        ({"AP_GATEWAY_ACME_DIRECTORY": "letsencrypt"}, "AP_GATEWAY_ACME_DIRECTORY='letsencrypt': not an http(s) URL"),
        (
            {"AP_GATEWAY_ACME_DIRECTORY": "https://ca/dir", "AP_GATEWAY_TLS_HOSTNAMES": "p.example.com",
             "AP_GATEWAY_ACME_EAB_KID": "kid-1"},
            "AP_GATEWAY_ACME_EAB_KID needs AP_GATEWAY_ACME_EAB_HMAC",
        ),
    ],
)  # fmt: skip
def test_public_tls_settings_refused_in_one_line(
    env: dict[str, str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``python -m akgateway`` prints before it exits 2 (the runtime's rule)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as raised:
        GatewaySettings()
    [line] = describe_error(GatewaySettings, raised.value)
    assert says in line


def test_the_swap_loads_a_new_pair_and_keeps_the_served_one_when_the_new_one_fails(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cert_file, key_file = tmp_path / "c.pem", tmp_path / "k.pem"
    public = PublicTLS(["p.example.com"], cert_file, key_file, alpns=((), ("h2",)))
    assert public.load() is False  # no files yet: nothing to serve, not an error
    assert public.current is None

    base = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    public.route(base, public.contexts[0])
    assert base.sni_callback is not None

    cert, key, leaf = issue("p.example.com", start=dt.datetime.now(dt.UTC))
    cert_file.write_bytes(cert)
    key_file.write_bytes(key)
    assert public.load() is True
    assert public.current is not None and public.current.leaf == leaf
    assert public.load() is False  # unchanged

    _, other_key, _ = issue("p.example.com")
    key_file.write_bytes(other_key)
    with pytest.raises(PublicCertificateError, match="does not belong"):
        public.load()
    assert public.current.leaf == leaf
    key_file.write_bytes(b"junk")
    with caplog.at_level(logging.WARNING):
        assert public.check() is False
        assert public.check() is False  # the same files: read once, warned once
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"the public certificate was not replaced: {key_file}: no unencrypted PEM private key in it"
    ]
    assert public.current.leaf == leaf


def test_acme_files_are_private_and_replaced_whole(tmp_path: Path) -> None:
    folder = Folder(tmp_path / "acme")
    folder.write("key.pem", b"one")
    folder.write("key.pem", b"two")
    assert (tmp_path / "acme" / "key.pem").read_bytes() == b"two"
    assert stat.S_IMODE((tmp_path / "acme").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "acme" / "key.pem").stat().st_mode) == 0o600
    assert sorted(p.name for p in (tmp_path / "acme").iterdir()) == ["key.pem"]
    assert folder.read("missing") is None


async def test_a_failed_order_is_one_line_and_tried_again_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A refusal is a warning, a bug an error naming where it was raised; neither stops the
    gateway: the next order waits twice as long."""
    public = PublicTLS(["p.example.com"], tmp_path / "c.pem", tmp_path / "k.pem")
    config = AcmeConfig(
        directory="https://ca.example/dir",
        hostnames=("p.example.com",),
        folder=tmp_path / "acme",
        retry=60,
    )
    issuer = AcmeIssuer(config, public)
    outcomes: list[Exception] = [AcmeError("the CA refused: too many orders"), ZeroDivisionError()]

    def obtain() -> tuple[bytes, bytes]:
        raise outcomes.pop(0)

    issuer.obtain = obtain  # type: ignore[method-assign]
    waits: list[float] = []

    async def sleep(seconds: float) -> bool:
        waits.append(seconds)
        return len(waits) < 2

    with caplog.at_level(logging.INFO):
        await issuer.run(sleep)
    assert waits == [60.0, 120.0]
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
    assert said[0] == (
        "WARNING",
        "no certificate from the ACME CA: the CA refused: too many orders (next try in 1m)",
    )
    assert said[1][0] == "ERROR"
    assert said[1][1].startswith(
        "no certificate from the ACME CA: unexpected ZeroDivisionError at test_public_tls.py:"
    )
    assert said[1][1].endswith("(next try in 2m)")
    assert len(said) == 2
