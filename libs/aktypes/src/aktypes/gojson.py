"""Models whose JSON matches what Akash's Go code marshals, byte for byte once sorted.

Go's ``encoding/json`` writes a nil slice or pointer as ``null`` and drops ``omitempty``
fields whose value is empty (``0``, ``false``, ``""``, nil, empty slice). Manifest hashes and
on-chain group specs depend on those exact forms, so models list their ``omitempty`` fields
in ``_omitempty`` (by JSON name) and keep ``None`` (Go nil) distinct from ``[]``.

:func:`sorted_json` is Cosmos's ``sdk.SortJSON``: compact, keys sorted, and Go's HTML-safe
escaping of ``<``, ``>``, ``&``, U+2028 and U+2029.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

MAX_UINT32 = 2**32 - 1

UInt32 = Annotated[int, Field(ge=0, le=MAX_UINT32, strict=True)]
"""Go ``uint32``: a JSON integer in 0..4294967295."""

_GO_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_GO_ESCAPE_RE = re.compile("[<>&\u2028\u2029]")
_LONE_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _go_empty(value: Any) -> bool:
    """Go's ``omitempty``: zero, false, empty string, nil, empty slice or map."""
    if value is None:
        return True
    if isinstance(value, BaseModel):
        return False
    return value in (0, "", [], {})  # False == 0


class GoModel(BaseModel):
    """A frozen model serialised like the Go struct it mirrors."""

    model_config = ConfigDict(
        frozen=True, extra="ignore", strict=True, populate_by_name=True, serialize_by_alias=True
    )

    _omitempty: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Drop ``omitempty`` fields when empty, as Go does, through pydantic's ``exclude_if``
        (a per-field check inside the Rust serializer: far cheaper than a Python wrap)."""
        super().__pydantic_init_subclass__(**kwargs)
        changed = False
        for name, info in cls.model_fields.items():
            if (info.alias or name) in cls._omitempty and info.exclude_if is None:
                info.exclude_if = _go_empty
                changed = True
        if changed:
            cls.model_rebuild(force=True)

    def go_dict(self) -> Any:
        """JSON-ready data with Go's field names."""
        return self.model_dump(mode="json", by_alias=True)


def sorted_json(data: Any) -> bytes:
    """Compact JSON with sorted keys and Go's escaping (Cosmos ``sdk.SortJSON``)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = _LONE_SURROGATE_RE.sub("\ufffd", text)
    text = _GO_ESCAPE_RE.sub(lambda m: _GO_ESCAPES[m.group(0)], text)
    return text.encode()
