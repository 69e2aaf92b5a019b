"""Decode an SDL's YAML into :mod:`aktypes.sdl.model` records, reporting every problem.

Keys Akash refuses (at the top level, in GPU and CPU attributes, in storage attributes)
are errors; keys Akash silently ignores are warnings, errors in strict mode, because a
tenant who wrote ``cmd:`` or ``environment:`` deserves to know they have no effect.
Values are checked here (syntax, ranges, the storage-attribute rules); references between
sections are checked in :mod:`aktypes.sdl.checks`.
"""

from __future__ import annotations

import re

from yaml.nodes import Node

from aktypes.duration import go_duration
from aktypes.sdl.decode_profiles import decode_compute, decode_placement
from aktypes.sdl.decode_services import decode_service
from aktypes.sdl.fields import Fields, read_fields, require, set_text, set_uint
from aktypes.sdl.model import DeploymentIn, EndpointIn, SDLInput
from aktypes.sdl.yamlnodes import Reader, join


def _deployment(r: Reader, node: Node, path: str) -> dict[str, dict[str, DeploymentIn]]:
    result: dict[str, dict[str, DeploymentIn]] = {}
    for service, _, placements in r.mapping(node, path) or ():
        spath = join(path, service)
        entries: dict[str, DeploymentIn] = {}
        for placement, _, value in r.mapping(placements, spath) or ():
            epath = join(spath, placement)
            entry = DeploymentIn(epath, value)
            handlers = {
                "profile": set_text(r, entry, "profile"),
                "count": set_uint(r, entry, "count"),
            }
            read_fields(r, value, epath, handlers)
            entries[placement] = entry
        result[service] = entries
    return result


def _reclamation(r: Reader, node: Node, path: str, sdl: SDLInput) -> None:
    def min_window(p: str, v: Node) -> None:
        text = r.text(v, p) or ""
        seconds = go_duration(text)
        if seconds is None:
            r.error(p, f"invalid duration {text!r} (use e.g. 1h, 30m, 720h)", v)
        elif seconds <= 0:
            r.error(p, "min_window must be greater than zero", v)
        else:
            sdl.reclamation_seconds = float(seconds)

    require(r, read_fields(r, node, path, {"min_window": min_window}), node, path, "min_window")


def _endpoints(r: Reader, node: Node, path: str) -> dict[str, EndpointIn]:
    found: dict[str, EndpointIn] = {}
    for name, key_node, value in r.mapping(node, path) or ():
        here = join(path, name)
        endpoint = EndpointIn(here, value)
        read_fields(r, value, here, {"kind": set_text(r, endpoint, "kind")})
        if not re.fullmatch(r"[a-z]+[a-z0-9_-]+", name):
            r.error(
                here,
                f"endpoint name {name!r} is invalid (lower case letters, digits, - and _)",
                key_node,
            )
        if not endpoint.kind:
            r.error(join(here, "kind"), "endpoint has no kind (expected: ip)", value)
        elif endpoint.kind != "ip":
            r.error(
                join(here, "kind"), f"unknown endpoint kind {endpoint.kind!r} (expected: ip)", value
            )
        found[name] = endpoint
    return found


def decode(r: Reader, root: Node, version: str) -> SDLInput:
    """Decode a whole SDL document (its version already checked)."""
    sdl = SDLInput(version=version)

    def services(p: str, v: Node) -> None:
        for name, _, value in r.mapping(v, p) or ():
            sdl.services[name] = decode_service(r, value, join(p, name))

    def profiles(p: str, v: Node) -> None:
        def compute(q: str, w: Node) -> None:
            for name, _, value in r.mapping(w, q) or ():
                sdl.compute[name] = decode_compute(r, value, join(q, name))

        def placement(q: str, w: Node) -> None:
            for name, _, value in r.mapping(w, q) or ():
                sdl.placement[name] = decode_placement(r, value, join(q, name))

        read_fields(r, v, p, {"compute": compute, "placement": placement})

    def include(p: str, v: Node) -> None:
        r.strings(v, p)
        r.warn(p, "'include' is not supported: the files it names are not read (as in Akash)", v)

    handlers: Fields = {
        "version": lambda _p, _v: None,  # read first, by parse_sdl
        "include": include,
        "services": services,
        "profiles": profiles,
        "deployment": lambda p, v: sdl.deployment.update(_deployment(r, v, p)),
        "endpoints": lambda p, v: sdl.endpoints.update(_endpoints(r, v, p)),
        "reclamation": lambda p, v: _reclamation(r, v, p, sdl),
    }
    keys = read_fields(r, root, "", handlers, fatal_unknown=True)
    require(r, keys, root, "", "services", "profiles", "deployment")
    return sdl
