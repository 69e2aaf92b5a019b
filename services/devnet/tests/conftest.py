from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from akdevnet.testing import DevnetClients, DevnetProcess
from aktypes.sdl import SDL, parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


@pytest.fixture
def corpus() -> Callable[[str], SDL]:
    def load(name: str) -> SDL:
        return parse_sdl((CORPUS / name).read_text())

    return load


@pytest.fixture
async def chain(devnet: DevnetProcess) -> AsyncIterator[DevnetClients]:
    async with devnet.clients() as clients:
        yield clients
