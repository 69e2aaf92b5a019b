"""Bid prices: the request, the strategy protocol, Go's ``scale`` strategy, the script input.

``ScaleStrategy`` reproduces Akash's ``scale`` strategy (provider ``bidengine/pricing.go``,
``scalePricing.CalculatePrice``) to the last digit. Go computes with
``github.com/shopspring/decimal`` (arbitrary precision), not ``sdk.Dec``:

* CPU: ``Σ millicpu × count``, then ``× cpu scale`` (exact).
* Memory: ``Σ bytes × count``, then ``÷ 2^20`` with shopspring's ``Div``, i.e. rounded to
  16 decimal places half away from zero (``DivisionPrecision = 16``), then ``× memory scale``.
* Storage: per class, ``Σ bytes × count`` over every volume of that class in the group,
  then ``÷ 2^20`` (rounded as above) and ``× the class's scale``. A volume's class is
  ``ephemeral`` unless its ``persistent`` attribute parses as true (Go ``strconv.ParseBool``)
  *and* it has a ``class`` attribute — so ``ram`` volumes (never persistent) are priced as
  ephemeral. A class without a configured scale fails the whole price.
* Endpoints: the number of endpoint entries of every unit, **not** multiplied by count.
* Leased IPs: the number of distinct ``LEASED_IP`` sequence numbers in the group.
* The exact sum is printed with trailing zeros trimmed and parsed by
  ``LegacyNewDecFromStr``: zero is refused (``ErrBidZero``), more than 18 decimal places is
  a parse error, above ``LegacyMaxSortableDec`` (10^18) is ``ErrBidQuantityInvalid``. The
  coin's denomination is the group's max-price denomination.

The one addition: ``gpu``, a per-model price per GPU unit (Go's ``scale`` does not price
GPUs at all). It applies only when configured; see :meth:`ScaleStrategy.gpu_unit_price`.

:func:`script_input` builds what Go's ``shellscript.go`` (``newDataForScript``) writes to a
price script's stdin; it lives here so that it is pure and tested without processes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from aktypes.attributes import Attribute
from aktypes.coin import Dec, DecCoin
from aktypes.errors import AkTypesError
from aktypes.events import ResourceOffer
from aktypes.groupspec import GroupSpec
from aktypes.resources import EPHEMERAL, EndpointKind, Resources, Storage

DEFAULT_PRICE_PRECISION = 6
MEBIBYTE = 1 << 20
_DIV_SCALE = 10**16  # shopspring/decimal DivisionPrecision
_MAX_RAW = 10**36  # LegacyMaxSortableDec (10^18) as a raw 18-decimal integer
_GO_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_NUMBER_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_GO_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_GO_ESCAPE_RE = re.compile("[<>&\u2028\u2029]")


class PricingError(Exception):
    """No price: ``code`` says why for machines, ``str()`` for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class PriceRequest:
    """What to price: a tenant's group and the resources the cluster reserved for it."""

    owner: str
    group: GroupSpec
    allocated: tuple[ResourceOffer, ...] = ()
    price_precision: int = DEFAULT_PRICE_PRECISION

    def max_price(self) -> DecCoin:
        """The group's max price per block; its denomination is the bid's."""
        try:
            return self.group.price()
        except AkTypesError as exc:
            raise PricingError("invalid_group", f"cannot price the group: {exc}") from exc

    def units(self) -> list[tuple[Resources, int]]:
        """Each unit's resources and count, the reserved ones where their ID matches."""
        offers = {offer.resources.id: offer for offer in self.allocated}
        found = []
        for unit in self.group.resources:
            offer = offers.get(unit.resource.id)
            found.append((offer.resources, offer.count) if offer else (unit.resource, unit.count))
        return found


class PricingStrategy(Protocol):
    """Prices an order in its max-price denomination or raises :class:`PricingError`."""

    async def price(self, request: PriceRequest) -> DecCoin: ...


def parse_scale(text: str, what: str) -> Dec:
    """A non-negative decimal as shopspring's ``NewFromString`` reads it (at most 18 places)."""
    if not _NUMBER_RE.match(text.strip()):
        raise ValueError(f"{what}: {text!r} is not a decimal number")
    value = Decimal(text.strip())
    if value.adjusted() > 40:
        raise ValueError(f"{what}: {text!r} is too large")
    plain = format(value, "f")
    if value < 0:
        raise ValueError(f"{what}: {text!r} is negative; prices cannot be negative")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    if len(plain.partition(".")[2]) > 18:
        raise ValueError(f"{what}: {text!r} has more than 18 decimal places")
    return Dec(plain)


def _pairs(text: str, what: str, *, bare_key: str | None) -> dict[str, Dec]:
    """``value,name=value,…``; a bare value belongs to ``bare_key`` when one is allowed."""
    scales: dict[str, Dec] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep and bare_key is not None:
            name, value = bare_key, item
        name = name.strip()
        if (not sep and bare_key is None) or not name or "=" in value:
            raise ValueError(f"{what}: {item!r} is not of the form name=value")
        if name in scales:
            raise ValueError(f"{what}: {name!r} is given twice")
        scales[name] = parse_scale(value, f"{what} {name!r}")
    return scales


def scale_storage_class(volume: Storage) -> str:
    """The class ``scale`` prices a volume at: its class only when persistent (Go's rule)."""
    attrs = volume.attributes or []
    persistent = next((a.value for a in attrs if a.key == "persistent"), "")
    cls = next((a.value for a in attrs if a.key == "class"), "")
    return cls if persistent in _GO_TRUE and cls else EPHEMERAL


def leased_ips(resources: Iterable[Resources]) -> int:
    """Distinct ``LEASED_IP`` endpoint sequence numbers (Go ``GetEndpointQuantityOf…``)."""
    return len(
        {
            ep.sequence_number
            for res in resources
            for ep in res.endpoints or ()
            if ep.kind == EndpointKind.LEASED_IP
        }
    )


@dataclass(frozen=True)
class GPUModel:
    """One GPU attribute ``vendor/<vendor>/model/<model>[/ram/<ram>][/interface/<if>]``."""

    vendor: str
    model: str
    ram: str | None = None
    interface: str | None = None


def gpu_models(attributes: Sequence[Attribute] | None) -> list[GPUModel]:
    """GPU attributes read as Go's ``parseGPU`` does; malformed keys are skipped, not fatal."""
    found = []
    for attr in attributes or ():
        tokens = attr.key.split("/")
        if tokens[0] != "vendor" or len(tokens) < 4:
            continue
        extra = dict(zip(tokens[4::2], tokens[5::2], strict=False))
        found.append(GPUModel(tokens[1], tokens[3], extra.get("ram"), extra.get("interface")))
    return found


def _mebibytes(size: int) -> int:
    """``size ÷ 2^20`` as shopspring's ``Div`` rounds it, scaled by 10^16."""
    quotient, remainder = divmod(size * _DIV_SCALE, MEBIBYTE)
    return quotient + (2 * remainder >= MEBIBYTE)


def _exact(value: int, places: int) -> str:
    whole, frac = divmod(value, 10**places)
    return f"{whole}.{frac:0{places}d}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class ScaleStrategy:
    """Go's ``scale`` strategy (prices per millicpu, MiB, endpoint, IP) plus GPU models."""

    cpu: Dec
    memory: Dec
    storage: Mapping[str, Dec]
    endpoint: Dec
    ip: Dec
    gpu: Mapping[str, Dec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        named = {"cpu": self.cpu, "memory": self.memory, "endpoint": self.endpoint, "ip": self.ip}
        named |= {f"storage {k!r}": v for k, v in self.storage.items()}
        named |= {f"gpu {k!r}": v for k, v in self.gpu.items()}
        if negative := [name for name, value in named.items() if value.is_negative()]:
            raise ValueError(f"scale prices cannot be negative: {', '.join(negative)}")
        storage_zero = not self.storage or any(v.is_zero() for v in self.storage.values())
        singles = (self.cpu, self.memory, self.endpoint, self.ip)
        if all(v.is_zero() for v in singles) and storage_zero and not any(self.gpu.values()):
            raise ValueError("at least one scale price must be non-zero")

    @classmethod
    def from_settings(  # noqa: PLR0917 - one parameter per Go flag, in Go's order
        cls, cpu: str, memory: str, storage: str, endpoint: str, ip: str, gpu: str
    ) -> ScaleStrategy:
        """Parse Go's flag syntax: storage ``0.00016,beta2=0.00016``, gpu ``a100=120,*=100``."""
        return cls(
            cpu=parse_scale(cpu, "cpu scale"),
            memory=parse_scale(memory, "memory scale"),
            storage=_pairs(storage, "storage scale", bare_key=EPHEMERAL),
            endpoint=parse_scale(endpoint, "endpoint scale"),
            ip=parse_scale(ip, "ip scale"),
            gpu=_pairs(gpu, "gpu scale", bare_key=None) if gpu.strip() else {},
        )

    async def price(self, request: PriceRequest) -> DecCoin:
        """:meth:`compute`, as the :class:`PricingStrategy` protocol asks."""
        return self.compute(request)

    def gpu_unit_price(self, model: GPUModel | None) -> Dec | None:
        """Price of one GPU: ``model.ram.interface``, ``model.ram``, ``model``, then ``*``."""
        keys = ["*"]
        if model is not None:
            keys = [model.model, "*"]
            if model.ram:
                keys.insert(0, f"{model.model}.{model.ram}")
                if model.interface:
                    keys.insert(0, f"{model.model}.{model.ram}.{model.interface}")
            elif model.interface:
                keys.insert(0, f"{model.model}.{model.interface}")
        return next((self.gpu[k] for k in keys if k in self.gpu), None)

    def _gpu_raw(self, request: PriceRequest) -> int:
        """Σ GPU units × count × the dearest model the unit may get (raw 18-decimal)."""
        if not self.gpu:
            return 0
        total = 0
        for unit, (reserved, _) in zip(request.group.resources, request.units(), strict=True):
            if not unit.resource.gpu_units:
                continue
            models = gpu_models(reserved.gpu.attributes if reserved.gpu else None)
            prices = [self.gpu_unit_price(m) for m in models] or [self.gpu_unit_price(None)]
            if None in prices:
                missing = [m.model for m in models] or ["any GPU"]
                raise PricingError(
                    "gpu_model_unpriced",
                    f"resource unit {unit.resource.id}: no GPU price configured for "
                    f"{', '.join(missing)} and no '*' fallback",
                )
            dearest = max(p.raw for p in prices if p is not None)
            total += dearest * unit.resource.gpu_units * unit.count
        return total

    def compute(self, request: PriceRequest) -> DecCoin:
        """The bid, exactly as Go's ``scalePricing.CalculatePrice`` (+ GPUs) computes it."""
        denom = request.max_price().denom
        cpu = memory = endpoints = 0
        storage = dict.fromkeys(self.storage, 0)
        for unit in request.group.resources:
            res, count = unit.resource, unit.count
            cpu += res.cpu_millis * count
            memory += res.memory_bytes * count
            for volume in res.storage or ():
                cls = scale_storage_class(volume)
                if cls not in storage:
                    raise PricingError(
                        "storage_class_unpriced",
                        f"no price configured for storage class {cls!r} "
                        f"(resource unit {res.id}, volume {volume.name!r})",
                    )
                storage[cls] += volume.size.val * count
            endpoints += len(res.endpoints or ())
        ips = leased_ips(unit.resource for unit in request.group.resources)
        # Everything in units of 10^-34: scales carry 18 places, MiB quotients 16.
        exact = cpu * self.cpu.raw + endpoints * self.endpoint.raw + ips * self.ip.raw
        exact = (exact + self._gpu_raw(request)) * _DIV_SCALE
        exact += _mebibytes(memory) * self.memory.raw
        exact += sum(_mebibytes(size) * self.storage[cls].raw for cls, size in storage.items())
        if exact == 0:
            raise PricingError("price_zero", "the computed price is zero; a bid cannot be zero")
        raw, rest = divmod(exact, _DIV_SCALE)
        if rest:
            raise PricingError(
                "price_precision",
                f"the computed price {_exact(exact, 34)} has more than 18 decimal places",
            )
        if raw > _MAX_RAW:
            raise PricingError(
                "price_out_of_range", f"the computed price {_exact(raw, 18)} exceeds 10^18"
            )
        return DecCoin(denom=denom, amount=Dec.from_raw(raw))


def _script_storage_class(volume: Storage) -> str:
    """Go's ``parseStorage``: the ``class`` attribute if non-empty, else ``ephemeral``."""
    cls = next((a.value for a in volume.attributes or () if a.key == "class"), "")
    return cls or EPHEMERAL


def _script_unit(res: Resources, count: int) -> dict[str, Any]:
    vendors: dict[str, dict[str, str]] = {}
    for model in gpu_models(res.gpu.attributes if res.gpu else None):
        entry = {"model": model.model}  # a vendor's last attribute wins, as in Go
        if model.ram is not None:
            entry["ram"] = model.ram
        if model.interface is not None:
            entry["interface"] = model.interface
        vendors[model.vendor] = entry
    return {
        "memory": res.memory_bytes,
        "cpu": res.cpu_millis,
        "gpu": {
            "units": res.gpu_units,
            "attributes": {"vendor": dict(sorted(vendors.items()))} if vendors else {},
        },
        "storage": [
            {"class": _script_storage_class(v), "size": v.size.val} for v in res.storage or ()
        ],
        "count": count,
        "endpoint_quantity": len(res.endpoints or ()),
        "ip_lease_quantity": leased_ips([res]),
    }


def script_input(request: PriceRequest) -> dict[str, Any]:
    """The JSON object a price script reads on stdin (Go ``newDataForScript``)."""
    price = request.max_price()
    data: dict[str, Any] = {
        "resources": [_script_unit(res, count) for res, count in request.units()],
        "price": {"denom": price.denom, "amount": str(price.amount)},
    }
    if request.price_precision > 0:
        data["price_precision"] = request.price_precision
    return data


def script_stdin(request: PriceRequest) -> bytes:
    """:func:`script_input` encoded as Go's ``json.Encoder`` writes it (newline included)."""
    text = json.dumps(script_input(request), separators=(",", ":"), ensure_ascii=False)
    return (_GO_ESCAPE_RE.sub(lambda m: _GO_ESCAPES[m.group(0)], text) + "\n").encode()
