"""What a request body means and how the services' replies become HTTP answers.

Status codes are Akash's (``manifest/gateway.go``, ``gateway/rest/router.go``): a manifest
the provider refuses is 422, a lease or deployment it does not know is 404, a service that
cannot be reached is 503. A reply code this gateway does not know is a 500 naming it (the
contract moved on without the gateway); bad input never is.

A manifest is checked whole here before it is published (:func:`parse_manifest`, then
:func:`checked_manifest`): a body that is not a manifest, nests too deep or holds a huge
integer is a 400, one with a value Akash, Kubernetes or ingress-nginx would refuse a 422, and
neither reaches the bus.
"""

from __future__ import annotations

from typing import Any

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
from aktypes.events import LeaseQueryFailed, LeaseStatusReport, ManifestRejected, MigrationRefused
from aktypes.manifest import Manifest, manifest_problems

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
        return Manifest.from_json(body)
    except ManifestError as exc:
        raise BadRequest("not a manifest: " + _listed(exc.problems)) from None


def checked_manifest(manifest: Manifest) -> Manifest:
    """``manifest`` if Akash's rules and Kubernetes' accept it; else :class:`Unprocessable`
    listing the problems (the manifest service would refuse it with the same words)."""
    problems = manifest_problems(manifest)
    if problems:
        raise Unprocessable("invalid manifest: " + _listed(problems))
    return manifest


def _listed(problems: tuple[str, ...] | list[str]) -> str:
    shown = list(problems[:10])
    more = len(problems) - len(shown)
    if more > 0:
        shown.append(f"… and {more} more")
    return "; ".join(shown)


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


def lease_status_json(report: LeaseStatusReport) -> dict[str, Any]:
    """``GET /lease/…/status``'s body, in Go's shape (``restarts`` and
    ``last_termination`` of each service are our additions)."""
    return {
        "services": {name: s.go_dict() for name, s in report.services.items()},
        "forwarded_ports": {
            name: [p.go_dict() for p in ports] for name, ports in report.forwarded_ports.items()
        },
        # Go's null for a lease without leased IPs
        "ips": {name: [i.go_dict() for i in ips] for name, ips in report.ips.items()} or None,
    }
