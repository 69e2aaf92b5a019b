"""Errors of the gateway; an :class:`ApiError` is an HTTP answer ``{"message": …}``.

GatewayError
 ├── CertificateFileError   the provider's certificate file is missing or unusable (fatal)
 ├── ChainUnavailable       the node's REST API did not answer (retry; 503 to a tenant)
 ├── CertificateRefused     a client certificate is not acceptable (401 with the reason)
 └── ApiError               an answer to a request: status + message
      ├── BadRequest        400  malformed input (path, JSON, manifest shape)
      ├── Unauthorized      401  no or unacceptable credentials
      ├── Forbidden         403  credentials that do not allow this action (token scope)
      ├── NotFound          404  unknown route, lease, deployment or service
      ├── PayloadTooLarge   413  body over AP_GATEWAY_MAX_BODY
      ├── Unprocessable     422  a manifest the provider refuses
      ├── Internal          500  a reply the gateway cannot map
      └── Unavailable       503  a service, the bus or the chain did not answer
"""

from __future__ import annotations

from typing import ClassVar


class GatewayError(Exception):
    """Base of the gateway's errors."""


class CertificateFileError(GatewayError):
    """The provider's certificate cannot be used; the message says which command fixes it."""


class ChainUnavailable(GatewayError):
    """The node's REST API did not answer a query."""


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


class Internal(ApiError):
    status = 500


class Unavailable(ApiError):
    status = 503
