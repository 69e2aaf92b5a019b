"""HTTPS for kubesim: a throwaway CA and a server certificate, made when the server starts.

Why: kubectl (client-go) reads a kubeconfig's credentials only for an ``https://`` server —
over plain HTTP it sends no token at all — so with users (``kubesim.authz``) kubectl needs
TLS to be anyone. The official Python clients send their token either way. The kubeconfig
kubesim writes carries the CA (``certificate-authority-data``), so clients verify the
server as they would a real one. Nothing is written to disk but that kubeconfig.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class ServerTLS:
    """PEM of the CA, of the server certificate and of its key."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        # load_cert_chain takes files only: they live no longer than this call
        with tempfile.TemporaryDirectory(prefix="kubesim-tls-") as folder:
            cert, key = Path(folder, "tls.crt"), Path(folder, "tls.key")
            cert.write_bytes(self.cert_pem)
            key.touch(0o600)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        return context


def client_context(ca_pem: bytes) -> ssl.SSLContext:
    """A client context that trusts the CA ``ca_pem`` (for tests' own HTTP calls)."""
    return ssl.create_default_context(cadata=ca_pem.decode())


def self_signed(hosts: Iterable[str]) -> ServerTLS:
    """A CA and a certificate it signs for ``hosts`` (names or IP addresses), valid a year."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim-ca")])
    usage = x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
        encipher_only=False, decipher_only=False,
    )  # fmt: skip
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage, critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    server_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim")])
    cert = (
        _builder(server_name, ca_name, key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ServerTLS(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 365 * _DAY)
    )
