"""Decoding ``profiles``: compute resources (CPU, memory, storage, GPU) and placements.

Storage attributes follow Akash's rules on the raw text, as Akash applies them, because the
resulting attribute list enters the manifest hash.
"""

from __future__ import annotations

from yaml.nodes import MappingNode, Node

from aktypes.coin import Dec, DecCoin, validate_denom
from aktypes.errors import InvalidPriceError, InvalidQuantityError
from aktypes.quantity import parse_binary_bytes, parse_bytes, parse_cpu, parse_gpu_units
from aktypes.resources import STORAGE_CLASSES
from aktypes.sdl.fields import Fields, Handler, quantity, read_fields, require, string_map
from aktypes.sdl.model import ComputeIn, PlacementIn, VolumeIn
from aktypes.sdl.yamlnodes import Reader, is_null, join


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
        "size": lambda p, v: setattr(volume, "size", quantity(r, v, p, parse_bytes) or 0),
        "attributes": attributes,
    }
    require(r, read_fields(r, node, path, handlers), node, path, "size")
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
        size = quantity(r, v, p, parse_binary_bytes)
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
    read_fields(r, node, path, handlers)
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

    read_fields(r, node, path, {"units": units, "attributes": attributes}, fatal_unknown=True)
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
        "units": lambda p, v: setattr(compute, "cpu", quantity(r, v, p, parse_cpu)),
        "attributes": attributes,
    }
    require(r, read_fields(r, node, path, handlers), node, path, "units")


def decode_compute(r: Reader, node: Node, path: str) -> ComputeIn:
    compute = ComputeIn(path, node)

    def resources(p: str, v: Node) -> None:
        def memory(q: str, w: Node) -> None:
            read_fields(
                r,
                w,
                q,
                {"size": lambda s, x: setattr(compute, "memory", quantity(r, x, s, parse_bytes))},
            )

        read_fields(
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

    read_fields(r, node, path, {"resources": resources})
    return compute


def _price(r: Reader, node: Node, path: str) -> DecCoin | None:
    parts: dict[str, str] = {}

    def part(name: str) -> Handler:
        def handle(p: str, v: Node) -> None:
            text = r.text(v, p)
            if text is not None:
                parts[name] = text

        return handle

    keys = read_fields(r, node, path, {"amount": part("amount"), "denom": part("denom")})
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


def decode_placement(r: Reader, node: Node, path: str) -> PlacementIn:
    placement = PlacementIn(path, node)

    def signed_by(p: str, v: Node) -> None:
        read_fields(
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

    read_fields(
        r,
        node,
        path,
        {
            "attributes": lambda p, v: setattr(placement, "attributes", string_map(r, v, p)),
            "signedBy": signed_by,
            "pricing": pricing,
        },
    )
    return placement
