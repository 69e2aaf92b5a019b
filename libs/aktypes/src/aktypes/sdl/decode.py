"""Decode an SDL's YAML into :mod:`aktypes.sdl.model` records, reporting every problem.

Keys Akash refuses (at the top level, in GPU and CPU attributes, in storage attributes)
are errors; keys Akash silently ignores are warnings, errors in strict mode, because a
tenant who wrote ``cmd:`` or ``environment:`` deserves to know they have no effect.
Values are checked here (syntax, ranges, the storage-attribute rules); references between
sections are checked in :mod:`aktypes.sdl.build`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction

from yaml.nodes import MappingNode, Node

from aktypes.coin import Dec, DecCoin, validate_denom
from aktypes.errors import InvalidPriceError, InvalidQuantityError
from aktypes.quantity import Quantity, parse_binary_bytes, parse_bytes, parse_cpu, parse_gpu_units
from aktypes.resources import STORAGE_CLASSES
from aktypes.sdl.model import (
    ComputeIn,
    CredentialsIn,
    DeploymentIn,
    EndpointIn,
    ExposeIn,
    ExposeToIn,
    HTTPOptionsIn,
    ParamsIn,
    PlacementIn,
    SDLInput,
    ServiceIn,
    StorageParamIn,
    VolumeIn,
)
from aktypes.sdl.yamlnodes import Reader, is_null, join

SERVICE_KEYS = (
    "image",
    "command",
    "args",
    "env",
    "expose",
    "dependencies",
    "params",
    "credentials",
)
EXPOSE_KEYS = ("port", "as", "proto", "to", "accept", "http_options")
TO_KEYS = ("service", "global", "ip")
HTTP_KEYS = (
    "max_body_size",
    "proxy_buffer_size",
    "read_timeout",
    "send_timeout",
    "next_tries",
    "next_timeout",
    "next_cases",
)
_DURATION_UNITS = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "µs": Fraction(1, 10**6),
    "μs": Fraction(1, 10**6),
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}
_DURATION_RE = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")

Handler = Callable[[str, Node], None]
Fields = dict[str, Handler]


def _set_text(r: Reader, target: object, attr: str) -> Handler:
    """Store a scalar's text (``""`` for null) in ``target.attr``."""

    def handle(path: str, node: Node) -> None:
        setattr(target, attr, r.text(node, path) or "")

    return handle


def _read_text(r: Reader) -> Handler:
    """Check that a value is a scalar, keep nothing (fields Akash parses but never uses)."""

    def handle(path: str, node: Node) -> None:
        r.text(node, path)

    return handle


def _set_bool(r: Reader, target: object, attr: str) -> Handler:
    def handle(path: str, node: Node) -> None:
        setattr(target, attr, bool(r.boolean(node, path)))

    return handle


def _set_uint(r: Reader, target: object, attr: str) -> Handler:
    def handle(path: str, node: Node) -> None:
        value = r.uint(node, path)
        if value is not None:
            setattr(target, attr, value)

    return handle


def _set_strings(r: Reader, target: object, attr: str) -> Handler:
    """Store a list of texts, ``None`` for null (Go's nil slice)."""

    def handle(path: str, node: Node) -> None:
        setattr(target, attr, r.strings(node, path))

    return handle


def _fields(
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


def _require(r: Reader, keys: set[str] | None, node: Node, path: str, *names: str) -> None:
    """Report each of ``names`` missing from a mapping that was read."""
    if keys is None or is_null(node):
        return
    for name in names:
        if name not in keys:
            r.error(join(path, name), "is required", node)


def _string_map(r: Reader, node: Node, path: str) -> list[tuple[str, str]] | None:
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


def _quantity(r: Reader, node: Node, path: str, parse: Callable[[str], Quantity]) -> int | None:
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


# -- services --------------------------------------------------------------------------------


def _http_options(r: Reader, node: Node, path: str) -> HTTPOptionsIn:
    opts = HTTPOptionsIn(path, node)
    handlers: Fields = {key: _set_uint(r, opts, key) for key in HTTP_KEYS if key != "next_cases"}
    handlers["next_cases"] = _set_strings(r, opts, "next_cases")
    _fields(r, node, path, handlers)
    return opts


def _expose_to(r: Reader, node: Node, path: str) -> ExposeToIn:
    to = ExposeToIn(path, node)
    handlers: Fields = {
        "service": _set_text(r, to, "service"),
        "global": _set_bool(r, to, "global_"),
        "ip": _set_text(r, to, "ip"),
        "http_options": lambda p, v: r.warn(
            p, "http_options belong to the expose, not to its 'to' entry; Akash ignores it", v
        ),
    }
    _fields(r, node, path, handlers)
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
        "as": _set_uint(r, expose, "as_"),
        "proto": _set_text(r, expose, "proto"),
        "to": to_list,
        "accept": accept,
        "http_options": lambda p, v: setattr(expose, "http_options", _http_options(r, v, p)),
    }
    _require(r, _fields(r, node, path, handlers), node, path, "port")
    return expose


def _params(r: Reader, node: Node, path: str) -> ParamsIn:
    params = ParamsIn(path, node)

    def storage(p: str, v: Node) -> None:
        for name, _, value in r.mapping(v, p) or ():
            here = join(p, name)
            param = StorageParamIn(here, value)
            handlers = {
                "mount": _set_text(r, param, "mount"),
                "readOnly": _set_bool(r, param, "read_only"),
            }
            _fields(r, value, here, handlers)
            params.storage[name] = param

    def permissions(p: str, v: Node) -> None:
        params.has_permissions = not is_null(v)
        _fields(r, v, p, {"read": _set_strings(r, params, "permissions")})

    _fields(
        r,
        node,
        path,
        {
            "storage": storage,
            "permissions": permissions,
            "tee": _set_text(r, params, "tee"),
        },
    )
    return params


def _credentials(r: Reader, node: Node, path: str) -> CredentialsIn:
    creds = CredentialsIn(path, node)
    handlers = {key: _set_text(r, creds, key) for key in ("host", "email", "username", "password")}
    _fields(r, node, path, handlers)
    return creds


def _service(r: Reader, node: Node, path: str) -> ServiceIn:
    svc = ServiceIn(path, node)

    def exposes(p: str, v: Node) -> None:
        svc.expose = [_expose(r, item, join(p, i)) for i, item in enumerate(r.sequence(v, p) or ())]

    def dependencies(p: str, v: Node) -> None:
        for i, item in enumerate(r.sequence(v, p) or ()):
            _fields(r, item, join(p, i), {"service": _read_text(r)})

    def params(p: str, v: Node) -> None:
        if not is_null(v):
            svc.params = _params(r, v, p)

    def credentials(p: str, v: Node) -> None:
        if not is_null(v):
            svc.credentials = _credentials(r, v, p)

    handlers: Fields = {
        "image": _set_text(r, svc, "image"),
        "command": _set_strings(r, svc, "command"),
        "args": _set_strings(r, svc, "args"),
        "env": _set_strings(r, svc, "env"),
        "expose": exposes,
        "dependencies": dependencies,
        "params": params,
        "credentials": credentials,
    }
    _fields(r, node, path, handlers)
    return svc


# -- compute profiles ------------------------------------------------------------------------


def _storage_attributes(r: Reader, node: Node, path: str) -> list[tuple[str, str]] | None:
    """Akash's storage attribute rules, applied to the raw text as Akash applies them."""
    items = r.mapping(node, path)
    if items is None:
        return None
    raw: dict[str, str] = {}
    for key, key_node, value in items:
        text = r.text(value, join(path, key))
        if key not in ("persistent", "class"):
            r.error(join(path, key), f"unsupported storage attribute {key!r}", key_node)
        elif text is not None:
            raw[key] = text
    raw.setdefault("persistent", "false")
    persistent, cls = raw["persistent"], raw.get("class", "")
    if cls == "":
        if persistent == "true":
            raw["class"] = "default"
    elif cls == "ram":
        if persistent != "false":
            r.error(join(path, "persistent"), "storage class 'ram' cannot be persistent", node)
    elif persistent == "false":
        r.error(
            join(path, "class"),
            f"class {cls!r} is only for persistent volumes (set persistent: true)",
            node,
        )
    unified = {
        "true": "true",
        "on": "true",
        "yes": "true",
        "false": "false",
        "off": "false",
        "no": "false",
    }
    if persistent not in unified:
        r.error(join(path, "persistent"), f"must be true or false, got {persistent!r}", node)
    else:
        raw["persistent"] = unified[persistent]
    if "class" in raw and raw["class"] not in STORAGE_CLASSES:
        r.error(
            join(path, "class"),
            f"unknown storage class {raw['class']!r} (allowed: {', '.join(STORAGE_CLASSES)})",
            node,
        )
    return sorted(raw.items())


def _volume(r: Reader, node: Node, path: str, *, default_name: bool) -> VolumeIn:
    volume = VolumeIn(path, node)

    def name(p: str, v: Node) -> None:
        text = r.text(v, p)
        if text and not default_name:
            volume.name = text

    def attributes(p: str, v: Node) -> None:
        if not is_null(v):
            volume.attributes = _storage_attributes(r, v, p)

    handlers: Fields = {
        "name": name,
        "size": lambda p, v: setattr(volume, "size", _quantity(r, v, p, parse_bytes) or 0),
        "attributes": attributes,
    }
    _require(r, _fields(r, node, path, handlers), node, path, "size")
    return volume


def _storage_sort(volumes: list[VolumeIn]) -> list[VolumeIn]:
    """Akash's volume order (its comparator, through Go's insertion sort)."""

    def less(a: VolumeIn, b: VolumeIn) -> bool:
        if a.size != b.size:
            return a.size < b.size
        ap, bp = a.attribute("persistent"), b.attribute("persistent")
        if (not ap and bp) or (ap and bp and ap < bp):
            return True
        if ap and not bp:
            return False
        if ap != "true":
            return True
        if bp != "true":
            return False
        return a.name < b.name

    ordered = list(volumes)
    for i in range(1, len(ordered)):
        j = i
        while j > 0 and less(ordered[j], ordered[j - 1]):
            ordered[j], ordered[j - 1] = ordered[j - 1], ordered[j]
            j -= 1
    return ordered


def _storage(r: Reader, node: Node, path: str) -> list[VolumeIn] | None:
    if is_null(node):
        return None
    if isinstance(node, MappingNode):
        volumes = [_volume(r, node, path, default_name=True)]
    else:
        items = r.sequence(node, path)
        if items is None:
            return None
        volumes = [
            _volume(r, item, join(path, i), default_name=False) for i, item in enumerate(items)
        ]
    seen: set[str] = set()
    for volume in volumes:
        if volume.name in seen:
            r.error(volume.path, f"volume name {volume.name!r} is used twice", volume.node)
        seen.add(volume.name)
    return _storage_sort(volumes)


def _gpu_attributes(r: Reader, node: Node, path: str) -> list[tuple[str, str]] | None:
    vendor_node: Node | None = None
    for key, key_node, value in r.mapping(node, path) or ():
        if key == "vendor":
            vendor_node = value
        else:
            r.error(join(path, key), f"unsupported GPU attribute {key!r}", key_node)
    vpath = join(path, "vendor")
    if vendor_node is None or is_null(vendor_node):
        r.error(vpath, "at least one vendor must be set", vendor_node or node)
        return None
    models: list[str] = []
    for key, key_node, value in r.mapping(vendor_node, vpath) or ():
        if key != "nvidia":
            r.error(
                join(vpath, key), f"unsupported GPU vendor {key!r} (supported: nvidia)", key_node
            )
            continue
        for i, entry in enumerate(r.sequence(value, join(vpath, key)) or ()):
            key_text = _gpu_model(r, entry, join(join(vpath, key), i))
            if key_text is not None:
                models.append(f"vendor/nvidia/model/{key_text}")
    if not models:
        models.append("vendor/nvidia/model/*")
    pairs = sorted((m, "true") for m in models)
    if len(set(models)) != len(models):
        r.error(vpath, "the same GPU model is listed twice", vendor_node)
    return pairs


def _gpu_model(r: Reader, node: Node, path: str) -> str | None:
    found: dict[str, str] = {}

    def ram(p: str, v: Node) -> None:
        size = _quantity(r, v, p, parse_binary_bytes)
        if size is None:
            return
        gib = size // 1024**3
        if size % 1024**3:
            r.warn(p, f"GPU memory is matched in whole Gi; {size} bytes is read as {gib}Gi", v)
        found["ram"] = f"{gib}Gi"

    def interface(p: str, v: Node) -> None:
        text = r.text(v, p)
        if text not in ("pcie", "sxm"):
            r.error(p, f"invalid GPU interface {text!r} (expected pcie or sxm)", v)
        else:
            found["interface"] = text

    handlers: Fields = {
        "model": lambda p, v: found.__setitem__("model", r.text(v, p) or ""),
        "ram": ram,
        "interface": interface,
    }
    _fields(r, node, path, handlers)
    if not found.get("model"):
        r.error(join(path, "model"), "a GPU model is required (use '*' for any model)", node)
        return None
    key = found["model"]
    if "ram" in found:
        key += f"/ram/{found['ram']}"
    if "interface" in found:
        key += f"/interface/{found['interface']}"
    return key


def _gpu(r: Reader, node: Node, path: str, compute: ComputeIn) -> None:
    compute.gpu = 0
    has_attributes = False

    def units(p: str, v: Node) -> None:
        text = r.text(v, p)
        if text is None:
            return
        try:
            compute.gpu = parse_gpu_units(text) if text else 0
        except InvalidQuantityError as exc:
            r.error(p, str(exc), v)

    def attributes(p: str, v: Node) -> None:
        nonlocal has_attributes
        has_attributes = not is_null(v)
        if has_attributes:
            compute.gpu_attributes = _gpu_attributes(r, v, p)

    _fields(r, node, path, {"units": units, "attributes": attributes}, fatal_unknown=True)
    if compute.gpu and not has_attributes:
        r.error(
            join(path, "attributes"),
            "GPU attributes (vendor and model) are required when units > 0",
            node,
        )


def _cpu(r: Reader, node: Node, path: str, compute: ComputeIn) -> None:
    def attributes(p: str, v: Node) -> None:
        pairs = []
        for key, key_node, value in r.mapping(v, p) or ():
            if key != "arch":
                r.error(
                    join(p, key), f"unsupported cpu attribute {key!r} (supported: arch)", key_node
                )
            elif (text := r.text(value, join(p, key))) is not None:
                pairs.append((key, text))
        compute.cpu_attributes = sorted(pairs) or None

    handlers: Fields = {
        "units": lambda p, v: setattr(compute, "cpu", _quantity(r, v, p, parse_cpu)),
        "attributes": attributes,
    }
    _require(r, _fields(r, node, path, handlers), node, path, "units")


def _compute(r: Reader, node: Node, path: str) -> ComputeIn:
    compute = ComputeIn(path, node)

    def resources(p: str, v: Node) -> None:
        def memory(q: str, w: Node) -> None:
            _fields(
                r,
                w,
                q,
                {"size": lambda s, x: setattr(compute, "memory", _quantity(r, x, s, parse_bytes))},
            )

        _fields(
            r,
            v,
            p,
            {
                "cpu": lambda q, w: _cpu(r, w, q, compute),
                "memory": memory,
                "storage": lambda q, w: setattr(compute, "storage", _storage(r, w, q)),
                "gpu": lambda q, w: _gpu(r, w, q, compute),
            },
        )

    _fields(r, node, path, {"resources": resources})
    return compute


# -- placement, deployment, endpoints -------------------------------------------------------


def _price(r: Reader, node: Node, path: str) -> DecCoin | None:
    parts: dict[str, str] = {}

    def part(name: str) -> Callable[[str, Node], None]:
        def handle(p: str, v: Node) -> None:
            text = r.text(v, p)
            if text is not None:
                parts[name] = text

        return handle

    keys = _fields(r, node, path, {"amount": part("amount"), "denom": part("denom")})
    if keys is None:
        return None
    ok = True
    try:
        amount = Dec(parts.get("amount", ""))
    except InvalidPriceError as exc:
        r.error(join(path, "amount"), str(exc), node)
        ok = False
    else:
        if amount.is_zero():
            r.error(join(path, "amount"), "price amount must be greater than zero", node)
            ok = False
        elif amount.is_negative():
            r.error(join(path, "amount"), f"price amount {amount.normalized()} is negative", node)
            ok = False
    try:
        denom = validate_denom(parts.get("denom", ""))
    except InvalidPriceError as exc:
        r.error(join(path, "denom"), str(exc), node)
        ok = False
    return DecCoin(denom=denom, amount=amount) if ok else None


def _placement(r: Reader, node: Node, path: str) -> PlacementIn:
    placement = PlacementIn(path, node)

    def signed_by(p: str, v: Node) -> None:
        _fields(
            r,
            v,
            p,
            {
                "allOf": lambda q, w: setattr(placement, "all_of", r.strings(w, q)),
                "anyOf": lambda q, w: setattr(placement, "any_of", r.strings(w, q)),
            },
        )

    def pricing(p: str, v: Node) -> None:
        for name, _, value in r.mapping(v, p) or ():
            if (coin := _price(r, value, join(p, name))) is not None:
                placement.pricing[name] = coin

    _fields(
        r,
        node,
        path,
        {
            "attributes": lambda p, v: setattr(placement, "attributes", _string_map(r, v, p)),
            "signedBy": signed_by,
            "pricing": pricing,
        },
    )
    return placement


def _deployment(r: Reader, node: Node, path: str) -> dict[str, dict[str, DeploymentIn]]:
    result: dict[str, dict[str, DeploymentIn]] = {}
    for service, _, placements in r.mapping(node, path) or ():
        spath = join(path, service)
        entries: dict[str, DeploymentIn] = {}
        for placement, _, value in r.mapping(placements, spath) or ():
            epath = join(spath, placement)
            entry = DeploymentIn(epath, value)
            handlers = {
                "profile": _set_text(r, entry, "profile"),
                "count": _set_uint(r, entry, "count"),
            }
            _fields(r, value, epath, handlers)
            entries[placement] = entry
        result[service] = entries
    return result


def _duration_seconds(text: str) -> Fraction | None:
    """Go's ``time.ParseDuration`` (e.g. ``1h30m``) in seconds; ``None`` if malformed."""
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    if body == "0":
        return Fraction(0)
    pos, total = 0, Fraction(0)
    for match in _DURATION_RE.finditer(body):
        if match.start() != pos:
            return None
        total += Fraction(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if pos != len(body) or not body:
        return None
    return sign * total


def _reclamation(r: Reader, node: Node, path: str, sdl: SDLInput) -> None:
    def min_window(p: str, v: Node) -> None:
        text = r.text(v, p) or ""
        seconds = _duration_seconds(text)
        if seconds is None:
            r.error(p, f"invalid duration {text!r} (use e.g. 1h, 30m, 720h)", v)
        elif seconds <= 0:
            r.error(p, "min_window must be greater than zero", v)
        else:
            sdl.reclamation_seconds = float(seconds)

    _require(r, _fields(r, node, path, {"min_window": min_window}), node, path, "min_window")


def _endpoints(r: Reader, node: Node, path: str) -> dict[str, EndpointIn]:
    found: dict[str, EndpointIn] = {}
    for name, key_node, value in r.mapping(node, path) or ():
        here = join(path, name)
        endpoint = EndpointIn(here, value)
        _fields(r, value, here, {"kind": _set_text(r, endpoint, "kind")})
        if not re.match(r"^[a-z]+[a-z0-9_-]+$", name):
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
            sdl.services[name] = _service(r, value, join(p, name))

    def profiles(p: str, v: Node) -> None:
        def compute(q: str, w: Node) -> None:
            for name, _, value in r.mapping(w, q) or ():
                sdl.compute[name] = _compute(r, value, join(q, name))

        def placement(q: str, w: Node) -> None:
            for name, _, value in r.mapping(w, q) or ():
                sdl.placement[name] = _placement(r, value, join(q, name))

        _fields(r, v, p, {"compute": compute, "placement": placement})

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
    keys = _fields(r, root, "", handlers, fatal_unknown=True)
    _require(r, keys, root, "", "services", "profiles", "deployment")
    return sdl
