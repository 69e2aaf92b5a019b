"""JSON from tenants, read within bounds: nesting depth and integer size.

Python's own reader recurses once per ``[``/``{`` (a document nested a few thousand deep
raises ``RecursionError``) and refuses integers longer than ``sys.get_int_max_str_digits()``
with a bare ``ValueError``; neither is a :class:`json.JSONDecodeError`. :func:`check_json`
turns every way a document can be refused into :class:`JSONBoundsError` with a message:
not UTF-8, not JSON (line and column), an integer literal longer than ``max_int_digits``
(checked by the parser's ``parse_int`` hook before it is converted), or nesting deeper than
``max_depth`` (counted without recursion once parsed; the reader's own recursion bound, far
above, is reported the same way).
"""

from __future__ import annotations

import json
from typing import Any, Final

from aktypes.errors import AkTypesError

MAX_DEPTH: Final = 32
"""Deepest nesting accepted; a manifest nests 7 deep (groups, services, exposes, options…)."""

MAX_INT_DIGITS: Final = 20
"""Longest integer literal accepted: every integer of a manifest fits Go's uint64."""


class JSONBoundsError(AkTypesError):
    """A JSON document is not UTF-8, not JSON, nested too deeply or holds a too long integer."""


def json_depth(value: Any) -> int:
    """How deep arrays and objects nest in a parsed JSON value (a scalar: 0), iteratively."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_json(
    data: str | bytes, *, max_depth: int = MAX_DEPTH, max_int_digits: int = MAX_INT_DIGITS
) -> Any:
    """``data`` parsed, or :class:`JSONBoundsError` naming what is wrong and where."""

    def bounded_int(text: str) -> int:
        digits = len(text.lstrip("-"))
        if digits > max_int_digits:
            raise JSONBoundsError(f"integer of {digits} digits; at most {max_int_digits} accepted")
        return int(text)

    try:
        text = data.decode() if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise JSONBoundsError(f"not UTF-8 text: byte {exc.start}: {exc.reason}") from None
    try:
        value = json.loads(text, parse_int=bounded_int)
    except json.JSONDecodeError as exc:
        raise JSONBoundsError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        value, depth = None, -1
    else:
        depth = json_depth(value)
    if depth < 0 or depth > max_depth:
        shown = "far too deep" if depth < 0 else f"{depth} deep"
        raise JSONBoundsError(f"JSON nested {shown}; at most {max_depth} levels are accepted")
    return value
