"""``parse_sdl``: SDL text → deployment groups, manifest and every diagnostic.

Versions follow Akash: ``2.0`` exactly selects the v2.0 rules, anything from ``2.1`` up the
v2.1 rules (read tolerantly, so ``2`` is ``2.0`` and ``v2.1`` is ``2.1``); older ones are
refused. A file with any error raises :class:`~aktypes.errors.SDLError` listing them all; a
valid file comes back with its warnings (keys Akash ignores, float-rounded quantities…).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from yaml.nodes import MappingNode, Node, ScalarNode

from aktypes.errors import GroupSpecError, SDLError
from aktypes.groupspec import GroupSpec, validate_groups
from aktypes.manifest.models import Manifest
from aktypes.manifest.validation import manifest_problems
from aktypes.sdl import checks
from aktypes.sdl.build import build
from aktypes.sdl.decode import decode
from aktypes.sdl.diagnostics import Diagnostic
from aktypes.sdl.yamlnodes import Reader, YAMLSyntaxError, compose

_SEMVER_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


@dataclass(frozen=True)
class SDL:
    """A valid SDL: what goes on chain, what goes to providers, and what to warn about."""

    version: str
    groups: tuple[GroupSpec, ...]
    manifest: Manifest
    reclamation_min_window: float | None
    warnings: tuple[Diagnostic, ...]

    @property
    def manifest_version(self) -> bytes:
        """The deployment hash: SHA-256 of the manifest's canonical JSON."""
        return self.manifest.version()


def sdl_version(text: str) -> str | None:
    """``"2.0"`` or ``"2.1"`` for a supported version string, else ``None``."""
    text = text.strip().removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            parts[i] = trimmed if trimmed[:1].isdigit() else "0" + trimmed
    if len(parts) < 3:
        if re.search(r"[+-]", parts[-1]):
            return None
        parts += ["0"] * (3 - len(parts))
    match = _SEMVER_RE.match(".".join(parts))
    if not match:
        return None
    release = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    prerelease = match.group(4) is not None
    if release == (2, 0, 0) and not prerelease:
        return "2.0"
    if release > (2, 1, 0) or (release == (2, 1, 0) and not prerelease):
        return "2.1"
    return None


def _version(r: Reader, root: Node) -> str | None:
    for key, value in root.value if isinstance(root, MappingNode) else ():
        if isinstance(key, ScalarNode) and key.value == "version":
            text = value.value if isinstance(value, ScalarNode) else ""
            version = sdl_version(text)
            if version is None:
                r.error("version", f"unsupported SDL version {text!r} (supported: 2.0, 2.1)", value)
            return version
    r.error("version", 'no version found (add version: "2.0")', root)
    return None


def parse_sdl(text: str | bytes, *, strict: bool = False) -> SDL:
    """Parse and fully validate an SDL; raise ``SDLError`` listing every problem.

    ``strict`` turns warnings (what Akash silently tolerates) into errors.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode()
        except UnicodeDecodeError as exc:
            raise SDLError([Diagnostic("", f"not UTF-8 text: {exc}")]) from exc
    r = Reader(strict=strict)
    try:
        root, notes = compose(text)
    except YAMLSyntaxError as exc:
        raise SDLError([exc.diagnostic]) from exc
    r.diagnostics.extend(notes)
    if root is None:
        raise SDLError([Diagnostic("", "the document is empty")])
    if not isinstance(root, MappingNode):
        raise SDLError([Diagnostic("", "an SDL must be a mapping at the top level", line=1)])
    version = _version(r, root)
    if version is None:
        raise SDLError(_in_file_order(r.diagnostics))
    sdl_in = decode(r, root, version)
    checks.check_references(r, sdl_in)
    checks.check_services(r, sdl_in)
    checks.check_compute(r, sdl_in)
    checks.check_prices(r, sdl_in)
    if r.has_errors:
        raise SDLError(_in_file_order(r.diagnostics))
    groups, manifest = build(r, sdl_in)
    for problem in [*_group_problems(groups), *manifest_problems(manifest)]:
        r.error("", problem)
    if r.has_errors:
        raise SDLError(_in_file_order(r.diagnostics))
    return SDL(
        version=version,
        groups=tuple(groups),
        manifest=manifest,
        reclamation_min_window=sdl_in.reclamation_seconds,
        warnings=tuple(_in_file_order(r.diagnostics)),
    )


def _in_file_order(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=lambda d: (d.line or 0, d.column or 0))


def _group_problems(groups: list[GroupSpec]) -> list[str]:
    try:
        validate_groups(groups)
    except GroupSpecError as exc:
        return list(exc.problems)
    return []
