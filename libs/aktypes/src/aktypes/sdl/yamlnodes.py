"""YAML documents as positioned nodes, read with the typing rules Akash's parser applies.

Akash decodes SDL with Go's ``yaml.v3``: scalars keep their source text, integers and
booleans follow YAML 1.2 with a few 1.1 spellings, duplicate keys are errors and merge keys
(``<<``) work. :class:`Reader` walks PyYAML's node tree with those rules, records every
problem with its YAML path and line, and never stops at the first one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from typing import TypeAlias

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from aktypes.sdl.diagnostics import Diagnostic, Severity

try:  # the C composer is several times faster; fall back to pure Python
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

NULL_TAG = "tag:yaml.org,2002:null"
MERGE_TAG = "tag:yaml.org,2002:merge"
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_TRUE_COMPAT = {"y", "Y", "yes", "Yes", "YES", "on", "On", "ON"}
_FALSE_COMPAT = {"n", "N", "no", "No", "NO", "off", "Off", "OFF"}
_FLOAT_RE = re.compile(r"^[-+]?(\.\d+|\d+(\.\d*)?)([eE][-+]?\d+)?$")
_OCTAL_11_RE = re.compile(r"^[-+]?0[0-7]+$")

Path: TypeAlias = str
# Docker Compose habits and their SDL spelling.
_KEY_HINTS = {
    "environment": "env",
    "cmd": "command",
    "entrypoint": "command",
    "volumes": "params.storage",
    "ports": "expose",
}
TOP_LEVEL_KEYS = (
    "version",
    "include",
    "services",
    "profiles",
    "deployment",
    "endpoints",
    "reclamation",
)


class YAMLSyntaxError(Exception):
    """The text is not YAML; ``diagnostic`` says where and why."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic
        super().__init__(str(diagnostic))


def compose(text: str) -> tuple[Node | None, list[Diagnostic]]:
    """Parse ``text`` into its first document's node tree (``None`` when empty)."""
    notes: list[Diagnostic] = []
    try:
        documents = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise YAMLSyntaxError(
            Diagnostic(
                "",
                f"not valid YAML: {reason}",
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
            )
        ) from exc
    except yaml.YAMLError as exc:
        raise YAMLSyntaxError(Diagnostic("", f"not valid YAML: {exc}")) from exc
    if len(documents) > 1:
        notes.append(
            Diagnostic("", "only the first YAML document is read", Severity.WARNING, line=1)
        )
    return (documents[0] if documents else None), notes


def join(path: Path, key: str | int) -> Path:
    if isinstance(key, int):
        return f"{path}[{key}]"
    name = key if re.match(r"^[\w/-]+$", key) else f'"{key}"'
    return f"{path}.{name}" if path else name


def is_null(node: Node | None) -> bool:
    return node is None or (isinstance(node, ScalarNode) and node.tag == NULL_TAG)


def is_plain(scalar: ScalarNode) -> bool:
    """An unquoted scalar (the C and Python composers mark plain style differently)."""
    return not scalar.style


def describe(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if is_null(node):
        return "null"
    return f"{node.value!r}"


class Reader:
    """Typed access to nodes, collecting diagnostics instead of raising."""

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self.diagnostics: list[Diagnostic] = []
        self.positions: dict[Path, Node] = {}

    # -- reporting -------------------------------------------------------------------------
    def error(self, path: Path, message: str, node: Node | None = None) -> None:
        self._add(path, message, Severity.ERROR, node)

    def warn(self, path: Path, message: str, node: Node | None = None) -> None:
        """A problem Akash tolerates: an error only in strict mode."""
        self._add(path, message, Severity.ERROR if self.strict else Severity.WARNING, node)

    def _add(self, path: Path, message: str, severity: Severity, node: Node | None) -> None:
        node = self.positions.get(path, node) or self._nearest(path)
        line = column = None
        if node is not None and node.start_mark is not None:
            line, column = node.start_mark.line + 1, node.start_mark.column + 1
        self.diagnostics.append(Diagnostic(path, message, severity, line, column))

    def _nearest(self, path: Path) -> Node | None:
        while path:
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
            if path in self.positions:
                return self.positions[path]
        return None

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)

    def has_error_at(self, prefix: Path) -> bool:
        """True when an error was reported at ``prefix`` or below it."""
        return any(
            d.is_error and (d.path == prefix or d.path.startswith((prefix + ".", prefix + "[")))
            for d in self.diagnostics
        )

    # -- containers ------------------------------------------------------------------------
    def mapping(self, node: Node, path: Path) -> list[tuple[str, Node, Node]] | None:
        """Items ``(key, key node, value node)`` of a mapping; ``None`` if not a mapping."""
        if is_null(node):
            return []
        if not isinstance(node, MappingNode):
            self.error(path, f"must be a mapping, got {describe(node)}", node)
            return None
        items: list[tuple[str, Node, Node]] = []
        seen: dict[str, Node] = {}
        for key_node, value_node in self._merged(node, path):
            if not isinstance(key_node, ScalarNode):
                self.error(path, "mapping keys must be plain text", key_node)
                continue
            key = key_node.value
            if key in seen:
                first = seen[key].start_mark.line + 1
                self.error(join(path, key), f"key defined twice (first on line {first})", key_node)
                continue
            seen[key] = key_node
            self.positions.setdefault(join(path, key), value_node)
            items.append((key, key_node, value_node))
        return items

    def _merged(self, node: MappingNode, path: Path) -> Iterator[tuple[Node, Node]]:
        """Mapping pairs with ``<<`` merge keys expanded (explicit keys win)."""
        explicit = [(k, v) for k, v in node.value if k.tag != MERGE_TAG]
        merged: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != MERGE_TAG:
                continue
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in sources:
                if isinstance(source, MappingNode):
                    merged.extend(self._merged(source, path))
                else:
                    self.error(join(path, "<<"), "a merge key needs a mapping", source)
        names = {k.value for k, _ in explicit if isinstance(k, ScalarNode)}
        taken: set[str] = set()
        for key_node, value_node in merged:
            name = key_node.value if isinstance(key_node, ScalarNode) else None
            if name in names or name in taken:
                continue
            taken.add(str(name))
            yield key_node, value_node
        yield from explicit

    def sequence(self, node: Node, path: Path) -> list[Node] | None:
        """Items of a list; ``None`` (reported) when the node is not a list."""
        if is_null(node):
            return []
        if not isinstance(node, SequenceNode):
            self.error(path, f"must be a list, got {describe(node)}", node)
            return None
        for index, item in enumerate(node.value):
            self.positions.setdefault(join(path, index), item)
        return list(node.value)

    def unknown_key(
        self, path: Path, key: str, node: Node, known: tuple[str, ...], *, fatal: bool = False
    ) -> None:
        """Report a key the SDL does not define; ``fatal`` where Akash refuses it too."""
        hint = _KEY_HINTS.get(key) or next(iter(difflib.get_close_matches(key, known, n=1)), None)
        message = f"unknown key {key!r}"
        if path and key in TOP_LEVEL_KEYS:
            message += " (it belongs at the top level: check the indentation)"
        elif hint:
            message += f" (did you mean {hint!r}?)"
        if fatal:
            self.error(join(path, key), message, node)
        else:
            self.warn(join(path, key), message + "; Akash ignores it", node)

    # -- scalars ---------------------------------------------------------------------------
    def scalar(self, node: Node, path: Path) -> ScalarNode | None:
        if not isinstance(node, ScalarNode):
            self.error(path, f"must be a single value, got {describe(node)}", node)
            return None
        return node

    def text(self, node: Node, path: Path) -> str | None:
        """The source text of a scalar; null reads as ``""`` (Go's zero value)."""
        if is_null(node):
            return ""
        scalar = self.scalar(node, path)
        return None if scalar is None else scalar.value

    def optional_text(self, node: Node, path: Path) -> str | None:
        """Like :meth:`text` but ``None`` for null (to tell "unset" from "empty")."""
        return None if is_null(node) else self.text(node, path)

    def strings(self, node: Node, path: Path) -> list[str] | None:
        """A list of scalars as text; ``None`` for null (Go's nil slice)."""
        if is_null(node):
            return None
        items = self.sequence(node, path)
        if items is None:
            return None
        values = [self.text(item, join(path, i)) for i, item in enumerate(items)]
        return [v for v in values if v is not None]

    def boolean(self, node: Node, path: Path) -> bool | None:
        if is_null(node):
            return False
        scalar = self.scalar(node, path)
        if scalar is None:
            return None
        value, plain = scalar.value, is_plain(scalar)
        if value in _TRUE_COMPAT or (plain and value in _TRUE):
            return True
        if value in _FALSE_COMPAT or (plain and value in _FALSE):
            return False
        if value.lower() in ("true", "false"):
            self.error(
                path, f"must be true or false without quotes, got the text {value!r}", scalar
            )
        else:
            self.error(path, f"must be true or false, got {describe(scalar)}", scalar)
        return None

    def uint(self, node: Node, path: Path, maximum: int = 2**32 - 1) -> int | None:
        """An unquoted whole number in 0..maximum (null reads as 0)."""
        if is_null(node):
            return 0
        scalar = self.scalar(node, path)
        if scalar is None:
            return None
        value = _yaml_int(scalar)
        if value is None:
            if not is_plain(scalar) and scalar.value.strip().isdigit():
                reason = f"must be a number without quotes, got the text {scalar.value!r}"
            else:
                reason = f"must be a whole number, got {describe(scalar)}"
            self.error(path, reason, scalar)
            return None
        if not 0 <= value <= maximum:
            self.error(path, f"{value} is outside 0..{maximum}", scalar)
            return None
        return value


def _yaml_int(scalar: ScalarNode) -> int | None:
    """yaml.v3's integer reading of a plain scalar (decimal, 0x, 0o, 0b, 1.1 octal)."""
    if not is_plain(scalar):
        return None
    plain = scalar.value.replace("_", "")
    try:
        if _OCTAL_11_RE.match(plain):
            return int(plain, 8)
        return int(plain, 0)
    except ValueError:
        pass
    if _FLOAT_RE.match(plain):
        number = float(plain)
        if number.is_integer():
            return int(number)
    return None
