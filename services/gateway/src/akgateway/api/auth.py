"""Who is asking, and may they (Akash's ``gateway/rest/auth.go``).

:func:`authenticate` is the FastAPI dependency every tenant route builds on. Two ways in,
never both (a certificate and a token together are ambiguous: 400):

- a client certificate (the TLS layer put it in the scope, :mod:`akgateway.adapters.server`): its
  common name is the tenant if it is the certificate that account published on chain, not
  revoked, within its dates (:mod:`akgateway.domain.certificates`); it allows everything;
- ``Authorization: Bearer <JWT>`` (:mod:`akchain.jwt`): signed by the issuer's account key
  as the chain records it, within its times; it allows what its claims grant.

:func:`scoped` builds the dependency of a route that needs one of Akash's scopes: no
credentials or bad ones → 401, credentials that do not grant the scope on this lease → 403.
"""

from __future__ import annotations

import datetime as dt
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from akchain import jwt
from akgateway import metrics
from akgateway.api.context import Gateway, gateway_of
from akgateway.domain.certificates import accept, presented
from akgateway.domain.params import lease_numbers
from akgateway.errors import (
    BadRequest,
    CertificateRefused,
    ChainUnavailable,
    Forbidden,
    Unauthorized,
    Unavailable,
)

FULL = jwt.Leases(access="full")


@dataclass(frozen=True)
class Identity:
    """An authenticated tenant and what its credentials allow."""

    owner: str
    method: Literal["certificate", "jwt"]
    serial: str = ""  # of the client certificate
    leases: jwt.Leases = FULL  # a certificate allows everything

    def require(
        self,
        scope: jwt.Scope,
        provider: str,
        *,
        dseq: int | None = None,
        gseq: int | None = None,
        oseq: int | None = None,
        services: Iterable[str] = (),
    ) -> None:
        """Raise :class:`Forbidden` unless these credentials allow ``scope`` there."""
        refusal = self.leases.refusal(
            scope, provider, dseq=dseq, gseq=gseq, oseq=oseq, services=services
        )
        if refusal is not None:
            metrics.AUTH.labels("forbidden").inc()
            raise Forbidden(refusal)


def client_certificate(connection: HTTPConnection) -> bytes | None:
    """The DER of the connection's client certificate (None: none was presented)."""
    tls = (connection.scope.get("extensions") or {}).get("tls") or {}
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


_CHECKED: dict[str, tuple[float, Identity]] = {}  # token → (expiry, who): checked once
MAX_CHECKED = 10_000


async def by_token(gateway: Gateway, token: str) -> Identity:
    """The token's tenant. A token checked before is taken from memory until it expires
    (its signature and claims cannot change; only time can make it invalid)."""
    now = time.time()
    known = _CHECKED.get(token)
    if known is not None and now <= known[0]:
        metrics.AUTH.labels("ok").inc()
        return known[1]
    try:
        issuer = jwt.inspect(token).iss  # refused here, a token costs no chain query
        key = await gateway.accounts.public_key(issuer)
        if not key:
            raise jwt.TokenError(f"the chain knows no public key of {issuer}")
        claims = jwt.check(token, key)
    except jwt.TokenError as exc:
        metrics.AUTH.labels("refused").inc()
        raise Unauthorized(str(exc)) from None
    except ChainUnavailable as exc:
        metrics.AUTH.labels("unavailable").inc()
        raise Unavailable(f"cannot read the token issuer's key on chain: {exc}") from None
    metrics.AUTH.labels("ok").inc()
    identity = Identity(owner=claims.iss, method="jwt", leases=claims.leases)
    if len(_CHECKED) >= MAX_CHECKED:
        _CHECKED.clear()
    _CHECKED[token] = (float(claims.exp), identity)
    return identity


IDENTITY = "akgateway.identity"  # the scope's key for an identity checked already


async def identify(connection: HTTPConnection, gateway: Gateway) -> Identity | None:
    """The connection's tenant, or None when it carries no credentials (public routes).
    One the request's scope holds already (checked ahead of the framework,
    :mod:`akgateway.api.fastpath`) is taken as it is."""
    checked = connection.scope.get(IDENTITY)
    if isinstance(checked, Identity):
        return checked
    der = client_certificate(connection)
    header = connection.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise BadRequest("Authorization header: expected 'Bearer <token>'")
        if der is not None:
            raise BadRequest("ambiguous credentials: a client certificate and a bearer token")
        return await by_token(gateway, token.strip())
    if der is None:
        return None
    return await by_certificate(gateway, der)


async def authenticate(
    request: Request, gateway: Annotated[Gateway, Depends(gateway_of)]
) -> Identity | None:
    return await identify(request, gateway)


def tenant_of(identity: Identity | None) -> Identity:
    if identity is None:
        metrics.AUTH.labels("none").inc()
        raise Unauthorized(
            "this route needs a tenant: present your client certificate published on chain "
            "or a bearer token signed by your account"
        )
    return identity


async def require_tenant(identity: Annotated[Identity | None, Depends(authenticate)]) -> Identity:
    return tenant_of(identity)


Tenant = Annotated[Identity, Depends(require_tenant)]


def requested_services(connection: HTTPConnection) -> list[str]:
    """The services a lease route names: ``…/service/{service}/…`` or ``?service=a,b``."""
    named = connection.path_params.get("service") or connection.query_params.get("service")
    return [s for s in str(named or "").split(",") if s]


def scoped(scope: jwt.Scope) -> Callable[..., Awaitable[Identity]]:
    """The dependency of a route that needs ``scope``, checked on the lease in its path.

    The path's numbers are read here (:func:`akgateway.domain.params.lease_numbers`, a 400
    for any spelling but the canonical one) with the rule the route's own parameters use
    (:data:`akgateway.domain.params.Digits`), so the lease checked is the lease served. A
    route that names no service checks the services it serves itself
    (:func:`akgateway.api.routes.require_services`)."""

    async def dependency(
        request: Request, identity: Annotated[Identity | None, Depends(authenticate)]
    ) -> Identity:
        tenant = tenant_of(identity)
        numbers = lease_numbers(request.path_params)
        tenant.require(
            scope,
            gateway_of(request).provider,
            dseq=numbers.get("dseq"),
            gseq=numbers.get("gseq"),
            oseq=numbers.get("oseq"),
            services=requested_services(request),
        )
        return tenant

    return dependency
