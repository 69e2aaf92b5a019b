"""The checks of a submission, one by one, on corpus SDLs: what each refuses and how it says so.

Pure functions: no Redis, no chain. The order they run in and what a refusal becomes on the
bus are in ``test_manifests.py`` (handlers on a real Redis) and the cross-process tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from akmanifest.domain.checks import (
    CROSS_VALIDATION,
    DEPLOYMENT_NOT_FOUND,
    HOSTNAME_NOT_ALLOWED,
    HTTP_STATUS,
    INVALID,
    NO_LEASE,
    SERVICES_CHANGED,
    VERSION_MISMATCH,
    DeploymentFacts,
    check_against_chain,
    check_manifest,
    check_services_unchanged,
    hostname_rejection,
    ingress_hostnames,
    leased_groups,
)
from akmanifest.domain.records import DeploymentRecord
from aktypes.errors import SDLError
from aktypes.ids import DeploymentID, LeaseID
from aktypes.manifest import Manifest
from aktypes.sdl import SDL
from aktypes.testing import address

OWNER, PROVIDER = address(3), address(1)
DEPLOYMENT = DeploymentID(owner=OWNER, dseq=42)
CORPUS = Path(__file__).parents[4] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


def lease(gseq: int = 1) -> LeaseID:
    return LeaseID(owner=OWNER, dseq=42, gseq=gseq, oseq=1, provider=PROVIDER)


def facts_of(
    sdl: SDL, *, leases: tuple[LeaseID, ...] | None = None, **changes: object
) -> DeploymentFacts:
    facts = DeploymentFacts(
        deployment_id=DEPLOYMENT,
        state="active",
        hash=sdl.manifest.version_hex(),
        groups=tuple(enumerate(sdl.groups, start=1)),
        leases=(lease(),) if leases is None else leases,
    )
    return dataclasses.replace(facts, **changes)  # type: ignore[arg-type]


def renamed(manifest: Manifest, old: str, new: str) -> Manifest:
    data = manifest.go_json()
    for group in data:
        for service in group["services"]:
            if service["name"] == old:
                service["name"] = new
            for expose in service["expose"] or ():
                if expose["service"] == old:
                    expose["service"] = new
        group["services"].sort(key=lambda s: s["name"])
    return Manifest.from_data(data)


def test_a_manifest_matching_its_deployment_passes(corpus: Callable[[str], SDL]) -> None:
    sdl = corpus("ghost.yaml")
    assert check_manifest(sdl.manifest) is None
    assert check_against_chain(sdl.manifest, DEPLOYMENT, facts_of(sdl)) is None
    [(found, group)] = leased_groups(sdl.manifest, facts_of(sdl))
    assert found == lease()
    assert group == sdl.manifest.groups[0]


def test_an_invalid_manifest_is_refused_with_every_problem(corpus: Callable[[str], SDL]) -> None:
    data = corpus("big-dipper.yaml").manifest.go_json()
    data[0]["services"].reverse()  # not sorted by name
    data[0]["services"][0]["image"] = ""
    found = check_manifest(Manifest.from_data(data))
    assert found is not None
    assert found.code == INVALID
    assert "services are not sorted by name" in found.reason
    assert "image" in found.reason
    empty = check_manifest(Manifest.from_data([]))
    assert empty is not None and "empty" in empty.reason


def test_the_deployment_must_exist_and_be_active(corpus: Callable[[str], SDL]) -> None:
    sdl = corpus("tetris.yaml")
    missing = check_against_chain(sdl.manifest, DEPLOYMENT, None)
    assert missing is not None and missing.code == DEPLOYMENT_NOT_FOUND
    assert "42" in missing.reason and OWNER in missing.reason
    closed = check_against_chain(sdl.manifest, DEPLOYMENT, facts_of(sdl, state="closed"))
    assert closed is not None and closed.code == DEPLOYMENT_NOT_FOUND
    assert "closed" in closed.reason


def test_a_version_mismatch_names_both_hashes(corpus: Callable[[str], SDL]) -> None:
    sdl, other = corpus("tetris.yaml"), corpus("ghost.yaml")
    found = check_against_chain(
        sdl.manifest, DEPLOYMENT, facts_of(other, groups=facts_of(sdl).groups)
    )
    assert found is not None and found.code == VERSION_MISMATCH
    assert sdl.manifest.version_hex() in found.reason
    assert other.manifest.version_hex() in found.reason


def test_cross_validation_lists_every_mismatch_with_its_group_and_service(
    corpus: Callable[[str], SDL],
) -> None:
    sdl = corpus("big-dipper.yaml")
    data = sdl.manifest.go_json()
    for service in data[0]["services"]:
        service["count"] = 2  # more replicas than the group pays for
    manifest = Manifest.from_data(data)
    facts = facts_of(sdl, hash=manifest.version_hex())
    found = check_against_chain(manifest, DEPLOYMENT, facts)
    assert found is not None and found.code == CROSS_VALIDATION
    names = [s.name for s in sdl.manifest.groups[0].services or ()]
    assert len(names) == 2
    for name in names:
        assert f"service {name!r}: over-utilized replicas" in found.reason
    assert "group 'akash'" in found.reason


def test_no_lease_of_ours_is_404(corpus: Callable[[str], SDL]) -> None:
    sdl = corpus("tetris.yaml")
    found = check_against_chain(sdl.manifest, DEPLOYMENT, facts_of(sdl, leases=()))
    assert found is not None and found.code == NO_LEASE
    assert HTTP_STATUS[found.code] == 404


def test_each_lease_gets_its_own_group(two_groups: Callable[[str], SDL]) -> None:
    sdl = two_groups("tetris.yaml")
    facts = facts_of(sdl, leases=(lease(1), lease(2)))
    assert check_against_chain(sdl.manifest, DEPLOYMENT, facts) is None
    pairs = leased_groups(sdl.manifest, facts)
    assert [(lid.gseq, group.name) for lid, group in pairs] == [(1, "akash"), (2, "west")]


def test_an_update_may_not_rename_services(corpus: Callable[[str], SDL]) -> None:
    sdl = corpus("big-dipper.yaml")
    [_first, second] = [s.name for s in sdl.manifest.groups[0].services or ()]
    update = renamed(sdl.manifest, second, "zz-renamed")
    found = check_services_unchanged(update, sdl.manifest)
    assert found is not None and found.code == SERVICES_CHANGED
    assert "group 'akash'" in found.reason
    assert f"removed: {second}" in found.reason and "added: zz-renamed" in found.reason
    assert check_services_unchanged(sdl.manifest, sdl.manifest) is None
    changed_image = sdl.manifest.go_json()
    changed_image[0]["services"][0]["image"] = "other:1"
    assert check_services_unchanged(Manifest.from_data(changed_image), sdl.manifest) is None


def test_refused_hostnames_say_where_the_manifest_asks_for_them(
    corpus: Callable[[str], SDL],
) -> None:
    group = corpus("ghost.yaml").manifest.groups[0]
    places = ingress_hostnames(group)
    assert places == {"changeme.com": ["group 'akash' service 'ghost' expose 2368/tcp"]}
    assert hostname_rejection({}, places) is None
    found = hostname_rejection({"changeme.com": "used by another tenant"}, places)
    assert found is not None and found.code == HOSTNAME_NOT_ALLOWED
    assert found.reason == (
        "hostnames not allowed: changeme.com (group 'akash' service 'ghost' expose 2368/tcp): "
        "used by another tenant"
    )


def test_only_http_ingress_hostnames_are_checked(corpus: Callable[[str], SDL]) -> None:
    data = corpus("ghost.yaml").manifest.go_json()
    data[0]["services"][0]["expose"][0]["externalPort"] = 8080  # a random port, not ingress
    assert ingress_hostnames(Manifest.from_data(data).groups[0]) == {}


def test_a_stored_manifest_hashes_as_submitted(corpus: Callable[[str], SDL]) -> None:
    names = sorted(p.name for p in CORPUS.glob("*.yaml"))[::12]
    checked = 0
    for name in names:
        try:
            sdl = corpus(name)
        except SDLError:
            continue  # the corpus's one malformed file; the SDL tests cover its rejection
        record = DeploymentRecord.accepted(DEPLOYMENT, sdl.manifest, [lease()], 1.0)
        restored = DeploymentRecord.model_validate_json(record.model_dump_json())
        assert restored.parsed() == sdl.manifest, name
        assert restored.parsed().version_hex() == sdl.manifest.version_hex() == restored.version
        checked += 1
        assert restored.version == sdl.manifest_version.hex(), name
    assert checked >= len(names) - 1
