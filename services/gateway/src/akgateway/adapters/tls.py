"""TLS of the tenant API: the provider's certificate, client certificates *requested* (not
required), and every on-chain certificate as a trust anchor.

Python's :mod:`ssl` has no verify callback (CPython issue #75425): with ``CERT_OPTIONAL``
OpenSSL checks a client certificate itself and aborts the handshake when it cannot. Akash's
client certificates are self-signed, so the server context trusts each certificate
published on chain — exactly those, through ``VERIFY_X509_PARTIAL_CHAIN`` — and loads new
ones into the live contexts (``load_verify_locations`` affects later handshakes) as
:class:`TrustedCertificates` finds them. Dates are not checked in the handshake
(``X509_V_FLAG_NO_CHECK_TIME``): an expired certificate gets a 401 saying so instead of a
bare TLS alert. Whether the certificate belongs to the tenant it names, is not revoked and
allows client authentication (its extended key usage) is decided per request
(:mod:`akgateway.api.auth`), as Akash's Go provider decides it.

Each on-chain certificate is loaded as a ``TRUSTED CERTIFICATE``: the certificate with
OpenSSL's auxiliary trust for client authentication. A trust anchor with that trust is
exempt from OpenSSL's purpose check, which otherwise refuses a client certificate whose
``keyUsage`` lacks ``digitalSignature`` ("unsuitable certificate purpose") — and Akash's own
certificate generator (chain-sdk, akashjs, so Akash Console) writes ``keyUsage`` =
keyEncipherment + dataEncipherment only. Go checks the extended key usage alone; so do we.

Consequences: a certificate that is not on chain fails in the handshake (TLS alert
``unknown ca``, and one log line, :mod:`akgateway.adapters.server`), not with a 401; a certificate
published a moment ago is accepted once the next read finds it (within
``AP_GATEWAY_CERT_SYNC_INTERVAL``). The node is asked for its certificate count first and the
full list is read only when that count changed (certificates are never deleted on chain,
only revoked).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path

from akgateway import metrics
from akgateway.adapters.chain import ChainCertificates
from akgateway.errors import ChainUnavailable

log = logging.getLogger("akgateway.adapters.tls")

X509_V_FLAG_NO_CHECK_TIME = 0x200000  # OpenSSL ≥ 1.1.0; not named by the ssl module
VERIFY_FLAGS = ssl.VERIFY_X509_PARTIAL_CHAIN | X509_V_FLAG_NO_CHECK_TIME
# OpenSSL's X509_CERT_AUX trusting a certificate for client authentication (1.3.6.1.5.5.7.3.2):
# SEQUENCE { trust SEQUENCE OF OBJECT IDENTIFIER { clientAuth } }
CLIENT_AUTH_TRUST = bytes.fromhex("300c300a06082b06010505070302")
BEGIN_TRUSTED = "-----BEGIN TRUSTED CERTIFICATE-----"
END_TRUSTED = "-----END TRUSTED CERTIFICATE-----"


def server_context(cert_file: Path, *, alpn: Sequence[str] = ()) -> ssl.SSLContext:
    """TLS 1.3 only, the provider's certificate (certificate and key in ``cert_file``),
    client certificates requested and checked against the trust anchors loaded later;
    ``alpn``: the application protocols offered (gRPC needs ``h2``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(cert_file)
    context.verify_mode = ssl.CERT_OPTIONAL
    context.verify_flags = ssl.VerifyFlags(context.verify_flags | VERIFY_FLAGS)
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context


def trusted_for_clients(ders: Iterable[bytes]) -> str:
    """``TRUSTED CERTIFICATE`` PEM blocks of ``ders``, each trusted for client authentication
    (the form ``openssl x509 -addtrust clientAuth`` writes)."""
    blocks = []
    for der in ders:
        text = base64.b64encode(der + CLIENT_AUTH_TRUST).decode()
        lines = "".join(text[i : i + 64] + "\n" for i in range(0, len(text), 64))
        blocks.append(f"{BEGIN_TRUSTED}\n{lines}{END_TRUSTED}\n")
    return "".join(blocks)


def load_trusted(context: ssl.SSLContext, ders: Iterable[bytes]) -> None:
    """Trust ``ders`` in ``context`` for client authentication. OpenSSL reads a certificate's
    auxiliary trust only from a file (``cadata`` takes plain certificates), so the blocks go
    through a private temporary file; :class:`ssl.SSLError` if one cannot be read."""
    with tempfile.NamedTemporaryFile("w", suffix=".pem", encoding="ascii") as file:
        file.write(trusted_for_clients(ders))
        file.flush()
        context.load_verify_locations(cafile=file.name)


class TrustedCertificates:
    """The on-chain certificates loaded into ``contexts`` as trust anchors."""

    def __init__(self, contexts: Sequence[ssl.SSLContext], chain: ChainCertificates) -> None:
        self.contexts = tuple(contexts)
        self.chain = chain
        self._known: set[bytes] = set()  # SHA-256 of each loaded certificate's DER
        self._count: int | None = None  # the chain's count at the last full read
        self.error: str | None = None

    def __len__(self) -> int:
        return len(self._known)

    def trusts(self, der: bytes) -> bool:
        return hashlib.sha256(der).digest() in self._known

    async def sync(self) -> int:
        """Load the certificates published since the last call; how many were new."""
        count = await self.chain.count()
        if count is not None and count == self._count:
            metrics.CERT_SYNC.labels("unchanged").inc()
            return 0
        fresh: dict[bytes, bytes] = {}
        async for record in self.chain.every():
            digest = hashlib.sha256(record.der).digest() if record.der else b""
            if digest and digest not in self._known:
                fresh[digest] = record.der
        self._load(fresh)
        self._count = count
        metrics.CERT_SYNC.labels("read").inc()
        metrics.TRUSTED_CERTIFICATES.set(len(self._known))
        if fresh:
            log.info(
                "trusting %d new on-chain certificates", len(fresh), extra={"total": len(self)}
            )
        return len(fresh)

    def _load(self, fresh: dict[bytes, bytes]) -> None:
        if not fresh:
            return
        try:
            for context in self.contexts:
                load_trusted(context, fresh.values())
            self._known.update(fresh)
        except ssl.SSLError:
            for digest, der in fresh.items():  # one OpenSSL cannot read: skip only that one
                try:
                    for context in self.contexts:
                        load_trusted(context, [der])
                except ssl.SSLError as exc:
                    log.warning(
                        "an on-chain certificate cannot be loaded", extra={"error": str(exc)}
                    )
                    continue
                self._known.add(digest)

    async def run(self, interval: float, sleep: Callable[[float], Awaitable[bool]]) -> None:
        """Sync every ``interval`` until ``sleep`` says the process is stopping."""
        failures = 0
        while await sleep(interval):
            try:
                await self.sync()
            except ChainUnavailable as exc:
                failures += 1
                self.error = str(exc)
                metrics.CERT_SYNC.labels("error").inc()
                if failures in (1, 5) or failures % 100 == 0:
                    log.warning("cannot read the on-chain certificates", extra={"error": str(exc)})
                continue
            if failures:
                log.info("on-chain certificates readable again")
            failures, self.error = 0, None
