"""SDL v2.0 and v2.1: parse, validate, and build deployment groups and manifests."""

from aktypes.sdl.diagnostics import Diagnostic, Severity
from aktypes.sdl.parse import SDL, parse_sdl, sdl_version

__all__ = ["SDL", "Diagnostic", "Severity", "parse_sdl", "sdl_version"]
