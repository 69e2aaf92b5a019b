"""aktypes ↔ protobuf ↔ LCD JSON: every corpus SDL's groups survive the round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict

from akchain.convert import group_spec_from_json, group_spec_from_pb, group_spec_pb
from aktypes.errors import SDLError
from aktypes.groupspec import GroupSpec
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[3] / "aktypes" / "tests" / "data" / "awesome-akash"


def corpus_groups() -> list[GroupSpec]:
    groups: list[GroupSpec] = []
    for path in sorted(CORPUS.glob("*.yaml")):
        try:
            groups.extend(parse_sdl(path.read_text()).groups)
        except SDLError:
            continue
    return groups


GROUPS = corpus_groups()


def plain(group: GroupSpec) -> object:
    """The group as data, with Go's nil and empty lists alike (protobuf cannot tell them apart)."""

    def walk(value: object) -> object:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value] or None
        return value

    return walk(group.model_dump())


def test_the_corpus_has_groups_to_convert() -> None:
    assert len(GROUPS) > 300


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.name)
def test_group_specs_round_trip_through_protobuf(group: GroupSpec) -> None:
    wire = group_spec_pb(group).SerializeToString()
    assert plain(group_spec_from_pb(type(group_spec_pb(group)).FromString(wire))) == plain(group)


def test_group_specs_read_back_from_lcd_json() -> None:
    for group in GROUPS:
        message = group_spec_pb(group)
        doc = MessageToDict(
            message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        # the LCD's custom types: LegacyDec as decimal text, ResourceValue.val as integer text
        for unit, unit_pb in zip(doc["resources"], message.resources, strict=True):
            unit["price"]["amount"] = str(
                group.resources[0].price.amount.__class__.from_raw(int(unit_pb.price.amount))
            )
            resource = unit["resource"]
            for part in ("cpu", "memory", "gpu"):
                if part in resource:
                    field = "units" if part != "memory" else "quantity"
                    resource[part][field]["val"] = getattr(
                        getattr(unit_pb.resource, part), field
                    ).val.decode()
            for volume, volume_pb in zip(
                resource.get("storage", []), unit_pb.resource.storage, strict=True
            ):
                volume["quantity"]["val"] = volume_pb.quantity.val.decode()
        assert plain(group_spec_from_json(doc)) == plain(group)
