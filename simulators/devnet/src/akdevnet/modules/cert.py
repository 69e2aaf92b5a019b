"""Client certificates: a tenant publishes its mTLS certificate on chain, and may revoke it.

As on Akash: the certificate is one PEM ``CERTIFICATE`` block, self-signed by the ECDSA key
given as an ``EC PUBLIC KEY`` PEM block, with the owner's address as its common name.
Validity dates are not checked by the chain (the provider's gateway does that).
"""

from __future__ import annotations

import base64

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from akchain._pb.akash.cert.v1 import cert_pb2
from akdevnet.context import Ctx
from akdevnet.errors import fail, unregistered
from akdevnet.modules import bank

CODESPACE = "cert"


def _single_pem(data: bytes, label: str) -> bytes:
    text = data.decode(errors="replace").strip()
    begin, end = f"-----BEGIN {label}-----", f"-----END {label}-----"
    if not text.startswith(begin) or not text.endswith(end) or text.count("-----BEGIN") != 1:
        raise ValueError(f"expected one PEM block of type {label}")
    body = text[len(begin) : -len(end)]
    return base64.b64decode("".join(body.split()))


def parse(owner: str, cert_pem: bytes, pubkey_pem: bytes) -> x509.Certificate:
    """The certificate, if it is one the chain accepts for ``owner``; else the chain's error."""
    try:
        key = serialization.load_der_public_key(_single_pem(pubkey_pem, "EC PUBLIC KEY"))
    except ValueError as exc:
        raise fail(CODESPACE, 7, "invalid pubkey value", str(exc)) from exc
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise fail(CODESPACE, 7, "invalid pubkey value", "not an ECDSA key")
    try:
        der = _single_pem(cert_pem, "CERTIFICATE")
    except ValueError as exc:
        raise fail(CODESPACE, 6, "invalid certificate value", str(exc)) from exc
    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError as exc:
        raise unregistered(f"x509: {exc}") from exc
    try:
        key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature as exc:
        raise fail(
            CODESPACE, 6, "invalid certificate value", "signature does not match the public key"
        ) from exc
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names or names[0].value != owner:
        raise fail(
            CODESPACE, 6, "invalid certificate value", "common name is not the owner's address"
        )
    return cert


def create(ctx: Ctx, msg: cert_pb2.MsgCreateCertificate) -> None:
    bank.check_address(msg.owner, "owner")
    cert = parse(msg.owner, msg.cert, msg.pubkey)
    serial = str(cert.serial_number)
    key = f"cert/{msg.owner}/{serial}"
    if ctx.store.has(key):
        raise fail(CODESPACE, 3, "certificate exists")
    ctx.store.set(
        key,
        {
            "certificate": {
                "state": "valid",
                "cert": base64.b64encode(msg.cert).decode(),
                "pubkey": base64.b64encode(msg.pubkey).decode(),
            },
            "serial": serial,
        },
    )


def revoke(ctx: Ctx, msg: cert_pb2.MsgRevokeCertificate) -> None:
    bank.check_address(msg.id.owner, "owner")
    if not msg.id.serial.isdigit():
        raise fail(CODESPACE, 5, "invalid serial number")
    key = f"cert/{msg.id.owner}/{int(msg.id.serial)}"
    record = ctx.store.get(key)
    if record is None:
        raise fail(CODESPACE, 1, "certificate not found")
    if record["certificate"]["state"] == "revoked":
        raise fail(CODESPACE, 4, "certificate already revoked")
    record["certificate"]["state"] = "revoked"
    ctx.store.set(key, record)
