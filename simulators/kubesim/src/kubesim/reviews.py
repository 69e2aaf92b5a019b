"""What may I do, and who am I: the review resources, answered from ``kubesim.authz``.

``POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`` (may I ``verb`` this?),
``.../selfsubjectrulesreviews`` (everything I may do in a namespace) and
``/apis/authentication.k8s.io/v1/selfsubjectreviews`` (who am I) — what ``kubectl auth
can-i``, ``kubectl auth can-i --list`` and ``kubectl auth whoami`` ask. They are created,
never stored: the answer is the object with its ``status`` filled. kubectl sends them as
protobuf (the only protobuf kubesim reads: the few fields these reviews have, read off the
wire by hand); the answer is JSON, which kubectl accepts too.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim import errors, inputs
from kubesim.authz import ADMIN, Attributes, Authorizer, User

AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"
# (group, plural) → kind, served at <group>/v1, cluster-scoped, create only
KINDS = {
    (AUTHORIZATION, "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
    (AUTHORIZATION, "selfsubjectrulesreviews"): "SelfSubjectRulesReview",
    (AUTHENTICATION, "selfsubjectreviews"): "SelfSubjectReview",
}
PATHS = {f"/apis/{group}/v1/{plural}": (group, plural) for group, plural in KINDS}
USER = web.RequestKey("kubesim.user", User)  # who asks, once authenticated
_PROTOBUF_MAGIC = b"k8s\x00"
# field numbers of the protobuf messages (k8s.io/api/authorization/v1/generated.proto)
_ATTRIBUTES = ("namespace", "verb", "group", "version", "resource", "subresource", "name")


def discovery(group: str, version: str) -> list[dict[str, Any]]:
    """The APIResource entries of the reviews in ``group``/``version`` (none elsewhere)."""
    if version != "v1":
        return []
    return [
        {
            "name": plural,
            "singularName": kind.lower(),
            "namespaced": False,
            "kind": kind,
            "verbs": ["create"],
        }
        for (g, plural), kind in sorted(KINDS.items())
        if g == group
    ]


class Reviews:
    """The handler of the three review paths."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    async def handle(self, request: web.Request) -> web.Response:
        group, plural = PATHS[request.path.rstrip("/")]
        kind = KINDS[group, plural]
        if request.method != "POST":
            raise errors.method_not_allowed(f"{request.method} is not supported on {plural}")
        user = request.get(USER) or ADMIN
        body = await _read(request, kind)
        if not isinstance(body, dict):
            raise errors.bad_request(f"the body of a {kind} must be an object")
        spec = body.get("spec") or {}
        if not isinstance(spec, dict):
            raise errors.bad_request(f"{kind}: spec must be an object")
        if kind == "SelfSubjectAccessReview":
            status = self._access(user, spec)
        elif kind == "SelfSubjectRulesReview":
            status = self._rules(user, spec)
        else:
            status = {"userInfo": {"username": user.name, "groups": list(user.all_groups)}}
        answer: dict[str, Any] = {
            "kind": kind,
            "apiVersion": f"{group}/v1",
            "metadata": {"creationTimestamp": None},
        }
        if kind != "SelfSubjectReview":
            answer["spec"] = spec
        answer["status"] = status
        return web.json_response(answer, status=201)

    def _access(self, user: User, spec: dict[str, Any]) -> dict[str, Any]:
        resource, plain = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if (resource is None) == (plain is None):
            raise errors.ApiError(
                422,
                "Invalid",
                'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
                'spec.resourceAttributes: Invalid value: "null": exactly one of '
                "nonResourceAttributes or resourceAttributes must be specified",
            )
        given = resource if resource is not None else plain
        if not isinstance(given, dict):
            raise errors.bad_request("SelfSubjectAccessReview: the attributes must be an object")
        text = {key: str(value) for key, value in given.items() if value is not None}
        if resource is not None:
            attrs = Attributes(
                verb=text.get("verb", ""),
                group=text.get("group", ""),
                version=text.get("version", ""),
                resource=text.get("resource", ""),
                subresource=text.get("subresource", ""),
                namespace=text.get("namespace", ""),
                name=text.get("name", ""),
            )
        else:
            path, verb = text.get("path", ""), text.get("verb", "")
            attrs = Attributes(verb=verb, path=path, resource_request=False)
        decision = self.authorizer.authorize(user, attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def _rules(self, user: User, spec: dict[str, Any]) -> dict[str, Any]:
        namespace = spec.get("namespace")
        if not namespace or not isinstance(namespace, str):
            raise errors.bad_request("no namespace on request")
        resource_rules: list[dict[str, Any]] = []
        plain_rules: list[dict[str, Any]] = []
        for rule in self.authorizer.rules(user, namespace):
            if rule.get("nonResourceURLs"):
                plain_rules.append(
                    {"verbs": rule.get("verbs") or [], "nonResourceURLs": rule["nonResourceURLs"]}
                )
            if rule.get("resources"):
                entry = {
                    key: rule.get(key) or []
                    for key in ("verbs", "apiGroups", "resources", "resourceNames")
                }
                resource_rules.append({k: v for k, v in entry.items() if v})
        return {
            "resourceRules": resource_rules,
            "nonResourceRules": plain_rules,
            "incomplete": False,
        }


async def _read(request: web.Request, kind: str) -> Any:
    if inputs.media_type(request) != inputs.PROTOBUF:
        body, _ = await inputs.read_body(request)
        return body
    raw = await request.read()
    if not raw.startswith(_PROTOBUF_MAGIC):
        raise errors.bad_request(f"{kind}: a protobuf body starts with k8s\\x00")
    try:
        return _from_protobuf(raw[len(_PROTOBUF_MAGIC) :], kind)
    except (IndexError, ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"{kind}: the protobuf body does not decode: {exc}") from None


def _from_protobuf(data: bytes, kind: str) -> dict[str, Any]:
    """The review's JSON form from ``runtime.Unknown`` (field 2: the raw object)."""
    raw = _bytes(_fields(data), 2)
    spec = _fields(_bytes(_fields(raw), 2))
    if kind == "SelfSubjectRulesReview":
        return {"spec": {"namespace": _text(spec, 1)}}
    if kind == "SelfSubjectReview":
        return {}
    found: dict[str, Any] = {}
    if 1 in spec:
        attributes = _fields(_bytes(spec, 1))
        found["resourceAttributes"] = {
            name: _text(attributes, number)
            for number, name in enumerate(_ATTRIBUTES, start=1)
            if number in attributes
        }
    if 2 in spec:
        attributes = _fields(_bytes(spec, 2))
        path, verb = _text(attributes, 1), _text(attributes, 2)
        found["nonResourceAttributes"] = {"path": path, "verb": verb}
    return {"spec": found}


def _fields(data: bytes) -> dict[int, list[bytes | int]]:
    """A protobuf message's fields by number (the last of each wins where one is read)."""
    found: dict[int, list[bytes | int]] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: bytes | int
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ValueError("a field runs past the end")
            value, at = data[at : at + size], at + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, at = int.from_bytes(data[at : at + width], "little"), at + width
        else:
            raise ValueError(f"wire type {wire} is not supported")
        found.setdefault(number, []).append(value)
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 64 bits")


def _bytes(fields: dict[int, list[bytes | int]], number: int) -> bytes:
    value = (fields.get(number) or [b""])[-1]
    if not isinstance(value, bytes):
        raise ValueError(f"field {number} is not length-delimited")
    return value


def _text(fields: dict[int, list[bytes | int]], number: int) -> str:
    return _bytes(fields, number).decode()
