"""Decoding ``services``: images, commands, env, exposes, params and credentials."""

from __future__ import annotations

from yaml.nodes import Node

from aktypes.sdl.fields import (
    HTTP_KEYS,
    Fields,
    read_fields,
    read_text,
    require,
    set_bool,
    set_strings,
    set_text,
    set_uint,
)
from aktypes.sdl.model import (
    CredentialsIn,
    ExposeIn,
    ExposeToIn,
    HTTPOptionsIn,
    ParamsIn,
    ServiceIn,
    StorageParamIn,
)
from aktypes.sdl.yamlnodes import Reader, is_null, join


def _http_options(r: Reader, node: Node, path: str) -> HTTPOptionsIn:
    opts = HTTPOptionsIn(path, node)
    handlers: Fields = {key: set_uint(r, opts, key) for key in HTTP_KEYS if key != "next_cases"}
    handlers["next_cases"] = set_strings(r, opts, "next_cases")
    read_fields(r, node, path, handlers)
    return opts


def _expose_to(r: Reader, node: Node, path: str) -> ExposeToIn:
    to = ExposeToIn(path, node)
    handlers: Fields = {
        "service": set_text(r, to, "service"),
        "global": set_bool(r, to, "global_"),
        "ip": set_text(r, to, "ip"),
        "http_options": lambda p, v: r.warn(
            p, "http_options belong to the expose, not to its 'to' entry; Akash ignores it", v
        ),
    }
    read_fields(r, node, path, handlers)
    return to


def _expose(r: Reader, node: Node, path: str) -> ExposeIn:
    expose = ExposeIn(path, node)

    def to_list(p: str, v: Node) -> None:
        items = r.sequence(v, p)
        expose.to = [_expose_to(r, item, join(p, i)) for i, item in enumerate(items or ())]

    def accept(p: str, v: Node) -> None:
        expose.accept = r.strings(v, p) if not is_null(v) else None

    def port(p: str, v: Node) -> None:
        if is_null(v):
            r.error(p, "port is required", v)
        else:
            expose.port = r.uint(v, p) or 0

    handlers: Fields = {
        "port": port,
        "as": set_uint(r, expose, "as_"),
        "proto": set_text(r, expose, "proto"),
        "to": to_list,
        "accept": accept,
        "http_options": lambda p, v: setattr(expose, "http_options", _http_options(r, v, p)),
    }
    require(r, read_fields(r, node, path, handlers), node, path, "port")
    return expose


def _params(r: Reader, node: Node, path: str) -> ParamsIn:
    params = ParamsIn(path, node)

    def storage(p: str, v: Node) -> None:
        for name, _, value in r.mapping(v, p) or ():
            here = join(p, name)
            param = StorageParamIn(here, value)
            handlers = {
                "mount": set_text(r, param, "mount"),
                "readOnly": set_bool(r, param, "read_only"),
            }
            read_fields(r, value, here, handlers)
            params.storage[name] = param

    def permissions(p: str, v: Node) -> None:
        params.has_permissions = not is_null(v)
        read_fields(r, v, p, {"read": set_strings(r, params, "permissions")})

    read_fields(
        r,
        node,
        path,
        {
            "storage": storage,
            "permissions": permissions,
            "tee": set_text(r, params, "tee"),
        },
    )
    return params


def _credentials(r: Reader, node: Node, path: str) -> CredentialsIn:
    creds = CredentialsIn(path, node)
    handlers = {key: set_text(r, creds, key) for key in ("host", "email", "username", "password")}
    read_fields(r, node, path, handlers)
    return creds


def decode_service(r: Reader, node: Node, path: str) -> ServiceIn:
    svc = ServiceIn(path, node)

    def exposes(p: str, v: Node) -> None:
        svc.expose = [_expose(r, item, join(p, i)) for i, item in enumerate(r.sequence(v, p) or ())]

    def dependencies(p: str, v: Node) -> None:
        for i, item in enumerate(r.sequence(v, p) or ()):
            read_fields(r, item, join(p, i), {"service": read_text(r)})

    def params(p: str, v: Node) -> None:
        if not is_null(v):
            svc.params = _params(r, v, p)

    def credentials(p: str, v: Node) -> None:
        if not is_null(v):
            svc.credentials = _credentials(r, v, p)

    handlers: Fields = {
        "image": set_text(r, svc, "image"),
        "command": set_strings(r, svc, "command"),
        "args": set_strings(r, svc, "args"),
        "env": set_strings(r, svc, "env"),
        "expose": exposes,
        "dependencies": dependencies,
        "params": params,
        "credentials": credentials,
    }
    read_fields(r, node, path, handlers)
    return svc
