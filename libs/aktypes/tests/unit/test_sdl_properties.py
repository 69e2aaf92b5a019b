"""Generated SDLs → parse → groups and manifest → cross-validation, and their invariants."""

from __future__ import annotations

import json
from collections import defaultdict

import yaml
from hypothesis import HealthCheck, given, settings

from aktypes.manifest import Manifest, check_against_groups
from aktypes.quantity import parse_bytes, parse_cpu
from aktypes.sdl import parse_sdl
from aktypes.testing import sdl_documents


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(sdl_documents())
def test_generated_sdls_build_consistent_groups_and_manifests(document: dict[str, object]) -> None:
    result = parse_sdl(yaml.safe_dump(document), strict=True)
    check_against_groups(result.manifest, result.groups)

    # the hash survives a JSON round trip of the manifest
    again = Manifest.from_json(json.dumps(result.manifest.go_json()))
    assert again.version() == result.manifest_version

    deployment = document["deployment"]
    assert isinstance(deployment, dict)
    expected: dict[str, int] = defaultdict(int)
    for placements in deployment.values():
        for placement, entry in placements.items():
            expected[placement] += entry["count"]
    assert {g.name: sum(u.count for u in g.resources) for g in result.groups} == expected
    assert [g.name for g in result.groups] == sorted(expected)

    compute = document["profiles"]["compute"]  # type: ignore[index]
    for group in result.manifest.groups:
        for service in group.services or ():
            entry = deployment[service.name][group.name]
            spec = compute[entry["profile"]]["resources"]
            assert service.count == entry["count"]
            assert service.resources.cpu_millis == parse_cpu(str(spec["cpu"]["units"])).value
            assert service.resources.memory_bytes == parse_bytes(spec["memory"]["size"]).value
            assert len(service.resources.storage or ()) == len(spec["storage"])

    if result.version == "2.0":
        assert sum(len(g.resources) for g in result.groups) == sum(
            len(p) for p in deployment.values()
        )
