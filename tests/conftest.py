"""Fixtures of the cross-service tests: the provider's processes, the chain, the bus."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from akcli.akashjs import AkashJS
from akcli.akashjs import install as install_akashjs
from akcli.testing import Provider
from akdevnet.testing import DevnetClients, DevnetProcess
from aktypes.sdl import SDL, parse_sdl

CORPUS = Path(__file__).parents[1] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


@pytest.fixture
def corpus() -> Callable[[str], SDL]:
    def load(name: str) -> SDL:
        return parse_sdl((CORPUS / name).read_text())

    return load


@pytest.fixture
def provider(devnet: DevnetProcess, redis_url: str, tmp_path: Path) -> Iterator[Provider]:
    made = Provider(devnet, redis_url, tmp_path)
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture
async def chain(devnet: DevnetProcess) -> AsyncIterator[DevnetClients]:
    async with devnet.clients() as clients:
        yield clients


@pytest.fixture(scope="session")
def akashjs() -> AkashJS:
    return install_akashjs()
