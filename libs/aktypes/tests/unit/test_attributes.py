from __future__ import annotations

import pytest

from aktypes.attributes import (
    Attribute,
    attributes_any_of,
    attributes_subset_of,
    key_matches,
    validate_attributes,
)


@pytest.mark.parametrize(
    ("pattern", "key", "matches"),
    [
        ("region", "region", True),
        ("region", "regions", False),
        (
            "capabilities/gpu/vendor/nvidia/model/*",
            "capabilities/gpu/vendor/nvidia/model/a100",
            True,
        ),
        (
            "capabilities/gpu/vendor/nvidia/model/*",
            "capabilities/gpu/vendor/nvidia/model/a100/ram/80Gi",
            False,
        ),
        ("capabilities/*/class", "capabilities/storage/class", True),
        ("capabilities/*", "capabilities/storage/class", False),  # * never crosses /
        ("tier?", "tier1", True),
        ("tier?", "tier/", False),
        ("cap[ab]", "capa", True),
        ("cap[^ab]", "capa", False),
        ("cap[a-c]", "capb", True),
        ("cap[", "cap[", False),  # malformed pattern matches nothing, like Go
        ("a\\*", "a*", True),
    ],
)
def test_go_filepath_match_semantics(pattern: str, key: str, matches: bool) -> None:
    assert key_matches(pattern, key) is matches


def test_requirements_subset_and_any() -> None:
    provider = [
        Attribute(key="region", value="us-west"),
        Attribute(key="capabilities/gpu/vendor/nvidia/model/a100", value="true"),
    ]
    wants = [Attribute(key="region", value="us-west")]
    assert attributes_subset_of(wants, provider)
    assert not attributes_subset_of([*wants, Attribute(key="tier", value="1")], provider)
    assert attributes_subset_of([], provider)
    gpu_any = [Attribute(key="capabilities/gpu/vendor/nvidia/model/*", value="true")]
    assert attributes_any_of(gpu_any, provider)
    assert not attributes_any_of([Attribute(key="region", value="eu")], provider)


def test_attribute_validation() -> None:
    assert validate_attributes([Attribute(key="host", value="akash")]) is None
    assert "does not match" in str(validate_attributes([Attribute(key="1bad", value="x")]))
    assert "duplicated" in str(
        validate_attributes([Attribute(key="ab", value="1"), Attribute(key="ab", value="2")])
    )
    assert validate_attributes([Attribute(key="vendor/nvidia/model/*", value="true")]) is None
    assert (
        validate_attributes([Attribute(key="vendor/nvidia/model/*", value="true")], wildcard=False)
        is not None
    )
