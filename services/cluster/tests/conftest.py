from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aktypes.groupspec import GroupSpec
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


@pytest.fixture
def corpus_group() -> Callable[[str], GroupSpec]:
    def load(name: str) -> GroupSpec:
        return parse_sdl((CORPUS / name).read_text()).groups[0]

    return load
