"""Order screening: every decline reason, Go's matching rules, and groups from real SDLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from akbidengine.domain.filtering import (
    ProviderFacts,
    TenantPolicy,
    gpu_capabilities,
    screen,
    storage_capability_groups,
)
from aktypes.attributes import Attribute, PlacementRequirements, SignedBy
from aktypes.coin import Dec, DecCoin
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.resources import CPU, GPU, Memory, Resources, Storage, rv
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[4] / "libs/aktypes/tests/data/awesome-akash"
OWNER = "akash1tenant"
AUDITOR_A = "akash1auditora"
AUDITOR_B = "akash1auditorb"


def kv(*pairs: tuple[str, str]) -> tuple[Attribute, ...]:
    return tuple(Attribute(key=k, value=v) for k, v in pairs)


PROVIDER = kv(
    ("region", "us-west"),
    ("tier", "community"),
    ("capabilities/storage/1/class", "beta2"),
    ("capabilities/storage/1/persistent", "true"),
    ("capabilities/storage/2/class", "ram"),
    ("capabilities/storage/2/persistent", "false"),
    ("capabilities/gpu/vendor/nvidia/model/a100", "true"),
    ("capabilities/gpu/vendor/nvidia/model/h100/ram/80Gi", "true"),
    ("capabilities/gpu/vendor/nvidia/model/h100/ram/80Gi/interface/sxm", "true"),
)


def unit(
    uid: int = 1,
    *,
    volumes: tuple[tuple[Attribute, ...] | None, ...] = (None,),
    gpu: int = 0,
    gpu_keys: tuple[str, ...] = (),
) -> ResourceUnit:
    storage = [
        Storage(name=f"v{i}", size=rv(2**30), attributes=list(a) if a else None)
        for i, a in enumerate(volumes)
    ]
    return ResourceUnit(
        resource=Resources(
            id=uid,
            cpu=CPU(units=rv(1000)),
            memory=Memory(size=rv(2**30)),
            storage=storage,
            gpu=GPU(
                units=rv(gpu), attributes=[Attribute(key=k, value="true") for k in gpu_keys] or None
            ),
            endpoints=[],
        ),
        count=1,
        price=DecCoin(denom="uact", amount=Dec(100)),
    )


def group(
    *units: ResourceUnit,
    wants: tuple[Attribute, ...] = (),
    all_of: list[str] | None = None,
    any_of: list[str] | None = None,
) -> GroupSpec:
    return GroupSpec(
        name="web",
        requirements=PlacementRequirements(
            attributes=list(wants) or None, signed_by=SignedBy(all_of=all_of, any_of=any_of)
        ),
        resources=list(units) or [unit()],
    )


def facts(**changes: object) -> ProviderFacts:
    base: dict[str, object] = {"address": "akash1provider", "attributes": PROVIDER}
    return ProviderFacts(**(base | changes))  # type: ignore[arg-type]


def codes(spec: GroupSpec, provider: ProviderFacts | None = None, **kwargs: object) -> list[str]:
    policy = kwargs.pop("policy", TenantPolicy())
    reasons = screen(spec, OWNER, provider or facts(), policy, **kwargs)  # type: ignore[arg-type]
    return [r.code for r in reasons]


def test_plain_group_is_bid_on() -> None:
    assert screen(group(), OWNER, facts(), TenantPolicy()) == []


# --- tenants ------------------------------------------------------------------------------------


def test_denied_tenant() -> None:
    reasons = screen(group(), OWNER, facts(), TenantPolicy(deny=frozenset({OWNER})))
    assert [(r.code, OWNER in r.message) for r in reasons] == [("tenant_denied", True)]


def test_allow_list_excludes_others_and_admits_members() -> None:
    assert codes(group(), policy=TenantPolicy(allow=frozenset({"akash1other"}))) == [
        "tenant_not_allowed"
    ]
    assert codes(group(), policy=TenantPolicy(allow=frozenset({OWNER}))) == []


def test_tenant_reasons_come_first_and_all_reasons_are_reported() -> None:
    spec = group(wants=kv(("region", "eu")))
    policy = TenantPolicy(deny=frozenset({OWNER}))
    assert codes(spec, policy=policy) == ["tenant_denied", "attributes_mismatch"]


# --- placement attributes ---------------------------------------------------------------------


def test_requirements_match_provider_attributes_by_glob_key_and_equal_value() -> None:
    assert codes(group(wants=kv(("region", "us-west"), ("ti*", "community")))) == []
    reasons = screen(group(wants=kv(("region", "eu"))), OWNER, facts(), TenantPolicy())
    assert [r.code for r in reasons] == ["attributes_mismatch"]
    assert "region=eu" in reasons[0].message


def test_glob_does_not_cross_slashes() -> None:
    provider = facts(attributes=kv(("location/region", "us")))
    assert codes(group(wants=kv(("location*", "us"))), provider) == ["attributes_mismatch"]
    assert codes(group(wants=kv(("location/*", "us"))), provider) == []


def test_required_attributes_must_be_asked_for() -> None:
    provider = facts(required=kv(("tier", "community")))
    assert codes(group(wants=kv(("tier", "community"))), provider) == []
    reasons = screen(group(), OWNER, provider, TenantPolicy())
    assert [r.code for r in reasons] == ["required_attributes_missing"]
    assert "tier=community" in reasons[0].message


# --- storage capabilities -----------------------------------------------------------------------


def test_storage_groups_follow_go_get_capabilities_group() -> None:
    found = storage_capability_groups(
        kv(
            ("capabilities/storage/1/class", "beta2"),
            ("capabilities/storage/1/persistent", "true"),
            ("capabilities/storage/2/class", "beta3"),
            ("capabilities/storage/3/class/extra", "x"),  # four parts: skipped
            ("capabilities/storage", "x"),  # too short: skipped
            ("capabilities/gpu/vendor/nvidia/model/a100", "true"),
        )
    )
    pairs = sorted([(a.key, a.value) for a in g] for g in found)
    assert pairs == [[("class", "beta2"), ("persistent", "true")], [("class", "beta3")]]


def test_volume_attributes_must_fit_one_storage_class_group() -> None:
    beta2 = kv(("class", "beta2"), ("persistent", "true"))
    assert codes(group(unit(volumes=(None, beta2)))) == []
    assert codes(group(unit(volumes=(kv(("class", "ram"), ("persistent", "false")),)))) == []
    # class from group 1 with persistence from group 2 does not fit a single group
    mixed = kv(("class", "beta2"), ("persistent", "false"))
    reasons = screen(group(unit(7, volumes=(mixed,))), OWNER, facts(), TenantPolicy())
    assert [r.code for r in reasons] == ["storage_capability"]
    assert "resource unit 7" in reasons[0].message and "'v0'" in reasons[0].message


def test_unadvertised_storage_class_declined() -> None:
    beta3 = kv(("class", "beta3"), ("persistent", "true"))
    assert codes(group(unit(volumes=(beta3,)))) == ["storage_capability"]


# --- GPU capabilities ---------------------------------------------------------------------------


def test_gpu_capabilities_follow_go_get_capabilities_map() -> None:
    found = gpu_capabilities(kv(("capabilities/gpu/vendor/nvidia/model/a100", "true"), ("x", "y")))
    assert found == kv(("vendor/nvidia/model/a100", "true"))


@pytest.mark.parametrize(
    ("keys", "ok"),
    [
        (("vendor/nvidia/model/a100",), True),
        (("vendor/nvidia/model/*",), True),
        (("vendor/nvidia/model/h100/ram/80Gi",), True),
        (("vendor/nvidia/model/h100/ram/80Gi/interface/sxm",), True),
        (("vendor/nvidia/model/h100",), False),  # the provider lists h100 only with its RAM
        (("vendor/nvidia/model/h100/ram/*",), True),
        (("vendor/amd/model/*",), False),
        (("vendor/amd/model/mi300", "vendor/nvidia/model/a100"), True),  # any one suffices
    ],
)
def test_gpu_attributes_match_capabilities_by_glob(keys: tuple[str, ...], ok: bool) -> None:
    reasons = screen(group(unit(3, gpu=1, gpu_keys=keys)), OWNER, facts(), TenantPolicy())
    assert [r.code for r in reasons] == ([] if ok else ["gpu_capability"])
    assert all("resource unit 3" in r.message for r in reasons)


def test_gpu_without_attributes_needs_no_capability() -> None:
    assert codes(group(unit(gpu=1)), facts(attributes=())) == []


# --- volumes, auditors, validity ----------------------------------------------------------------


def test_too_many_volumes() -> None:
    spec = group(unit(2, volumes=(None,) * 5))
    reasons = screen(spec, OWNER, facts(), TenantPolicy())
    assert [r.code for r in reasons] == ["too_many_volumes", "invalid_group"]
    assert "resource unit 2" in reasons[0].message
    assert codes(group(unit(volumes=(None,) * 3)), max_volumes=2) == ["too_many_volumes"]


WANTS = kv(("region", "us-west"))


@pytest.mark.parametrize(
    ("audited", "all_of", "any_of", "failing"),
    [
        ({AUDITOR_A: WANTS, AUDITOR_B: WANTS}, [AUDITOR_A, AUDITOR_B], None, []),
        ({AUDITOR_A: WANTS}, [AUDITOR_A, AUDITOR_B], None, [AUDITOR_B]),
        (
            {AUDITOR_A: WANTS, AUDITOR_B: kv(("tier", "x"))},
            [AUDITOR_A, AUDITOR_B],
            None,
            [AUDITOR_B],
        ),
        ({AUDITOR_B: WANTS}, None, [AUDITOR_A, AUDITOR_B], []),
        ({AUDITOR_A: kv(("region", "eu"))}, None, [AUDITOR_A, AUDITOR_B], [AUDITOR_A, AUDITOR_B]),
        ({}, None, [AUDITOR_A], [AUDITOR_A]),
        ({AUDITOR_A: WANTS}, [AUDITOR_A], [AUDITOR_B], [AUDITOR_B]),
    ],
)
def test_signed_by(
    audited: dict[str, tuple[Attribute, ...]],
    all_of: list[str] | None,
    any_of: list[str] | None,
    failing: list[str],
) -> None:
    spec = group(wants=WANTS, all_of=all_of, any_of=any_of)
    reasons = screen(spec, OWNER, facts(audited=audited), TenantPolicy())
    assert all(r.code == "auditor_not_signed" for r in reasons)
    assert bool(reasons) == bool(failing)
    text = " ".join(r.message for r in reasons)
    assert all(auditor in text for auditor in failing)


def test_invalid_group_reported_last() -> None:
    spec = GroupSpec(name="", resources=[unit()])
    reasons = screen(spec, OWNER, facts(), TenantPolicy(deny=frozenset({OWNER})))
    assert [r.code for r in reasons] == ["tenant_denied", "invalid_group"]
    assert "name is empty" in reasons[1].message


# --- real SDLs ----------------------------------------------------------------------------------


def test_corpus_gpu_group_screened_against_gpu_provider() -> None:
    spec = parse_sdl((CORPUS / "Ace-Music-AI.yaml").read_bytes()).groups[0]
    wanted = spec.requirements.attributes or []
    provider = facts(
        attributes=(
            *PROVIDER,
            *wanted,
            *kv(
                ("capabilities/storage/3/class", "beta3"),
                ("capabilities/storage/3/persistent", "true"),
            ),
        )
    )
    assert screen(spec, OWNER, provider, TenantPolicy()) == []
    assert codes(spec) == ["attributes_mismatch", "storage_capability"]
    no_gpu = facts(attributes=tuple(a for a in provider.attributes if "gpu" not in a.key))
    assert codes(spec, no_gpu) == ["gpu_capability"]


def test_no_bids_while_the_balance_is_below_the_minimum() -> None:
    reasons = screen(group(), OWNER, facts(low_balance=("uakt",)), TenantPolicy())
    assert [(r.code, r.message) for r in reasons] == [
        (
            "balance_below_minimum",
            "the provider's balance of uakt is below AP_MINIMUM_BALANCE: no bids until it is "
            "topped up",
        )
    ]
