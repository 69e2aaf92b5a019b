"""The public certificate beside the on-chain one: chosen by the name a client asks for
(SNI), re-read when its files change, swapped without a failed handshake.

Each listener's TLS context (the tenant API's, gRPC's) keeps the provider's on-chain
certificate; :meth:`PublicTLS.route` gives it an SNI callback that moves a connection asking
for one of the public hostnames to that listener's *public* context, which holds the public
certificate (a public CA's chain). Connections that ask for another name, or for none (an
IP address), keep the on-chain certificate, as Akash's Go gateway does (chain-sdk asks for
``mtls.<host>`` when it presents a client certificate, the host itself otherwise). The public
contexts request client certificates too and trust the on-chain certificates (they are given
to :class:`akgateway.adapters.tls.TrustedCertificates` like the others): OpenSSL keeps the
connection's verify mode and takes the trust store of the context it moved to, so an mTLS
client asking for the public name (older chain-sdk releases) still authenticates with its
on-chain certificate. Akash's Go gateway requests none there.

Swap: a changed pair of files is read once, checked
(:func:`akgateway.domain.public_tls.read_pair`), tried on a scratch context, and only then
loaded into the live public contexts, between two handshakes (all of them run on the event
loop, as this does). A handshake already past its ClientHello keeps the certificate it was
given; the next one gets the new certificate. A pair that does not load (a key from another
certificate, a file half written) leaves the served certificate in place, with one warning
per distinct problem.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from akgateway import metrics
from akgateway.adapters.tls import VERIFY_FLAGS
from akgateway.domain.public_tls import PublicCertificate, read_pair, serves
from akgateway.errors import PublicCertificateError

log = logging.getLogger("akgateway.adapters.public_tls")


def public_context(alpn: Sequence[str] = ()) -> ssl.SSLContext:
    """A context for the public certificate, as :func:`akgateway.adapters.tls.server_context`
    makes the on-chain one (TLS 1.3, client certificates requested); no certificate yet."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.verify_mode = ssl.CERT_OPTIONAL
    context.verify_flags = ssl.VerifyFlags(context.verify_flags | VERIFY_FLAGS)
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context


def load_pem(contexts: Sequence[ssl.SSLContext], pem: bytes) -> None:
    """Load ``pem`` (chain and key) into each context; OpenSSL reads a key only from a file,
    so it goes through a private temporary one (0600, deleted at once)."""
    with tempfile.NamedTemporaryFile("wb", suffix=".pem") as file:
        file.write(pem)
        file.flush()
        for context in contexts:
            context.load_cert_chain(file.name)


class PublicTLS:
    """The public certificate of ``cert_file``/``key_file`` for ``hostnames``, in one public
    context per listener (``alpns``: each listener's application protocols)."""

    def __init__(
        self,
        hostnames: Sequence[str],
        cert_file: Path,
        key_file: Path,
        alpns: Sequence[Sequence[str]] = ((),),
    ) -> None:
        self.hostnames = tuple(hostnames)
        self.cert_file = cert_file
        self.key_file = key_file
        self.contexts = tuple(public_context(alpn) for alpn in alpns)
        self.current: PublicCertificate | None = None
        self._seen: bytes | None = None  # digest of the files last read
        self._problem: str | None = None  # the last one logged

    def route(self, base: ssl.SSLContext, public: ssl.SSLContext) -> None:
        """Send connections to ``base`` that ask for a public hostname to ``public`` (once a
        certificate is loaded)."""

        def chosen(connection: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
            if self.current is not None and serves(name, self.hostnames):
                connection.context = public

        base.sni_callback = chosen

    def _read(self) -> tuple[bytes, bytes] | None:
        try:
            return self.cert_file.read_bytes(), self.key_file.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise PublicCertificateError(
                f"cannot read {exc.filename}: {exc.strerror or exc}"
            ) from None

    def load(self) -> bool:
        """Serve the files' certificate if they changed since the last call: True when a new
        one is served; :class:`PublicCertificateError` when they cannot be (the one served
        stays). Missing files are not an error: there is nothing to serve yet."""
        files = self._read()
        digest = hashlib.sha256(b"\0".join(files)).digest() if files else b""
        if digest == self._seen:
            return False
        self._seen = digest
        if files is None:
            return False
        try:
            found = read_pair(*files, str(self.cert_file), str(self.key_file))
            load_pem([public_context()], found.pem)  # a scratch context first: OpenSSL's say
        except ssl.SSLError as exc:
            metrics.PUBLIC_CERTIFICATE_LOADS.labels("refused").inc()
            raise PublicCertificateError(
                f"{self.cert_file}: OpenSSL cannot use it ({exc.reason or exc})"
            ) from None
        except PublicCertificateError:
            metrics.PUBLIC_CERTIFICATE_LOADS.labels("refused").inc()
            raise
        load_pem(self.contexts, found.pem)
        self.current = found
        self._problem = None
        metrics.PUBLIC_CERTIFICATE_LOADS.labels("loaded").inc()
        metrics.PUBLIC_CERTIFICATE_NOT_AFTER.set(found.not_after.timestamp())
        uncovered = [name for name in self.hostnames if not found.covers(name)]
        log.info(
            "serving the public certificate %s for %s",
            found.serial,
            ", ".join(self.hostnames),
            extra={
                "issuer": found.leaf.issuer.rfc4514_string(),
                "not_after": found.not_after.isoformat(),
                "file": str(self.cert_file),
            },
        )
        if uncovered:
            log.warning(
                "the public certificate %s does not cover %s: clients asking for it will "
                "refuse the gateway",
                found.serial,
                ", ".join(uncovered),
            )
        if found.not_after <= dt.datetime.now(dt.UTC):
            log.warning("the public certificate %s has expired", found.serial)
        return True

    def check(self) -> bool:
        """:meth:`load`, its refusal logged once per distinct problem instead of raised."""
        try:
            return self.load()
        except PublicCertificateError as exc:
            if str(exc) != self._problem:
                self._problem = str(exc)
                log.warning(
                    "the public certificate was not replaced: %s",
                    exc,
                    extra={"serving": self.current.serial if self.current else None},
                )
            return False

    async def run(self, interval: float, sleep: Callable[[float], Awaitable[bool]]) -> None:
        """Re-read the files every ``interval`` until ``sleep`` says the process is stopping."""
        while await sleep(interval):
            self.check()
