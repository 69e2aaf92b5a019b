"""Errors of the gateway; an :class:`ApiError` is an HTTP answer ``{"message": …}``.

GatewayError
 ├── CertificateFileError   the provider's certificate file is missing or unusable (fatal)
 ├── CommandFailed          a certificate command cannot do its job (one line, exit 1)
 ├── DashboardDenied        no or a wrong dashboard token (a login page)
 ├── ChainUnavailable       the node's REST API did not answer (retry; 503 to a tenant)
 ├── KubeError              Kubernetes could not be reached or refused a lease stream's request
 ├── LeaseGone              the lease has no namespace here (never deployed, or torn down)
 ├── CertificateRefused     a client certificate is not acceptable (401 with the reason)
 ├── PublicCertificateError the public certificate's files cannot be used
 ├── AcmeError              an ACME order failed (tried again later)
 └── ApiError               an answer to a request: status + message
      ├── BadRequest        400  malformed input (path, JSON, manifest shape)
      ├── Unauthorized      401  no or unacceptable credentials
      ├── Forbidden         403  credentials that do not allow this action (token scope)
      ├── NotFound          404  unknown route, lease, deployment or service
      ├── PayloadTooLarge   413  body over AP_GATEWAY_MAX_BODY
      ├── Unprocessable     422  a manifest the provider refuses
      ├── TooManyRequests   429  a tenant over its websockets or shells
      ├── Internal          500  a reply the gateway cannot map
      └── Unavailable       503  a service, the bus or the chain did not answer
BodyTooLarge: a body found over its limit while it is read (413, the connection closed)
"""

from __future__ import annotations

from typing import ClassVar

from fastapi import HTTPException


class GatewayError(Exception):
    """Base of the gateway's errors."""


class CertificateFileError(GatewayError):
    """The provider's certificate cannot be used; the message says which command fixes it."""


class CommandFailed(GatewayError):
    """A certificate command cannot do its job; the message is one line for the operator."""


class DashboardDenied(GatewayError):
    """The dashboard was asked for without its token, or with a wrong one."""


class ChainUnavailable(GatewayError):
    """The node's REST API did not answer a query."""


class KubeError(GatewayError):
    """Kubernetes could not be reached or refused the request."""


class LeaseGone(GatewayError):
    """The lease has no namespace here (never deployed, or torn down)."""


class CertificateRefused(GatewayError):
    """A client certificate that does not authenticate its holder; the message says why."""


class ApiError(GatewayError):
    status: ClassVar[int] = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class PayloadTooLarge(ApiError):
    status = 413


class Unprocessable(ApiError):
    status = 422


class TooManyRequests(ApiError):
    status = 429


class Internal(ApiError):
    status = 500


class Unavailable(ApiError):
    status = 503


class BodyTooLarge(HTTPException):
    """A body found over its limit while it is read (an HTTPException: FastAPI lets those
    through its body parsing); the answer closes the connection."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large(limit), headers={"connection": "close"})


def too_large(limit: int) -> str:
    return f"the request body is over the limit of {limit} bytes"


class PublicCertificateError(GatewayError):
    """The public certificate's files (``AP_GATEWAY_TLS_CERT``/``KEY``) cannot be used; at
    start fatal, later the certificate served stays."""


class AcmeError(GatewayError):
    """An ACME order did not give a certificate (the CA, a challenge, the DNS hook); the
    order is tried again later."""
