"""The provider's capability attributes, read as Akash reads them, and checked against what
the cluster offers.

Akash matches an order's storage and GPU requirements against the provider's on-chain
attributes under ``capabilities/`` (chain-sdk ``GetCapabilitiesGroup`` and
``GetCapabilitiesMap``):

- **storage**: ``capabilities/storage/<n>/class`` and ``capabilities/storage/<n>/persistent``
  form group ``<n>``; a volume's attributes (``class: beta3``, ``persistent: "true"``) must
  all be matched, equal values, inside one group;
- **GPUs**: ``capabilities/gpu/vendor/<v>/model/<m>[/ram/<r>][/interface/<i>]`` valued
  ``true``; a tenant's GPU attribute key (``vendor/nvidia/model/h100/ram/80Gi``) must equal
  one of them once ``capabilities/gpu/`` is dropped (a glob: ``*`` never crosses ``/``). A
  GPU is therefore advertised under four keys: the model alone, with its memory, with its
  interface, and with both, so that every way a tenant may ask for it matches.
- **leased IPs**: the chain defines no capability for them; Akash Console reads
  ``feat-endpoint-ip: true`` (and some providers write ``ip-lease: true``), which tenants
  may require in their placement attributes.

:class:`Offer` is what the cluster can place: its storage classes (``ram``, memory-backed
and never persistent, on any cluster with nodes; every persistent pool some node takes),
its GPU models and the leased IPs of the IP operator's pool. :func:`compare` lists every
difference with the attributes, both ways: offered but not advertised (orders for it get no
bid: lost orders) and advertised but not offered (bids the cluster cannot place: failed
bids). :func:`capability_attributes` gives the attributes an offer calls for, and
:func:`with_capabilities` puts them in place of a provider's old ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from aktypes.attributes import Attribute
from aktypes.events.status import CapabilityMismatch

CAPABILITIES = "capabilities/"
STORAGE = CAPABILITIES + "storage"
GPU = CAPABILITIES + "gpu"
IP_LEASE_KEYS = ("feat-endpoint-ip", "ip-lease")
"""Keys that say the provider leases IPs: Akash Console's first, which is the one written."""
RAM = "ram"
OFFERED: Final[Literal["offered_not_advertised"]] = "offered_not_advertised"
ADVERTISED: Final[Literal["advertised_not_offered"]] = "advertised_not_offered"


def storage_capability_groups(attributes: Sequence[Attribute]) -> list[tuple[Attribute, ...]]:
    """Provider storage capability groups, as chain-sdk ``GetCapabilitiesGroup("storage")``:
    keys that start with ``capabilities/storage`` and split, after ``capabilities/``, into
    exactly three parts ``<x>/<n>/<name>``, grouped by ``<n>``; other shapes are skipped."""
    return [tuple(group.values()) for group in _storage_groups(attributes).values()]


def _storage_groups(attributes: Sequence[Attribute]) -> dict[str, dict[str, Attribute]]:
    groups: dict[str, dict[str, Attribute]] = {}
    for attr in attributes:
        if not attr.key.startswith(STORAGE):
            continue
        parts = attr.key.removeprefix(CAPABILITIES).split("/")
        if len(parts) != 3:
            continue
        groups.setdefault(parts[1], {})[parts[2]] = Attribute(key=parts[2], value=attr.value)
    return groups


def gpu_capabilities(attributes: Sequence[Attribute]) -> tuple[Attribute, ...]:
    """Provider GPU capabilities, as chain-sdk ``GetCapabilitiesMap("gpu")``: keys that
    start with ``capabilities/gpu`` with at least three parts after ``capabilities/``,
    without their first part (``vendor/nvidia/model/a100/ram/80Gi``)."""
    found = []
    for attr in attributes:
        if not attr.key.startswith(GPU):
            continue
        parts = attr.key.removeprefix(CAPABILITIES).split("/")
        if len(parts) >= 3:
            found.append(Attribute(key="/".join(parts[1:]), value=attr.value))
    return tuple(found)


@dataclass(frozen=True, order=True)
class GPUOffer:
    """A GPU model the cluster offers, with Akash's names (``nvidia``, ``h100``, ``80Gi``,
    ``sxm``); memory and interface may be unknown (empty)."""

    vendor: str
    model: str
    memory: str = ""
    interface: str = ""

    @property
    def name(self) -> str:
        return "/".join(p for p in (self.vendor, self.model, self.memory, self.interface) if p)

    def attribute_keys(self) -> list[str]:
        """The attribute keys that advertise this GPU, every way a tenant may ask for it."""
        base = f"{GPU}/vendor/{self.vendor}/model/{self.model}"
        keys = [base]
        if self.memory:
            keys.append(f"{base}/ram/{self.memory}")
        if self.memory and self.interface:
            keys.append(f"{base}/ram/{self.memory}/interface/{self.interface}")
        if self.interface:
            keys.append(f"{base}/interface/{self.interface}")
        return keys

    def satisfies(self, key: str) -> bool:
        """Does an advertised GPU key (``capabilities/gpu/vendor/…``) describe this GPU?"""
        parts = key.removeprefix(GPU + "/").split("/")
        if len(parts) < 4 or len(parts) % 2 or parts[0] != "vendor" or parts[2] != "model":
            return False
        if (parts[1], parts[3]) != (self.vendor, self.model):
            return False
        extra = dict(zip(parts[4::2], parts[5::2], strict=True))
        if set(extra) - {"ram", "interface"}:
            return False
        return extra.get("ram", self.memory) == self.memory and (
            extra.get("interface", self.interface) == self.interface
        )


@dataclass(frozen=True)
class Offer:
    """What the cluster can place: storage classes (class -> persistent), GPU models, and
    the number of leased IPs it may hand out."""

    storage: Mapping[str, bool] = field(default_factory=dict)
    gpus: frozenset[GPUOffer] = frozenset()
    ips: int = 0

    @classmethod
    def of(
        cls,
        *,
        nodes: int,
        node_classes: Iterable[Iterable[str]],
        pools: Mapping[str, int],
        gpus: Iterable[GPUOffer],
        ips: int = 0,
    ) -> Offer:
        """From the inventory: ``nodes`` offered nodes, the storage classes each takes,
        the persistent pools (class -> bytes; an empty pool offers nothing), the GPU models,
        the leased IPs. ``ram`` is offered whenever there is a node."""
        taken = {c for classes in node_classes for c in classes}
        storage = {RAM: False} if nodes else {}
        storage |= {c: True for c, size in pools.items() if size > 0 and c in taken and c != RAM}
        return cls(dict(sorted(storage.items())), frozenset(gpus), max(ips, 0))


def _storage_subject(cls: str, persistent: bool | None) -> str:
    what = {True: "persistent", False: "not persistent", None: "persistent unsaid"}[persistent]
    return f"{cls} ({what})"


def _advertised_storage(attributes: Sequence[Attribute]) -> dict[tuple[str, bool | None], str]:
    """(class, persistent) -> group number; persistent None when unsaid or not a boolean."""
    found: dict[tuple[str, bool | None], str] = {}
    for number, group in _storage_groups(attributes).items():
        cls = group.get("class")
        if cls is None or not cls.value:
            continue
        persistent = group.get("persistent")
        flag = {"true": True, "false": False}.get(persistent.value if persistent else "")
        found.setdefault((cls.value, flag), number)
    return found


def _storage(offer: Offer, attributes: Sequence[Attribute]) -> list[CapabilityMismatch]:
    advertised = _advertised_storage(attributes)
    found = []
    numbers = sorted((int(n) for n in advertised.values() if n.isdigit()), reverse=True)
    next_number = (numbers[0] if numbers else 0) + 1
    for cls, persistent in offer.storage.items():
        if (cls, persistent) in advertised:
            continue
        attrs = _storage_attributes(next_number, cls, persistent)
        next_number += 1
        found.append(
            CapabilityMismatch(
                direction=OFFERED,
                kind="storage",
                subject=_storage_subject(cls, persistent),
                attributes=attrs,
                message=f"storage class {cls} is in the inventory but not advertised: orders "
                "for it get no bid",
            )
        )
    for (cls, said), number in advertised.items():
        if cls in offer.storage and offer.storage[cls] == said:
            continue
        attrs = {f"{STORAGE}/{number}/class": cls}
        if said is not None:
            attrs[f"{STORAGE}/{number}/persistent"] = str(said).lower()
        if cls not in offer.storage:
            why = "is not in the inventory"
        else:
            why = "is offered " + ("persistent" if offer.storage[cls] else "not persistent")
        found.append(
            CapabilityMismatch(
                direction=ADVERTISED,
                kind="storage",
                subject=_storage_subject(cls, said),
                attributes=attrs,
                message=f"storage class {cls} is advertised but {why}: bids for it cannot "
                "be placed",
            )
        )
    return found


def _storage_attributes(number: int, cls: str, persistent: bool) -> dict[str, str]:
    return {
        f"{STORAGE}/{number}/class": cls,
        f"{STORAGE}/{number}/persistent": str(persistent).lower(),
    }


def _gpus(offer: Offer, attributes: Sequence[Attribute]) -> list[CapabilityMismatch]:
    advertised = [a.key for a in attributes if a.key.startswith(GPU + "/") and a.value == "true"]
    found = []
    for gpu in sorted(offer.gpus):
        missing = [key for key in gpu.attribute_keys() if key not in advertised]
        if not missing:
            continue
        how = "not advertised" if missing[0] == gpu.attribute_keys()[0] else "advertised in part"
        found.append(
            CapabilityMismatch(
                direction=OFFERED,
                kind="gpu",
                subject=gpu.name,
                attributes=dict.fromkeys(missing, "true"),
                message=f"GPU {gpu.name} is in the inventory but {how}: orders asking for "
                "it that way get no bid",
            )
        )
    unplaced: dict[str, list[str]] = {}
    for key in advertised:
        if not any(gpu.satisfies(key) for gpu in offer.gpus):
            parts = key.removeprefix(GPU + "/").split("/")
            name = "/".join(parts[1:4:2]) if len(parts) >= 4 else key
            unplaced.setdefault(name, []).append(key)
    for name, keys in unplaced.items():
        found.append(
            CapabilityMismatch(
                direction=ADVERTISED,
                kind="gpu",
                subject=name,
                attributes=dict.fromkeys(keys, "true"),
                message=f"GPU {name} is advertised but no node offers it that way: bids for "
                "it cannot be placed",
            )
        )
    return found


def _ip_leases(offer: Offer, attributes: Sequence[Attribute]) -> list[CapabilityMismatch]:
    said = {a.key: a.value for a in attributes if a.key in IP_LEASE_KEYS and a.value == "true"}
    if offer.ips and not said:
        return [
            CapabilityMismatch(
                direction=OFFERED,
                kind="ip_lease",
                subject="leased IPs",
                attributes={IP_LEASE_KEYS[0]: "true"},
                message=f"the IP operator's pool holds {offer.ips} address(es) but leased IPs "
                "are not advertised: tenants filtering on them get no bid",
            )
        ]
    if said and not offer.ips:
        return [
            CapabilityMismatch(
                direction=ADVERTISED,
                kind="ip_lease",
                subject="leased IPs",
                attributes=said,
                message="leased IPs are advertised but the IP operator's pool is empty or "
                "absent: bids with leased IPs cannot be placed",
            )
        ]
    return []


def compare(offer: Offer, attributes: Sequence[Attribute]) -> list[CapabilityMismatch]:
    """Every difference between ``offer`` and the provider's on-chain ``attributes``: storage
    classes, GPU models, leased IPs; offered but not advertised first within each kind."""
    return _storage(offer, attributes) + _gpus(offer, attributes) + _ip_leases(offer, attributes)


def is_capability(key: str) -> bool:
    """Is ``key`` one of the attributes :func:`capability_attributes` writes?"""
    return key.startswith(CAPABILITIES + "storage/") or (
        key.startswith(CAPABILITIES + "gpu/") or key in IP_LEASE_KEYS
    )


def capability_attributes(offer: Offer) -> dict[str, str]:
    """The attributes ``offer`` calls for: a storage group per class (numbered from 1, in
    class order), every key of every GPU model, and ``feat-endpoint-ip`` with leased IPs."""
    attrs: dict[str, str] = {}
    for number, (cls, persistent) in enumerate(sorted(offer.storage.items()), start=1):
        attrs |= _storage_attributes(number, cls, persistent)
    for gpu in sorted(offer.gpus):
        attrs |= dict.fromkeys(gpu.attribute_keys(), "true")
    if offer.ips:
        attrs[IP_LEASE_KEYS[0]] = "true"
    return attrs


def with_capabilities(
    attributes: Sequence[Attribute], advertise: Mapping[str, str]
) -> list[Attribute]:
    """The provider's ``attributes`` with its capability attributes replaced by
    ``advertise`` (what :func:`capability_attributes` gives for an offer, keys sorted); the
    others kept, in their order. A key in ``advertise`` that is no capability is refused."""
    foreign = [key for key in advertise if not is_capability(key)]
    if foreign:
        raise ValueError(f"not a capability attribute: {foreign[0]!r}")
    kept = [a for a in attributes if not is_capability(a.key)]
    return kept + [Attribute(key=k, value=advertise[k]) for k in sorted(advertise)]
