"""The public certificate's rules, without I/O: which names it is served for, whether a pair
of files is a usable certificate and key, when it is due for renewal, and what the ACME
challenges need (RFC 8555, RFC 8737).

The public certificate is the one browsers and Akash Console's token path trust (a public
CA's, for the provider's public hostnames); the provider's on-chain certificate stays for
every other name and for connections that ask for none (:mod:`akgateway.adapters.public_tls`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from akgateway.errors import PublicCertificateError

RENEW_AT = 2 / 3  # of a certificate's lifetime: when a new one is ordered
ACME_TLS_1 = "acme-tls/1"  # the ALPN protocol of TLS-ALPN-01 (RFC 8737)
ACME_IDENTIFIER = x509.ObjectIdentifier("1.3.6.1.5.5.7.1.31")  # id-pe-acmeIdentifier
CHALLENGES = ("http-01", "tls-alpn-01", "dns-01")
LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def hostname(given: str) -> str:
    """``given`` as SNI carries it: lower case, no trailing dot; :class:`ValueError` unless it
    is a DNS name (a leading ``*.`` allowed), never an IP address."""
    name = given.strip().lower().removesuffix(".")
    try:
        ipaddress.ip_address(name)
    except ValueError:
        pass
    else:
        raise ValueError(f"{given!r} is an IP address: TLS clients ask for names, not addresses")
    labels = name.split(".")
    if labels[0] == "*":
        labels = labels[1:]
    if len(labels) < 2 or not all(LABEL.match(label) for label in labels) or len(name) > 253:
        raise ValueError(f"{given!r} is not a DNS name (such as provider.example.com)")
    return name


def serves(server_name: str | None, names: Iterable[str]) -> bool:
    """Whether a client asking for ``server_name`` (SNI) is one of ``names``, or under one
    of their wildcards (``*.example.com`` covers ``a.example.com``, not ``a.b.example.com``)."""
    if not server_name:
        return False
    asked = server_name.lower().removesuffix(".")
    wanted = set(names)
    if asked in wanted:
        return True
    _, dot, parent = asked.partition(".")
    return bool(dot) and f"*.{parent}" in wanted


@dataclass(frozen=True)
class PublicCertificate:
    """A certificate chain and its key, read and checked."""

    chain: tuple[x509.Certificate, ...]
    pem: bytes  # the chain, then the key (PKCS #8): one file for ``SSLContext.load_cert_chain``
    names: frozenset[str]  # the leaf's DNS names

    @property
    def leaf(self) -> x509.Certificate:
        return self.chain[0]

    @property
    def serial(self) -> str:
        return format(self.leaf.serial_number, "x")

    @property
    def not_before(self) -> dt.datetime:
        return self.leaf.not_valid_before_utc

    @property
    def not_after(self) -> dt.datetime:
        return self.leaf.not_valid_after_utc

    def covers(self, name: str) -> bool:
        return serves(name, self.names)

    def renewal_time(self) -> dt.datetime:
        """Two thirds into its lifetime."""
        return self.not_before + (self.not_after - self.not_before) * RENEW_AT


def read_pair(
    cert_pem: bytes, key_pem: bytes, cert_where: str, key_where: str
) -> PublicCertificate:
    """The certificate chain of ``cert_pem`` (leaf first) with the key of ``key_pem``;
    :class:`PublicCertificateError` naming the file when either is unusable or they do not
    belong together."""
    try:
        chain = tuple(x509.load_pem_x509_certificates(cert_pem))
    except ValueError:
        raise PublicCertificateError(f"{cert_where}: no PEM certificate in it") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        raise PublicCertificateError(f"{key_where}: no unencrypted PEM private key in it") from None
    if key.public_key() != chain[0].public_key():
        raise PublicCertificateError(
            f"{key_where}: the key does not belong to the certificate in {cert_where}"
        )
    try:
        sans = chain[0].extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = frozenset(name.lower() for name in sans.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        names = frozenset()
    pem = b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in chain)
    pem += key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return PublicCertificate(chain=chain, pem=pem, names=names)


def order_reason(
    current: PublicCertificate | None, names: Iterable[str], now: dt.datetime
) -> str | None:
    """Why a new certificate must be ordered now, or None while ``current`` does."""
    if current is None:
        return "no certificate yet"
    missing = [name for name in names if not current.covers(name)]
    if missing:
        return f"the certificate does not cover {', '.join(missing)}"
    if now >= current.not_after:
        return "the certificate expired"
    if now >= current.renewal_time():
        return "two thirds of the certificate's lifetime have passed"
    return None


def retry_after(failures: int, first: float, most: float = 3600.0) -> float:
    """Seconds to wait after the ``failures``-th failed order in a row: ``first``, doubling,
    at most ``most``."""
    return float(min(first * 2 ** max(failures - 1, 0), max(most, first)))


def dns_record(domain: str) -> str:
    """The TXT record DNS-01 asks for (a wildcard's is its parent's)."""
    return "_acme-challenge." + domain.removeprefix("*.")


def alpn_challenge_certificate(domain: str, key_authorization: str) -> bytes:
    """The self-signed certificate (and its key, PEM) that answers TLS-ALPN-01 for
    ``domain``: the name as its only SAN and, critical, the SHA-256 of the key authorization
    (an ASN.1 OCTET STRING) in the acmeIdentifier extension."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    digest = hashlib.sha256(key_authorization.encode()).digest()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(x509.Name([]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(domain)]), critical=False)
        .add_extension(
            x509.UnrecognizedExtension(ACME_IDENTIFIER, b"\x04\x20" + digest), critical=True
        )
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
