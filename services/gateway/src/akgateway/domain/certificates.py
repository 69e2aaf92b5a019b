"""Certificates without I/O: the provider's server certificate, the chain's PEM forms, and
what makes a client certificate authenticate a tenant (Akash's ``gateway/rest/auth.go``).

A tenant is authenticated by a certificate it published on chain: self-signed, common name
= its ``akash1…`` address. The TLS layer only proves the client holds the key of a
certificate that chains to *some* on-chain certificate (:mod:`akgateway.adapters.tls`); here the
presented certificate must be *byte for byte* the one its owner published, still ``valid``
(not revoked), within its dates, and fit for client authentication. Byte equality, not just
owner + serial as in Akash, because serials are public: a tenant whose own on-chain
certificate may sign others could otherwise mint one carrying a victim's name and serial.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from akgateway.errors import CertificateFileError, CertificateRefused
from aktypes.address import is_address

SERVER_CERT_DAYS = 365  # Akash's `cert generate server` default validity


def common_name(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    value = names[0].value if names else ""
    return value if isinstance(value, str) else value.decode(errors="replace")


def _san(hosts: Iterable[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    seen: set[str] = set()
    for given in hosts:
        host = given.strip().lower()
        if not host or host in seen:
            continue
        seen.add(host)
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def make_server_certificate(
    address: str,
    hosts: Sequence[str],
    *,
    days: float = SERVER_CERT_DAYS,
    now: dt.datetime | None = None,
) -> tuple[bytes, bytes]:
    """The provider's certificate and key, PEM: P-256, self-signed, common name ``address``,
    ``hosts`` as subject alternative names, for server and client authentication (as
    ``provider-services tx cert generate server`` makes it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)])
    start = now or dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - dt.timedelta(minutes=5))
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=True,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_san(hosts), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def chain_pubkey_pem(cert: x509.Certificate) -> bytes:
    """The certificate's public key as the chain wants it: one ``EC PUBLIC KEY`` PEM block
    holding the DER SubjectPublicKeyInfo."""
    der = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    text = base64.b64encode(der).decode()
    lines = "".join(text[i : i + 64] + "\n" for i in range(0, len(text), 64))
    return f"-----BEGIN EC PUBLIC KEY-----\n{lines}-----END EC PUBLIC KEY-----\n".encode()


@dataclass(frozen=True)
class ProviderCertificate:
    """The provider's own certificate, read from ``<address>.pem``."""

    cert: x509.Certificate
    pem: bytes  # the certificate block only
    key_pem: bytes = b""  # its private key (PKCS #8 PEM)

    @property
    def serial(self) -> str:
        return str(self.cert.serial_number)

    @property
    def der(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.DER)


def read_provider_pem(data: bytes, address: str, where: str) -> ProviderCertificate:
    """The certificate of ``<address>.pem`` (certificate + key), checked: one certificate for
    ``address`` whose key is in the file too. ``where`` names the file in errors."""
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise CertificateFileError(f"{where}: no PEM certificate in it ({exc})") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise CertificateFileError(f"{where}: no unencrypted private key in it ({exc})") from None
    cert = certs[0]
    if common_name(cert) != address:
        raise CertificateFileError(
            f"{where}: the certificate is for {common_name(cert)!r}, not {address}"
        )
    if key.public_key() != cert.public_key():
        raise CertificateFileError(f"{where}: the private key does not belong to the certificate")
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return ProviderCertificate(cert, cert.public_bytes(serialization.Encoding.PEM), key_pem)


# -- client certificates ------------------------------------------------------------------


@dataclass(frozen=True)
class PresentedCertificate:
    """The certificate a TLS client authenticated with."""

    owner: str
    serial: str
    der: bytes


@dataclass(frozen=True)
class OnChainCertificate:
    owner: str
    serial: str
    state: str  # valid | revoked
    der: bytes  # empty when the chain's PEM could not be read


def der_of_pem(pem: bytes) -> bytes:
    """The DER of a PEM certificate; empty when it is not one."""
    try:
        return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
    except ValueError:
        return b""


def presented(der: bytes, now: dt.datetime) -> PresentedCertificate:
    """Read a client's certificate; :class:`CertificateRefused` unless it names an account,
    is within its dates and may authenticate a client."""
    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError as exc:
        raise CertificateRefused(f"unreadable client certificate: {exc}") from None
    owner = common_name(cert)
    serial = str(cert.serial_number)
    if not is_address(owner):
        raise CertificateRefused(
            f"client certificate {serial}: common name {owner!r} is not an akash1 address"
        )
    issuer = cert.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not issuer or issuer[0].value != owner:  # Akash's rule: issued by its owner
        raise CertificateRefused(
            f"client certificate {serial} of {owner} is not issued by {owner} itself"
        )
    if now < cert.not_valid_before_utc:
        raise CertificateRefused(
            f"client certificate {serial} of {owner} is not valid before "
            f"{cert.not_valid_before_utc.isoformat()}"
        )
    if now > cert.not_valid_after_utc:
        raise CertificateRefused(
            f"client certificate {serial} of {owner} expired at "
            f"{cert.not_valid_after_utc.isoformat()}"
        )
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usages = None
    if usages is not None and not {
        ExtendedKeyUsageOID.CLIENT_AUTH,
        ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    } & set(usages):
        raise CertificateRefused(
            f"client certificate {serial} of {owner} is not for client authentication"
        )
    return PresentedCertificate(owner=owner, serial=serial, der=der)


def accept(cert: PresentedCertificate, on_chain: Sequence[OnChainCertificate]) -> None:
    """:class:`CertificateRefused` unless ``cert`` is its owner's published, valid certificate."""
    what = f"client certificate {cert.serial} of {cert.owner}"
    record = next((c for c in on_chain if c.owner == cert.owner and c.serial == cert.serial), None)
    if record is None:
        raise CertificateRefused(f"{what} is not on chain")
    if record.der != cert.der:
        raise CertificateRefused(f"{what} is not the certificate published on chain")
    if record.state != "valid":
        raise CertificateRefused(f"{what} is {record.state or 'not valid'} on chain")
