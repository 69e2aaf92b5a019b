"""Whether to bid on an order at all: every reason a provider declines a deployment group.

Akash's provider (``bidengine/order.go`` ``shouldBid``) answers yes or no and logs the first
failure at debug level; operators then cannot tell why an order got no bid (support#648).
:func:`screen` runs the same checks in the same order but reports every failure as a
:class:`~aktypes.events.DeclineReason` with a stable ``code`` and a message naming the
attribute, resource unit or auditor at fault. An empty list means "bid".

The checks, all against the provider's **on-chain** attributes:

``tenant_denied`` / ``tenant_not_allowed``
    The owner is on the deny list, or an allow list exists and lacks the owner. Go has no
    such lists (operators script them); they are checked first.
``attributes_mismatch``
    Each requirement attribute of the group must match a provider attribute: the
    requirement's key is a Go ``filepath.Match`` glob on the provider's key, values equal
    (chain-sdk ``GroupSpec.MatchAttributes``).
``required_attributes_missing``
    Each operator-required attribute (Go's ``--provider-config`` attributes), read as a glob,
    must match one of the group's requirement attributes ("only bid on orders that ask for me").
``storage_capability``
    chain-sdk ``GroupSpec.MatchResourcesRequirements`` with ``GetCapabilitiesGroup("storage")``:
    provider attributes whose key *starts with* ``capabilities/storage`` and splits, after the
    ``capabilities/`` prefix, into exactly three ``/``-separated parts ``<x>/<n>/<name>`` form
    groups keyed by ``<n>`` holding ``<name>: value``; other shapes are skipped. A volume with
    attributes (e.g. ``class: beta2``, ``persistent: true``) must have all of them matched
    (glob key, equal value) inside a single group. Volumes without attributes pass.
``gpu_capability``
    For a unit with GPU units > 0 and GPU attributes (``GetCapabilitiesMap("gpu")``): provider
    keys starting with ``capabilities/gpu`` with at least three parts after ``capabilities/``
    lose their first part, so ``capabilities/gpu/vendor/nvidia/model/a100/ram/80Gi`` becomes
    ``vendor/nvidia/model/a100/ram/80Gi``. At least one GPU attribute of the unit (a glob such
    as ``vendor/nvidia/model/*``) must match one of those keys with an equal value.
``too_many_volumes``
    A unit with more storage volumes than ``max_volumes`` (Go's ``MaxGroupVolumes``, 4).
``auditor_not_signed``
    With ``signedBy``: every ``allOf`` auditor, and at least one ``anyOf`` auditor, must have
    signed provider attributes that cover the group's requirement attributes. An auditor
    absent from :attr:`ProviderFacts.audited` signed nothing (Go: "address not found").
``invalid_group``
    The chain's own validation (:meth:`GroupSpec.problems`), last as in Go.

The provider's capability attributes are read by :mod:`aktypes.capabilities`, which the
cluster's capabilities check shares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from aktypes import limits
from aktypes.attributes import Attribute, attribute_subset_of, attributes_subset_of
from aktypes.capabilities import gpu_capabilities, storage_capability_groups
from aktypes.events import DeclineReason
from aktypes.groupspec import GroupSpec, ResourceUnit


@dataclass(frozen=True)
class ProviderFacts:
    """What the provider is: its address, attributes and auditors' signatures."""

    address: str
    attributes: tuple[Attribute, ...]
    """The provider's on-chain attributes."""
    required: tuple[Attribute, ...] = ()
    """Attributes an order must ask for (operator configuration)."""
    audited: Mapping[str, tuple[Attribute, ...]] = field(default_factory=dict)
    """Auditor address -> attributes that auditor signed for this provider."""
    low_balance: tuple[str, ...] = ()
    """Denoms of the provider's balance below ``AP_MINIMUM_BALANCE`` (the balance service's
    status): no bids until it is topped up."""


@dataclass(frozen=True)
class TenantPolicy:
    """Tenant allow and deny lists; an empty allow list lets everyone in."""

    allow: frozenset[str] = frozenset()
    deny: frozenset[str] = frozenset()


def screen(
    group: GroupSpec,
    owner: str,
    facts: ProviderFacts,
    policy: TenantPolicy,
    *,
    max_volumes: int = limits.UNIT_MAX_VOLUMES,
) -> list[DeclineReason]:
    """Every reason not to bid on ``group`` ordered by ``owner``; empty means bid."""
    reasons = _tenant(owner, policy)
    reasons += _placement(group, facts)
    for unit in group.resources:
        reasons += _capabilities(unit, facts.attributes)
    reasons += _volumes(group, max_volumes)
    reasons += _auditors(group, facts.audited)
    reasons += [DeclineReason(code="invalid_group", message=p) for p in group.problems()]
    if facts.low_balance:
        reasons.append(
            DeclineReason(
                code="balance_below_minimum",
                message=f"the provider's balance of {', '.join(facts.low_balance)} is below "
                "AP_MINIMUM_BALANCE: no bids until it is topped up",
            )
        )
    return reasons


def _show(attributes: Iterable[Attribute]) -> str:
    return ", ".join(f"{a.key}={a.value}" for a in attributes)


def _tenant(owner: str, policy: TenantPolicy) -> list[DeclineReason]:
    reasons = []
    if owner in policy.deny:
        reasons.append(DeclineReason(code="tenant_denied", message=f"tenant {owner} is denied"))
    if policy.allow and owner not in policy.allow:
        reasons.append(
            DeclineReason(
                code="tenant_not_allowed", message=f"tenant {owner} is not on the allow list"
            )
        )
    return reasons


def _placement(group: GroupSpec, facts: ProviderFacts) -> list[DeclineReason]:
    wanted = group.requirements.attributes or []
    reasons = [
        DeclineReason(
            code="attributes_mismatch",
            message=f"no provider attribute matches requirement {req.key}={req.value}",
        )
        for req in wanted
        if not any(attribute_subset_of(req, attr) for attr in facts.attributes)
    ]
    reasons += [
        DeclineReason(
            code="required_attributes_missing",
            message=f"the order does not ask for required attribute {req.key}={req.value}",
        )
        for req in facts.required
        if not any(attribute_subset_of(req, attr) for attr in wanted)
    ]
    return reasons


def _capabilities(unit: ResourceUnit, provider: Sequence[Attribute]) -> list[DeclineReason]:
    res = unit.resource
    reasons = []
    storage_groups = storage_capability_groups(provider)
    for volume in res.storage or ():
        wanted = volume.attributes or []
        if wanted and not any(attributes_subset_of(wanted, g) for g in storage_groups):
            reasons.append(
                DeclineReason(
                    code="storage_capability",
                    message=f"resource unit {res.id}: storage {volume.name!r} "
                    f"({_show(wanted)}) matches no provider storage class",
                )
            )
    gpu_wanted = (res.gpu.attributes or []) if res.gpu is not None else []
    if res.gpu_units > 0 and gpu_wanted:
        offered = gpu_capabilities(provider)
        if not any(attribute_subset_of(w, o) for w in gpu_wanted for o in offered):
            reasons.append(
                DeclineReason(
                    code="gpu_capability",
                    message=f"resource unit {res.id}: no provider GPU matches any of "
                    f"{_show(gpu_wanted)}",
                )
            )
    return reasons


def _volumes(group: GroupSpec, max_volumes: int) -> list[DeclineReason]:
    return [
        DeclineReason(
            code="too_many_volumes",
            message=f"resource unit {unit.resource.id}: {len(unit.resource.storage or ())} "
            f"storage volumes, at most {max_volumes} accepted",
        )
        for unit in group.resources
        if len(unit.resource.storage or ()) > max_volumes
    ]


def _auditor_failure(
    auditor: str, wanted: Sequence[Attribute], audited: Mapping[str, tuple[Attribute, ...]]
) -> str | None:
    """Why ``auditor``'s signatures do not cover ``wanted``; ``None`` when they do."""
    if auditor not in audited:
        return f"auditor {auditor} signed no attributes of this provider"
    signed = audited[auditor]
    missing = [w for w in wanted if not any(attribute_subset_of(w, s) for s in signed)]
    if missing:
        return f"auditor {auditor} did not sign {_show(missing)}"
    return None


def _auditors(
    group: GroupSpec, audited: Mapping[str, tuple[Attribute, ...]]
) -> list[DeclineReason]:
    signed_by = group.requirements.signed_by
    wanted = group.requirements.attributes or []
    reasons = [
        DeclineReason(code="auditor_not_signed", message=f"allOf: {failure}")
        for auditor in signed_by.all_of or ()
        if (failure := _auditor_failure(auditor, wanted, audited))
    ]
    any_of = signed_by.any_of or []
    failures = [_auditor_failure(auditor, wanted, audited) for auditor in any_of]
    if any_of and all(failures):
        reasons.append(
            DeclineReason(
                code="auditor_not_signed",
                message="anyOf: no listed auditor covers the requirements: "
                + "; ".join(f for f in failures if f),
            )
        )
    return reasons
