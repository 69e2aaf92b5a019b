"""API errors, answered as Kubernetes `Status` bodies with the real server's codes and texts.

ApiError(code, reason, message, details)
 ├── 400 BadRequest         malformed body, selector or patch
 ├── 403 Forbidden          creating in a namespace that is being terminated
 ├── 404 NotFound           no such object, namespace or resource type
 ├── 405 MethodNotAllowed   a verb the resource does not take
 ├── 409 AlreadyExists      create of an existing name
 ├── 409 Conflict           PUT/PATCH with a stale resourceVersion
 ├── 410 Expired            watch or continue from a compacted resourceVersion
 ├── 413 RequestEntityTooLarge  a body over 3 MiB, an object over 1.5 MiB
 ├── 415 UnsupportedMediaType  a media type or patch type the resource does not take
 ├── 422 Invalid            the object (or the request's options) fails validation;
 │                          `causes` name the fields
 └── 503 ServiceUnavailable a fault switched on by a test
"""

from __future__ import annotations

from typing import Any

from kubesim.catalog import ResourceType


class ApiError(Exception):
    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def details_of(rtype: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": rtype.plural}
    if rtype.group:
        details["group"] = rtype.group
    return details


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def not_found(rtype: ResourceType, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{rtype.qualified} "{name}" not found', details_of(rtype, name)
    )


def already_exists(rtype: ResourceType, name: str) -> ApiError:
    return ApiError(
        409, "AlreadyExists", f'{rtype.qualified} "{name}" already exists', details_of(rtype, name)
    )


def conflict(rtype: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rtype.qualified} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        details_of(rtype, name),
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def invalid(rtype: ResourceType, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 naming each field: causes are (field, reason, message) as the real server gives."""
    text = ", ".join(f"{f}: {m}" if f else m for f, _, m in causes)
    group = f".{rtype.group}" if rtype.group else ""
    details = details_of(rtype, name)
    details["kind"] = rtype.kind
    details["causes"] = [
        {"reason": reason, "message": message, "field": f} for f, reason, message in causes
    ]
    return ApiError(422, "Invalid", f'{rtype.kind}{group} "{name}" is invalid: {text}', details)


def options_invalid(options: str, field: str, why: str) -> ApiError:
    """422 for a request's options (`CreateOptions`, `DeleteOptions`…), as the real server
    answers an unsupported `dryRun`, `fieldValidation` or `propagationPolicy`."""
    details = {
        "name": "",
        "group": "meta.k8s.io",
        "kind": options,
        "causes": [{"reason": "FieldValueNotSupported", "message": why, "field": field}],
    }
    return ApiError(422, "Invalid", f'{options}.meta.k8s.io "" is invalid: {field}: {why}', details)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(message: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", message)
