"""Who is asking: the tenant a request is authenticated as (Akash's ``gateway/rest/auth.go``).

:func:`authenticate` is the FastAPI dependency every tenant route builds on. Today one
branch: a client certificate (the TLS layer put it in the scope, :mod:`akgateway.server`)
authenticates its common name if it is the certificate that account published on chain,
not revoked, within its dates (:mod:`akgateway.domain.certificates`). The ``Authorization``
header is where Akash's ES256K JWTs will come in; until then a Bearer token is refused with
401, and a certificate together with a token is ambiguous (400), as in Akash.
"""

from __future__ import annotations

import datetime as dt
import ssl
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Request

from akgateway import metrics
from akgateway.context import Gateway, gateway_of
from akgateway.domain.certificates import accept, presented
from akgateway.errors import (
    BadRequest,
    CertificateRefused,
    ChainUnavailable,
    Unauthorized,
    Unavailable,
)


@dataclass(frozen=True)
class Identity:
    """An authenticated tenant."""

    owner: str
    method: Literal["certificate"]  # "jwt" joins when Akash's tokens are accepted
    serial: str = ""  # of the client certificate


def client_certificate(request: Request) -> bytes | None:
    """The DER of the connection's client certificate (None: none was presented)."""
    tls = (request.scope.get("extensions") or {}).get("tls") or {}
    chain = tls.get("client_cert_chain") or []
    return ssl.PEM_cert_to_DER_cert(chain[0]) if chain else None


async def by_certificate(gateway: Gateway, der: bytes) -> Identity:
    try:
        cert = presented(der, dt.datetime.now(dt.UTC))
        accept(cert, await gateway.certificates.find(cert.owner, cert.serial))
    except CertificateRefused as exc:
        metrics.AUTH.labels("refused").inc()
        raise Unauthorized(str(exc)) from None
    except ChainUnavailable as exc:
        metrics.AUTH.labels("unavailable").inc()
        raise Unavailable(f"cannot check the client certificate on chain: {exc}") from None
    metrics.AUTH.labels("ok").inc()
    return Identity(owner=cert.owner, method="certificate", serial=cert.serial)


async def authenticate(
    request: Request, gateway: Annotated[Gateway, Depends(gateway_of)]
) -> Identity | None:
    """The request's tenant, or None when it carries no credentials (public routes only)."""
    der = client_certificate(request)
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise BadRequest("Authorization header: expected 'Bearer <token>'")
        if der is not None:
            raise BadRequest("ambiguous credentials: a client certificate and a bearer token")
        metrics.AUTH.labels("refused").inc()
        raise Unauthorized(
            "bearer tokens are not accepted yet: authenticate with your on-chain client certificate"
        )
    if der is None:
        return None
    return await by_certificate(gateway, der)


async def require_tenant(identity: Annotated[Identity | None, Depends(authenticate)]) -> Identity:
    if identity is None:
        metrics.AUTH.labels("none").inc()
        raise Unauthorized(
            "this route needs a tenant: present your client certificate published on chain"
        )
    return identity


Tenant = Annotated[Identity, Depends(require_tenant)]
