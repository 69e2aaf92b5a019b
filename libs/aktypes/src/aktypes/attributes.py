"""Attributes, signed-by requirements and placement requirements, with Akash's matching.

An attribute is a ``key: value`` pair. Order requirements match provider attributes when the
requirement's key, read as a Go ``filepath.Match`` glob, matches the provider's key and the
values are equal. ``signedBy`` lists auditors whose signed provider attributes must cover the
requirements: all of ``allOf``, or at least one of ``anyOf``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from pydantic import Field

from aktypes.gojson import GoModel

ATTRIBUTE_KEY_RE = re.compile(r"^([a-zA-Z][\w/.\-]{1,126})$")
ATTRIBUTE_KEY_WILDCARD_RE = re.compile(r"^([a-zA-Z][\w/.\-]{1,126}[\w*]?)$")


class Attribute(GoModel):
    """One ``key: value`` attribute."""

    _omitempty = frozenset({"key", "value"})

    key: str = ""
    value: str = ""


class SignedBy(GoModel):
    """Auditors that must have signed the provider's attributes."""

    all_of: list[str] | None = None
    any_of: list[str] | None = None


class PlacementRequirements(GoModel):
    """Where a deployment group may be placed: attributes and auditor signatures."""

    signed_by: SignedBy = Field(default_factory=SignedBy)
    attributes: list[Attribute] | None = None


def validate_attributes(
    attributes: Sequence[Attribute] | None, *, wildcard: bool = True
) -> str | None:
    """Akash's attribute list check: keys match the key pattern and are unique."""
    pattern = ATTRIBUTE_KEY_WILDCARD_RE if wildcard else ATTRIBUTE_KEY_RE
    seen: set[str] = set()
    for attr in attributes or ():
        if not pattern.match(attr.key):
            return f"attribute key {attr.key!r} does not match {pattern.pattern}"
        if attr.key in seen:
            return f"attribute key {attr.key!r} is duplicated"
        seen.add(attr.key)
    return None


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str] | None:
    """Translate a Go ``filepath.Match`` pattern; ``None`` when it is malformed."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\":
            i += 1
            if i == n:
                return None
            out.append(re.escape(pattern[i]))
        elif char == "[":
            end = pattern.find("]", i + 1)
            body = pattern[i + 1 : end] if end != -1 else ""
            negate = body.startswith("^")
            if negate:
                body = body[1:]
            if not body or "\\" in body:
                return None
            cls = re.escape(body).replace("\\-", "-")
            out.append(f"[^{cls}]" if negate else f"[{cls}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    try:
        return re.compile("".join(out) + r"\Z")
    except re.error:
        return None


def key_matches(pattern: str, key: str) -> bool:
    """Go ``filepath.Match(pattern, key)``: ``*`` and ``?`` never cross a ``/``."""
    regex = _glob_regex(pattern)
    return regex is not None and regex.match(key) is not None


def attribute_subset_of(requirement: Attribute, attribute: Attribute) -> bool:
    """A requirement matches an attribute: key glob matches and values are equal."""
    return requirement.value == attribute.value and key_matches(requirement.key, attribute.key)


def attributes_subset_of(
    requirements: Iterable[Attribute], attributes: Sequence[Attribute]
) -> bool:
    """Every requirement is matched by some attribute."""
    return all(any(attribute_subset_of(r, a) for a in attributes) for r in requirements)


def attributes_any_of(requirements: Iterable[Attribute], attributes: Sequence[Attribute]) -> bool:
    """At least one requirement is matched by some attribute."""
    return any(any(attribute_subset_of(r, a) for a in attributes) for r in requirements)
