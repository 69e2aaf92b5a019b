"""Fixtures of the manifest service's tests: corpus SDLs, as they are and reshaped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from aktypes.sdl import SDL, parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


def corpus_text(name: str) -> str:
    return (CORPUS / name).read_text()


def two_placements(name: str, second: str = "west") -> str:
    """A corpus SDL with every service deployed a second time under ``second``: two groups,
    so two orders and two leases."""
    data = yaml.safe_load(corpus_text(name))
    placements = data["profiles"]["placement"]
    first = next(iter(placements))
    placements[second] = placements[first]
    for service in data["deployment"].values():
        service[second] = dict(service[first])
    return yaml.safe_dump(data)


@pytest.fixture
def corpus() -> Callable[[str], SDL]:
    def load(name: str) -> SDL:
        return parse_sdl(corpus_text(name))

    return load


@pytest.fixture
def two_groups() -> Callable[[str], SDL]:
    def load(name: str) -> SDL:
        return parse_sdl(two_placements(name))

    return load
