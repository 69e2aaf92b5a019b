"""Conformance: Akash's 342 public SDL templates.

334 are valid and must build groups and a manifest that validates, cross-validates against
its own groups, and hashes the same after a JSON round trip. Eight are broken as published:
``teamspeak.yaml`` is not YAML, and seven break Akash's own SDL rules (the Go parser and
Akash Console refuse them too); each must be rejected for its real reason, named by path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aktypes.errors import SDLError
from aktypes.groupspec import GroupSpec
from aktypes.manifest import Manifest, check_against_groups, validate_manifest
from aktypes.sdl import SDL, parse_sdl

# file -> (YAML path of an error it must report, words of that error)
REJECTED = {
    "teamspeak.yaml": ("", "not valid YAML"),  # the first line is "--", not "---"
    "Venice-ElizaOS.yaml": ("profiles.compute.service-1.resources.cpu.units", "got a list"),
    "axolotlai.yaml": (
        "profiles.compute.axolotl-trainer.resources.storage[0]",
        "persistent volume 'default' needs a mount",
    ),
    "codex.yaml": ("services.nginx.expose[0].http_options.max_body_size", "exceeds the maximum"),
    "minio.yaml": ("services.minio.expose[0].to", "must be a list"),
    "pokt-network.yaml": ("profiles", "is required"),  # profiles are nested under a service
    "postgres-s3-backup.yaml": ("services", "no service is exposed globally"),
    "steamcmd.yaml": ("services.steamcmd.expose[0].port", "port is required"),
}


@pytest.fixture(scope="module")
def parsed(corpus_dir: Path) -> dict[str, SDL | SDLError]:
    results: dict[str, SDL | SDLError] = {}
    for path in sorted(corpus_dir.glob("*.yaml")):
        try:
            results[path.name] = parse_sdl(path.read_bytes())
        except SDLError as exc:
            results[path.name] = exc
    return results


def test_counts(parsed: dict[str, SDL | SDLError]) -> None:
    valid = [name for name, result in parsed.items() if isinstance(result, SDL)]
    rejected = {name for name, result in parsed.items() if isinstance(result, SDLError)}
    assert len(parsed) == 342
    assert len(valid) == 334
    assert rejected == set(REJECTED)


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_broken_templates_are_rejected_for_their_reason(
    parsed: dict[str, SDL | SDLError], name: str
) -> None:
    result = parsed[name]
    assert isinstance(result, SDLError)
    path, words = REJECTED[name]
    errors = [d for d in result.diagnostics if d.is_error]
    assert any(d.path == path and words in d.message for d in errors), [str(d) for d in errors]
    assert all(d.line is not None for d in errors)


def test_every_valid_template_round_trips(parsed: dict[str, SDL | SDLError]) -> None:
    checked = 0
    for name, result in parsed.items():
        if isinstance(result, SDLError):
            continue
        manifest = result.manifest
        validate_manifest(manifest)
        check_against_groups(manifest, result.groups)
        again = Manifest.from_json(json.dumps(manifest.go_json()))
        assert again.version() == manifest.version(), name
        assert again.canonical_json() == manifest.canonical_json(), name
        groups = [
            GroupSpec.model_validate_json(g.model_dump_json(by_alias=True)) for g in result.groups
        ]
        assert groups == list(result.groups), name
        check_against_groups(again, groups)
        checked += 1
    assert checked == 334


def test_corpus_covers_the_interesting_features(parsed: dict[str, SDL | SDLError]) -> None:
    valid = [r for r in parsed.values() if isinstance(r, SDL)]
    units = [u for r in valid for g in r.groups for u in g.resources]
    assert sum(1 for u in units if u.resource.gpu_units) >= 100
    assert any(v.persistent for u in units for v in u.resource.storage or ())
    assert any(
        e.ip
        for r in valid
        for g in r.manifest.groups
        for s in g.services or ()
        for e in s.expose or ()
    )
    assert {r.version for r in valid} == {"2.0"}
    assert sum(1 for r in valid if r.warnings) >= 30  # keys Akash ignores, Console-only sizes
