"""Reading mappings field by field: dispatch each key to a handler, report the rest.

The SDL decoders are tables of handlers (``{"image": set_text(...), ...}``);
:func:`read_fields` walks a mapping with such a table, reports unknown keys (as warnings,
or as errors where Akash refuses them) and returns the keys it saw.
"""

from __future__ import annotations

from collections.abc import Callable

from yaml.nodes import Node

from aktypes.errors import InvalidQuantityError
from aktypes.quantity import Quantity
from aktypes.sdl.yamlnodes import Reader, is_null, join

HTTP_KEYS = (
    "max_body_size",
    "proxy_buffer_size",
    "read_timeout",
    "send_timeout",
    "next_tries",
    "next_timeout",
    "next_cases",
)

Handler = Callable[[str, Node], None]
Fields = dict[str, Handler]


def set_text(r: Reader, target: object, attr: str) -> Handler:
    """Store a scalar's text (``""`` for null) in ``target.attr``."""

    def handle(path: str, node: Node) -> None:
        setattr(target, attr, r.text(node, path) or "")

    return handle


def read_text(r: Reader) -> Handler:
    """Check that a value is a scalar, keep nothing (fields Akash parses but never uses)."""

    def handle(path: str, node: Node) -> None:
        r.text(node, path)

    return handle


def set_bool(r: Reader, target: object, attr: str) -> Handler:
    def handle(path: str, node: Node) -> None:
        setattr(target, attr, bool(r.boolean(node, path)))

    return handle


def set_uint(r: Reader, target: object, attr: str) -> Handler:
    def handle(path: str, node: Node) -> None:
        value = r.uint(node, path)
        if value is not None:
            setattr(target, attr, value)

    return handle


def set_strings(r: Reader, target: object, attr: str) -> Handler:
    """Store a list of texts, ``None`` for null (Go's nil slice)."""

    def handle(path: str, node: Node) -> None:
        setattr(target, attr, r.strings(node, path))

    return handle


def read_fields(
    r: Reader, node: Node, path: str, handlers: Fields, *, fatal_unknown: bool = False
) -> set[str] | None:
    """Dispatch each key of a mapping to its handler; report unknown keys.

    Returns the keys present, or ``None`` when the node is not a mapping.
    """
    items = r.mapping(node, path)
    if items is None:
        return None
    for key, key_node, value in items:
        handler = handlers.get(key)
        if handler is None:
            r.unknown_key(path, key, key_node, tuple(handlers), fatal=fatal_unknown)
        else:
            handler(join(path, key), value)
    return {key for key, _, _ in items}


def require(r: Reader, keys: set[str] | None, node: Node, path: str, *names: str) -> None:
    """Report each of ``names`` missing from a mapping that was read."""
    if keys is None or is_null(node):
        return
    for name in names:
        if name not in keys:
            r.error(join(path, name), "is required", node)


def string_map(r: Reader, node: Node, path: str) -> list[tuple[str, str]] | None:
    """A ``map[string]string`` as (key, value) pairs sorted by key; nil when empty."""
    items = r.mapping(node, path)
    if items is None:
        return None
    pairs = []
    for key, _, value in items:
        text = r.text(value, join(path, key))
        if text is not None:
            pairs.append((key, text))
    return sorted(pairs) or None


def quantity(r: Reader, node: Node, path: str, parse: Callable[[str], Quantity]) -> int | None:
    if is_null(node):
        r.error(path, "is required", node)
        return None
    text = r.text(node, path)
    if text is None:
        return None
    try:
        quantity = parse(text)
    except InvalidQuantityError as exc:
        r.error(path, str(exc), node)
        return None
    if quantity.lenient:
        r.warn(
            path,
            f"{text!r} is not an SDL size (use k, M, G… or Ki, Mi, Gi…); read as "
            f"{quantity.value} bytes as Akash Console does, but Akash's CLI refuses it",
            node,
        )
    elif quantity.drifted:
        exact = quantity.exact
        shown = int(exact) if exact.denominator == 1 else float(exact)
        r.warn(
            path,
            f"{text!r} is read as {quantity.value}, not {shown}, by Akash's floating-point "
            "parsing; write the value in smaller units to be exact",
            node,
        )
    return quantity.value
