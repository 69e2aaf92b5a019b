from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from akbus import Bus, RedisSettings
from akbus.testing import FAST_SETTINGS
from aktypes.groupspec import GroupSpec
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


@pytest.fixture
def corpus_group() -> Callable[[str], GroupSpec]:
    def load(name: str) -> GroupSpec:
        return parse_sdl((CORPUS / name).read_text()).groups[0]

    return load


@pytest.fixture
async def bus(redis_url: str) -> AsyncIterator[Bus]:
    """A bus that retries quickly (the tests stop Redis and the node under it)."""
    made = Bus.connect(RedisSettings(url=redis_url), producer="test", settings=FAST_SETTINGS)
    try:
        yield made
    finally:
        await made.close()
