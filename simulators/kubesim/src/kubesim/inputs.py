"""What a request brings — its body and its query parameters — read as the API server reads
them, so that anything malformed is a 4xx `Status`, never a crash.

Bodies: at most 3 MiB (413 beyond, the real server's limit); the media type must be one
the verb takes (415 otherwise); JSON or YAML that does not parse, nests more than
`MAX_DEPTH` levels, or (YAML) expands its aliases beyond its own size is 400; duplicate
keys are remembered for `fieldValidation`. Query parameters: integers are Go's int64
(`limit=abc` is 400), booleans read as the server's parameter codec reads them (only
absent, `0` and `false` are false), `resourceVersion` is an unsigned integer (400
otherwise), and `dryRun`, `fieldValidation` and `propagationPolicy` take only their known
values (422, naming the options and the field, as the real server answers).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import yaml
from aiohttp import web
from multidict import MultiMapping

from kubesim import errors, patch
from kubesim.decoding import DIRECTIVES, WARN

MAX_BODY = 3 * 2**20  # the API server's limit on a request body
MAX_DEPTH = 100
JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PATCH_TYPES = (patch.JSON_PATCH, patch.MERGE_PATCH, patch.STRATEGIC_MERGE_PATCH)
_INT64 = 2**63
_POLICIES = ("Foreground", "Background", "Orphan")


class _Loader(yaml.SafeLoader):
    """YAML as Kubernetes reads it: timestamps stay strings."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _Duplicated(dict[str, Any]):
    """A JSON object that named some key more than once (the last one wins, as in Go)."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    seen: list[str] = []
    for key, value in pairs:
        if key in obj:
            seen.append(key)
        obj[key] = value
    if not seen:
        return obj
    marked = _Duplicated(obj)
    marked.duplicates = seen
    return marked


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def media_type(request: web.Request) -> str:
    """The request's media type; none at all means JSON, as the real server reads it."""
    header = request.headers.get("Content-Type", "")
    return request.content_type if header.strip() else JSON


async def read_body(request: web.Request, *, optional: bool = False) -> tuple[Any, list[str]]:
    """The decoded body and the paths of its duplicate keys; for PATCH, the patch. An
    `optional` body (DeleteOptions) may be absent, whatever the media type says."""
    kind = media_type(request)
    if not optional:
        _check_media_type(request.method, kind)
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise too_large()
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise too_large() from None
    if not raw.strip():
        if optional:
            return {}, []
        raise errors.bad_request("the request has no body")
    _check_media_type(request.method, kind)
    return parse(raw, yaml_body=kind == YAML)


def _check_media_type(method: str, kind: str) -> None:
    if method == "PATCH":
        if kind not in PATCH_TYPES:
            raise errors.unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(PATCH_TYPES)} (kubesim has no server-side apply)"
            )
    elif kind == PROTOBUF:
        raise errors.unsupported_media_type("kubesim speaks JSON only: send application/json")
    elif kind not in (JSON, YAML):
        raise errors.unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types "
            f"include: {JSON}, {YAML}, {PROTOBUF}"
        )


def too_large() -> errors.ApiError:
    return errors.ApiError(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}"
    )


def parse(raw: bytes, *, yaml_body: bool = False) -> tuple[Any, list[str]]:
    """JSON (or YAML) as plain JSON values, with the paths of duplicate keys."""
    try:
        if yaml_body:
            loaded = yaml.load(raw, Loader=_Loader)  # noqa: S506 - a SafeLoader
        else:
            loaded = json.loads(raw, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        reason = "it nests too deeply" if isinstance(exc, RecursionError) else _one_line(exc)
        raise errors.bad_request(
            f"the body of the request could not be decoded: {reason}"
        ) from None
    walk = _Walk(budget=len(raw) + 64)
    return walk.plain(loaded, 0), walk.duplicates


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]


class _Walk:
    """Copies a parsed body into plain JSON values, checking depth and expansion."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.parts: list[str] = []
        self.duplicates: list[str] = []

    def _path(self, key: str = "") -> str:
        text = ""
        for part in [*self.parts, key] if key else self.parts:
            text += part if part.startswith("[") or not text else f".{part}"
        return text

    def plain(self, value: Any, depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise errors.bad_request(
                "the body of the request could not be decoded: excessive aliasing"
            )
        if depth > MAX_DEPTH:
            raise errors.bad_request(
                f"the body of the request nests more than {MAX_DEPTH} levels deep"
            )
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                name = _key(key)
                self.parts.append(name)
                out[name] = self.plain(item, depth + 1)
                self.parts.pop()
            if isinstance(value, _Duplicated):
                self.duplicates += [self._path(key) for key in value.duplicates]
            return out
        if isinstance(value, list):
            items = []
            for i, item in enumerate(value):
                self.parts.append(f"[{i}]")
                items.append(self.plain(item, depth + 1))
                self.parts.pop()
            return items
        return _scalar(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _text(key)
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, int | float):
        return str(key)
    raise errors.bad_request("the body of the request could not be decoded: a non-scalar key")


def _scalar(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise errors.bad_request(
                f"the body of the request could not be decoded: {value} is not a JSON number"
            )
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise errors.bad_request(
        f"the body of the request could not be decoded: a {type(value).__name__} is not JSON"
    )


def _text(text: str) -> str:
    """Go replaces what is not UTF-8 (a lone surrogate escape) with U+FFFD."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


# -- query parameters ------------------------------------------------------------------------
def flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean parameter as the server's parameter codec reads it: only an absent
    parameter, `0` and `false` (any case) are false."""
    if name not in query:
        return False
    return query[name] != "0" and query[name].lower() != "false"


def integer(query: Mapping[str, str], name: str) -> int | None:
    """An int64 parameter, None when absent; anything else is 400."""
    text = query.get(name)
    if text is None:
        return None
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit() or not -_INT64 <= int(text) < _INT64:
        raise errors.bad_request(f'{name}: strconv.ParseInt: parsing "{text}": invalid syntax')
    return int(text)


def resource_version(query: Mapping[str, str]) -> int | None:
    """`resourceVersion`: none, or an unsigned integer ("0" is "any")."""
    text = query.get("resourceVersion", "")
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or int(text) >= 2**64:
        raise errors.bad_request(
            f'resourceVersion: Invalid value: "{text}": must be an unsigned integer'
        )
    return int(text)


def _unsupported(options: str, name: str, value: str, allowed: tuple[str, ...]) -> None:
    supported = ", ".join(f'"{a}"' for a in allowed)
    raise errors.options_invalid(
        options, name, f'Unsupported value: "{value}": supported values: {supported}'
    )


def dry_run(query: MultiMapping[str], options: str) -> bool:
    """`dryRun=All` (every value given must be All); `options` names the verb's options."""
    return check_dry_run(query.getall("dryRun", []), options)


def check_dry_run(values: list[Any], options: str) -> bool:
    """Whether `values` (a `dryRun` list) ask for a dry run; only `All` is known."""
    for value in values:
        if value != "All":
            _unsupported(options, "dryRun", str(value), ("All",))
    return bool(values)


def field_validation(query: Mapping[str, str], options: str) -> str:
    """`fieldValidation`: Ignore, Warn (the default) or Strict."""
    value = query.get("fieldValidation", "")
    if value and value not in DIRECTIVES:
        _unsupported(options, "fieldValidation", value, DIRECTIVES)
    return value or WARN


def propagation_policy(options: Mapping[str, Any]) -> None:
    """Refuse a DeleteOptions' unknown propagationPolicy (422), as the real server does."""
    policy = options.get("propagationPolicy")
    if policy is not None and policy not in _POLICIES:
        _unsupported("DeleteOptions", "propagationPolicy", str(policy), _POLICIES)
    if policy is not None and options.get("orphanDependents") is not None:
        raise errors.options_invalid(
            "DeleteOptions",
            "propagationPolicy",
            "orphanDependents and deletionPropagation cannot be both set",
        )
