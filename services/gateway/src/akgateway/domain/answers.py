"""What a request body means and how the services' replies become HTTP answers.

Status codes are Akash's (``manifest/gateway.go``, ``gateway/rest/router.go``): a manifest
the provider refuses is 422, a lease or deployment it does not know is 404, a service that
cannot be reached is 503. A reply code this gateway does not know is a 500 naming it (the
contract moved on without the gateway); bad input never is.
"""

from __future__ import annotations

import json

from akgateway.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    Internal,
    NotFound,
    Unavailable,
    Unprocessable,
)
from aktypes.errors import ManifestError
from aktypes.events import LeaseQueryFailed, ManifestRejected, MigrationRefused
from aktypes.manifest import Manifest

REJECTION_ERRORS: dict[str, type[ApiError]] = {
    "invalid": Unprocessable,
    "version_mismatch": Unprocessable,
    "cross_validation": Unprocessable,
    "hostname_not_allowed": Unprocessable,
    "services_changed": Unprocessable,
    "no_lease": NotFound,
    "deployment_not_found": NotFound,
    "chain_unavailable": Unavailable,
    "cluster_unavailable": Unavailable,
}

MIGRATION_ERRORS: dict[str, type[ApiError]] = {
    "not_found": NotFound,
    "invalid": BadRequest,
    "forbidden": Forbidden,
}

QUERY_ERRORS: dict[str, type[ApiError]] = {
    "not_found": NotFound,
    "unavailable": Unavailable,
    "internal": Internal,
}


def parse_manifest(body: bytes) -> Manifest:
    """The manifest in a request body; :class:`BadRequest` saying where it goes wrong: the
    line and column of a JSON syntax error, the path of each field that does not fit."""
    if not body.strip():
        raise BadRequest("empty body: expected a manifest (a JSON array of groups)")
    try:
        json.loads(body)
    except UnicodeDecodeError as exc:
        raise BadRequest(f"body is not UTF-8 text: byte {exc.start}: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    try:
        return Manifest.from_json(body)
    except ManifestError as exc:
        shown = list(exc.problems[:10])
        more = len(exc.problems) - len(shown)
        if more > 0:
            shown.append(f"… and {more} more")
        raise BadRequest("not a manifest: " + "; ".join(shown)) from None


def rejection_error(reply: ManifestRejected) -> ApiError:
    kind = REJECTION_ERRORS.get(reply.code)
    message = reply.reason or reply.code.replace("_", " ")
    if kind is None:
        return Internal(f"manifest rejected with an unknown code {reply.code!r}: {message}")
    return kind(message)


def query_error(reply: LeaseQueryFailed) -> ApiError:
    kind = QUERY_ERRORS.get(reply.code, Internal)
    return kind(reply.message or reply.code.replace("_", " "))


def migration_error(reply: MigrationRefused) -> ApiError:
    kind = MIGRATION_ERRORS.get(reply.code, Internal)
    return kind(reply.message or reply.code.replace("_", " "))
