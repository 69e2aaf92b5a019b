"""What answers the CA's challenges while an ACME order is open: HTTP-01 on a plain-HTTP
listener, TLS-ALPN-01 on a TLS listener of its own, DNS-01 through the operator's hook.

- **HTTP-01**: ``GET /.well-known/acme-challenge/<token>`` on ``AP_GATEWAY_ACME_HTTP_LISTEN``
  answers the token's key authorization (``text/plain``); anything else is a 404. The CA asks
  port 80 of each hostname: the operator routes it there (a Service, a port mapping, or
  ingress-nginx for that path).
- **TLS-ALPN-01**: ``AP_GATEWAY_ACME_TLS_LISTEN`` answers a handshake asking for a hostname
  with an open challenge and ALPN ``acme-tls/1`` with that challenge's certificate (RFC 8737),
  and nothing else: the CA asks port 443, which the operator routes there (TLS
  passthrough). A listener of its own because the tenant API cannot tell, when it picks a
  certificate by name, whether the client asks for ``acme-tls/1``: a tenant's connection
  would get the challenge's certificate while an order is open.
- **DNS-01**: the hook is run as ``HOOK add RECORD VALUE`` before the CA is told to look and
  ``HOOK remove RECORD VALUE`` afterwards (RECORD is ``_acme-challenge.<hostname>``, VALUE the
  TXT record's text), with ``ACME_ACTION``, ``ACME_DOMAIN``, ``ACME_RECORD``, ``ACME_VALUE``
  in its environment as well; exit code 0 is success, anything else fails the order with the
  last line it wrote to stderr. The rest of its environment is the gateway's, without the
  provider's own settings (``AP_*``, ``REDIS_*``, ``AKBUS_*``): the DNS provider's credentials
  go there under their own names. ``add`` should return once the DNS provider has the record;
  the gateway then waits ``AP_GATEWAY_ACME_DNS_WAIT`` for it to spread.

The challenge types the ``acme`` library no longer ships (TLS-ALPN-01) are registered here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from acme import challenges
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from akgateway.domain.public_tls import ACME_TLS_1, alpn_challenge_certificate, dns_record
from akgateway.errors import AcmeError

log = logging.getLogger("akgateway.adapters.acme_solvers")

HOOK_TIMEOUT = 300.0  # seconds a DNS hook may take
PRIVATE = ("AP_", "REDIS_", "AKBUS_")  # the provider's settings stay out of the hook's environment


@challenges.ChallengeResponse.register
class TLSALPN01Response(challenges.KeyAuthorizationChallengeResponse):
    """The answer to TLS-ALPN-01: an empty object (RFC 8555 §7.5.1)."""

    typ = "tls-alpn-01"


@challenges.Challenge.register
class TLSALPN01(challenges.KeyAuthorizationChallenge):
    """TLS-ALPN-01 (RFC 8737): the key authorization goes into a certificate."""

    response_cls = TLSALPN01Response
    typ = response_cls.typ

    def validation(self, account_key: Any, **_: Any) -> str:
        return self.key_authorization(account_key)


# -- HTTP-01 -----------------------------------------------------------------------------------


class HTTPChallenges:
    """Key authorizations by token, served by :meth:`app`."""

    def __init__(self) -> None:
        self.tokens: dict[str, str] = {}

    def app(self) -> Starlette:
        async def answer(request: Request) -> PlainTextResponse:
            found = self.tokens.get(request.path_params["token"])
            if found is None:
                return PlainTextResponse("no such challenge\n", status_code=404)
            return PlainTextResponse(found)

        return Starlette(routes=[Route("/.well-known/acme-challenge/{token}", answer)])


# -- TLS-ALPN-01 -------------------------------------------------------------------------------


def challenge_context(pem: bytes) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols([ACME_TLS_1])
    with tempfile.NamedTemporaryFile("wb", suffix=".pem") as file:
        file.write(pem)
        file.flush()
        context.load_cert_chain(file.name)
    return context


class ALPNChallenges:
    """The TLS-ALPN-01 listener on ``sock`` (from :func:`akgateway.adapters.server.bind`)
    while the block runs: each handshake gets the certificate of the challenge open for the
    name it asks, or an ``unrecognized_name`` alert; the connection is closed once it is
    done (the CA only looks at the certificate)."""

    def __init__(self, sock: socket.socket) -> None:
        self.host, self.port = sock.getsockname()[:2]
        self._sock = sock
        self.names: dict[str, ssl.SSLContext] = {}
        self._server: asyncio.Server | None = None
        self._base = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._base.minimum_version = ssl.TLSVersion.TLSv1_2
        self._base.set_alpn_protocols([ACME_TLS_1])
        self._base.sni_callback = self._chosen

    def _chosen(self, connection: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> int | None:
        found = self.names.get((name or "").lower())
        if found is None:
            return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME
        connection.context = found
        return None

    def add(self, domain: str, key_authorization: str) -> None:
        self.names[domain] = challenge_context(
            alpn_challenge_certificate(domain, key_authorization)
        )

    def remove(self, domain: str) -> None:
        self.names.pop(domain, None)

    async def _served(self, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await writer.wait_closed()

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(
            self._served, sock=self._sock, ssl=self._base, ssl_handshake_timeout=10.0
        )
        log.info("ACME TLS-ALPN-01 listening", extra={"address": f"{self.host}:{self.port}"})
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.close()
        self._sock.close()


# -- DNS-01 ------------------------------------------------------------------------------------


class DNSHook:
    """The operator's program that adds and removes ``_acme-challenge`` TXT records."""

    def __init__(self, program: Path) -> None:
        self.program = program

    def run(self, action: str, domain: str, value: str) -> None:
        """``HOOK action record value`` (blocking: called from the ACME thread);
        :class:`AcmeError` unless it exits 0."""
        record = dns_record(domain)
        env = {
            **{name: value for name, value in os.environ.items() if not name.startswith(PRIVATE)},
            "ACME_ACTION": action,
            "ACME_DOMAIN": domain,
            "ACME_RECORD": record,
            "ACME_VALUE": value,
        }
        what = f"the DNS hook `{self.program} {action} {record}`"
        try:
            done = subprocess.run(  # noqa: S603 - the operator's own program
                [str(self.program), action, record, value],
                env=env,
                capture_output=True,
                text=True,
                timeout=HOOK_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise AcmeError(f"{what} did not finish within {HOOK_TIMEOUT:.0f}s") from None
        except OSError as exc:
            raise AcmeError(f"{what} cannot run: {exc.strerror or exc}") from None
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            why = lines[-1].strip() if lines else "no message"
            raise AcmeError(f"{what} failed (exit {done.returncode}): {why}")
        log.info("DNS hook: %s %s", action, record)
