"""Decoding an object into its kind's type, as the API server decodes into the Go struct.

The real server reads a body into the kind's Go type before anything validates it, and that
decides three things, which kubesim reproduces from the kind's OpenAPI schema:

- a value that cannot be decoded — the wrong JSON type (`metadata: "x"`, `spec: 1.5`, a
  label that is a number, an integer written 1.5), an invalid quantity (`cpu: lots`), a
  time that is not RFC 3339, `data` that is not base64 — fails the request: 400 BadRequest
  for a create or update (`Pod in version "v1" cannot be handled as a Pod: ...`), 422
  Invalid on the field `patch` when a patch produced it;
- a field the type does not have is dropped, and `fieldValidation` says what else happens:
  `Ignore` nothing, `Warn` (the server's default) a `Warning` header for each, `Strict` a
  400 naming every unknown and duplicate field;
- a JSON `null` is Go's zero value: the field is left out.

Custom resources are pruned by their CRD's structural schema instead (`kubesim.crd`), with
the same `fieldValidation` answers; only their `metadata` is decoded here.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubesim import crd, errors, quantity, schemas
from kubesim.catalog import ResourceType

IGNORE, WARN, STRICT = "Ignore", "Warn", "Strict"
DIRECTIVES = (IGNORE, STRICT, WARN)

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_TIMES = (
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
)
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_INT_RANGES = {"int32": 2**31, "int64": 2**63}
_JSON_TYPES = {str: "string", bool: "bool", int: "number", float: "number", list: "array"}


@dataclass
class FieldValidation:
    """How a write treats unknown and duplicate fields (the `fieldValidation` parameter),
    with the duplicates its body parser found and the warnings it answers with."""

    directive: str = STRICT
    duplicates: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def settle(self, unknown: list[str], prefix: str = "") -> None:
        """Warn of or refuse (400) what decoding dropped, as the directive says."""
        problems = [f'duplicate field "{p}"' for p in self.duplicates]
        problems += [f'unknown field "{p}"' for p in unknown]
        self.duplicates = []
        if not problems or self.directive == IGNORE:
            return
        if self.directive == WARN:
            self.warnings.extend(problems)
            return
        raise errors.bad_request(f"{prefix}strict decoding error: {', '.join(problems)}")


class DecodeError(ValueError):
    """A value the Go type cannot hold; `field` says where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


def json_type(value: Any) -> str:
    """The JSON type of a value, as Go's decoder names it."""
    return "object" if isinstance(value, dict) else _JSON_TYPES.get(type(value), "value")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class Decoder:
    """Decodes values against one Kubernetes version's schema definitions."""

    def __init__(self, defs: dict[str, Any], type_name: str) -> None:
        self._defs = defs
        self._type_name = type_name  # the root's Go type, for messages: "Pod"
        self.unknown: list[str] = []

    def _resolve(self, schema: dict[str, Any]) -> tuple[dict[str, Any], str]:
        ref = ""
        while "$ref" in schema:
            ref = str(schema["$ref"]).rsplit("/", 1)[-1]
            schema = self._defs.get(ref) or {}
        return schema, ref

    def _go_type(self, schema: dict[str, Any], ref: str = "") -> str:
        if ref:
            return ".".join(ref.rsplit(".", 2)[-2:])  # io.k8s.api.core.v1.PodSpec -> v1.PodSpec
        types = _types(schema)
        if "object" in types:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and "properties" not in schema:
                return "map[string]" + self._go_type(*self._resolve(extra))
            return "struct"
        if "array" in types:
            return "[]" + self._go_type(*self._resolve(schema.get("items") or {}))
        if "integer" in types:
            return str(schema.get("format") or "int64")
        return {"number": "float64", "boolean": "bool"}.get(next(iter(types), ""), "string")

    def _mismatch(self, value: Any, schema: dict[str, Any], ref: str, path: str) -> DecodeError:
        return DecodeError(
            path,
            f"json: cannot unmarshal {json_type(value)} into Go struct field "
            f"{_join(self._type_name, path)} of type {self._go_type(schema, ref)}",
        )

    def value(self, value: Any, schema: dict[str, Any], path: str) -> Any:
        """`value` as the Go type holds it; unknown fields are dropped and remembered."""
        schema, ref = self._resolve(schema)
        if value is None:
            return None
        if ref == _QUANTITY:
            return _quantity(value, path)
        if ref == _INT_OR_STRING:
            if isinstance(value, str) or _is_int(value, "int32"):
                return value
            raise self._mismatch(value, {"type": "integer", "format": "int32"}, "", path)
        if ref in _TIMES:
            if not isinstance(value, str):
                raise self._mismatch(value, {"type": "string"}, "", path)
            return _time(value, path)
        types = _types(schema)
        if not types:
            return value  # any JSON: RawExtension, JSON, JSONSchemaPropsOrBool…
        if "object" in types:
            if not isinstance(value, dict):
                raise self._mismatch(value, schema, ref, path)
            return self._object(value, schema, path)
        if "array" in types:
            if not isinstance(value, list):
                raise self._mismatch(value, schema, ref, path)
            items = schema.get("items") or {}
            decoded = [self.value(v, items, f"{path}[{i}]") for i, v in enumerate(value)]
            return [v if v is not None else _zero(*self._resolve(items)) for v in decoded]
        return self._scalar(value, schema, ref, path, types)

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: str) -> Any:
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if props is None and not isinstance(extra, dict):
            return value  # a free-form object (FieldsV1, RawExtension)
        out: dict[str, Any] = {}
        for key, item in value.items():
            where = _join(path, key)
            if props is not None and key in props:
                decoded = self.value(item, props[key], where)
                if decoded is not None:
                    out[key] = decoded
            elif props is None and isinstance(extra, dict):  # a map
                decoded = self.value(item, extra, where)
                out[key] = decoded if decoded is not None else _zero(*self._resolve(extra))
            else:
                self.unknown.append(where)
        return out

    def _scalar(
        self, value: Any, schema: dict[str, Any], ref: str, path: str, types: set[str]
    ) -> Any:
        if "string" in types and isinstance(value, str):
            if schema.get("format") == "byte":
                try:
                    base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    raise DecodeError(path, "illegal base64 data") from None
            return value
        if "integer" in types and _is_int(value, str(schema.get("format") or "int64")):
            return value
        if "number" in types and isinstance(value, int | float) and not isinstance(value, bool):
            return value
        if "boolean" in types and isinstance(value, bool):
            return value
        raise self._mismatch(value, schema, ref, path)


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    found = set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()
    return found - {"null"}


def _zero(schema: dict[str, Any], ref: str) -> Any:
    """Go's zero value, for a null in a list or a map."""
    types = _types(schema)
    if ref in (_QUANTITY, _INT_OR_STRING, *_TIMES) or "string" in types:
        return "0" if ref == _QUANTITY else 0 if ref == _INT_OR_STRING else ""
    if "object" in types:
        return {}
    if "array" in types:
        return []
    if "integer" in types or "number" in types:
        return 0
    if "boolean" in types:
        return False
    return None


def _is_int(value: Any, fmt: str) -> bool:
    limit = _INT_RANGES.get(fmt, 2**63)
    return isinstance(value, int) and not isinstance(value, bool) and -limit <= value < limit


def _quantity(value: Any, path: str) -> Any:
    """A quantity, as a JSON string or number (Go reads either)."""
    try:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"quantities must match the regular expression '{quantity.PATTERN}'")
        quantity.parse(value)
    except ValueError as exc:
        raise DecodeError(path, f"{exc} (found {_shown(value)})") from None
    return value


def _shown(value: Any) -> str:
    text = f'"{value}"' if isinstance(value, str) else json_type(value)
    return text if len(text) <= 40 else text[:37] + '..."'


def _time(value: str, path: str) -> str:
    if _RFC3339.match(value):
        try:
            datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return value
    raise DecodeError(
        path, f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": not an RFC 3339 time'
    )


def decode_kind(
    kind: str, api_version: str, version: str, obj: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """A built-in object decoded into its kind: (the object, the unknown fields dropped).
    DecodeError says what could not be decoded; a kind without a schema is kept as it is."""
    schema = schemas.kind_schema(kind, api_version, version)
    if schema is None:
        return obj, []
    decoder = Decoder(schemas.definitions(version), kind)
    decoded = decoder.value(obj, schema, "")
    return decoded, decoder.unknown


def decode_definition(
    name: str, version: str, value: Any, path: str, type_name: str
) -> tuple[Any, list[str]]:
    """A value decoded as the schema definition `name` (ObjectMeta, DeleteOptions…)."""
    decoder = Decoder(schemas.definitions(version), type_name)
    decoded = decoder.value(value, {"$ref": name}, path)
    return decoded, decoder.unknown


def check_type(rtype: ResourceType, obj: Any) -> None:
    """A body is an object of the kind the URL names (its apiVersion and kind, when given,
    agree); they are filled in when left out."""
    if not isinstance(obj, dict):
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {rtype.kind}): "
            f"json: cannot unmarshal {json_type(obj)} into Go value of type {rtype.kind}"
        )
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind not in (None, rtype.kind):
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({rtype.kind})"
        )
    same_group = rtype.custom and str(api_version).split("/")[0] == rtype.group
    if api_version not in (None, rtype.api_version) and not same_group:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({rtype.api_version})"
        )
    obj["kind"] = rtype.kind
    obj["apiVersion"] = api_version or rtype.api_version


def decode_object(
    rtype: ResourceType,
    obj: Any,
    version: str,
    fields: FieldValidation | None,
    *,
    patched: str | None = None,
) -> dict[str, Any]:
    """A client's object decoded into its kind: what cannot be decoded is 400 (422 on the
    field `patch` when a patch of the object named `patched` made it so); unknown fields
    are dropped, then warned of or refused as `fields` says (Strict when not given)."""
    prefix = f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
    if patched is not None:
        prefix = ""
    try:
        if not isinstance(obj, dict):
            raise DecodeError(
                "", f"json: cannot unmarshal {json_type(obj)} into Go value of type {rtype.kind}"
            )
        if rtype.custom:
            meta, unknown = decode_definition(
                OBJECT_META, version, obj.get("metadata"), "metadata", rtype.kind
            )
            decoded, pruned = crd.prune(obj, rtype.schema)
            if meta is not None:
                decoded["metadata"] = meta
            unknown += pruned
        else:
            decoded, unknown = decode_kind(rtype.kind, rtype.api_version, version, obj)
    except DecodeError as exc:
        if patched is None:
            raise errors.bad_request(f"{prefix}{exc}") from None
        cause = ("patch", "FieldValueInvalid", f"Invalid value: the patched object: {exc}")
        raise errors.invalid(rtype, patched, [cause]) from None
    (fields or FieldValidation()).settle(unknown, prefix)
    return dict(decoded)
