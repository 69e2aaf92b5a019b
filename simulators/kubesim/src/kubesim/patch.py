"""The three patch types of the Kubernetes API.

- JSON patch (RFC 6902), by the `jsonpatch` library, with the real server's bounds: at
  most 10,000 operations (413 beyond) and 3 MiB copied by `copy` operations (422 beyond);
- JSON merge patch (RFC 7386): maps merge, `null` deletes, lists are replaced;
- strategic merge patch: like merge patch, but lists whose schema says
  `x-kubernetes-patch-strategy: merge` are merged — by their merge key (containers by
  `name`, service ports by `port`…) or, for lists of scalars, as sets — and the directives
  `$patch: replace|delete|merge`, `$retainKeys`, `$deleteFromPrimitiveList/<f>` and
  `$setElementOrder/<f>` are honoured.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch

from kubesim.errors import ApiError, bad_request
from kubesim.schemas import SchemaNode

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


MAX_OPERATIONS = 10_000
MAX_COPIED = 3 * 2**20


def json_patch(obj: dict[str, Any], ops: Any) -> Any:
    """Apply a JSON patch to a copy of `obj` (the result may be any JSON value)."""
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise bad_request(
            "json: cannot unmarshal the patch into Go value of type jsonpatch.Patch: "
            "a JSON patch is a list of operation objects"
        )
    if len(ops) > MAX_OPERATIONS:
        raise ApiError(
            413,
            "RequestEntityTooLarge",
            f"The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {len(ops)}",
        )
    result: Any = copy.deepcopy(obj)
    copied = 0
    try:
        for op in ops:
            if op.get("op") == "copy":
                source = jsonpatch.JsonPointer(op.get("from")).resolve(result)
                copied += len(json.dumps(source))
                if copied > MAX_COPIED:
                    raise ApiError(
                        422,
                        "Invalid",
                        "the server rejected our request due to an error in our request: "
                        f"unable to copy: the accumulated copy size exceeds {MAX_COPIED} bytes",
                    )
            result = jsonpatch.JsonPatch([op]).apply(result, in_place=True)
    except jsonpatch.JsonPatchTestFailed as exc:
        raise ApiError(422, "Invalid", f"the server rejected our request: {exc}") from None
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from None
    except (TypeError, KeyError, AttributeError, IndexError, ValueError) as exc:
        raise ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from None
    return result


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, node: SchemaNode) -> Any:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be an object")
    merged = _merge_map(target if isinstance(target, dict) else {}, patch, node)
    return {} if merged is None else merged


def _merge_map(target: dict[str, Any], patch: dict[str, Any], node: SchemaNode) -> Any:
    directive = patch.get("$patch")
    if directive not in (None, "delete", "replace", "merge"):
        raise bad_request(f"strategic merge patch: unknown patch type: {directive!r} in map")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target)
    retain = patch.get("$retainKeys")
    if retain is not None and not (
        isinstance(retain, list) and all(isinstance(k, str) for k in retain)
    ):
        raise bad_request("strategic merge patch: invalid patch format of retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            if not isinstance(value, list):
                raise bad_request("strategic merge patch: invalid patch format of primitive list")
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        child = node.field(key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            merged = _merge_map(current if isinstance(current, dict) else {}, value, child)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, child)
        else:
            result[key] = value
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(target: Any, patch: list[Any], node: SchemaNode) -> list[Any]:
    current = list(target) if isinstance(target, list) else []
    if "merge" not in node.strategy.split(","):
        return [_strip(item) for item in patch]
    key = node.merge_key
    if key is None:  # a set of scalars
        merged = list(current)
        for item in patch:
            if item not in merged:
                merged.append(item)
        return merged
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [_strip(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    items = node.items()
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"strategic merge patch: list items must be objects with {key}")
        if key not in item:
            raise bad_request(
                f"strategic merge patch: map {item} does not contain declared merge key: {key}"
            )
        index = next(
            (
                i
                for i, old in enumerate(current)
                if isinstance(old, dict) and old.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                current.pop(index)
            continue
        if index is None:
            current.append(_strip(item))
        else:
            current[index] = _merge_map(current[index], item, items)
    return current


def _strip(value: Any) -> Any:
    """Drop patch directives from values that are inserted whole."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
