from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from akchainsvc.testing import RelayProcess
from akdevnet.testing import TEST_PASSPHRASE, DevnetClients, DevnetProcess
from aktypes.sdl import SDL, parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


@pytest.fixture
def corpus() -> Callable[[str], SDL]:
    def load(name: str) -> SDL:
        return parse_sdl((CORPUS / name).read_text())

    return load


@pytest.fixture
def relay_process(devnet: DevnetProcess, redis_url: str, tmp_path: Path) -> Iterator[RelayProcess]:
    relay = RelayProcess(
        redis_url=redis_url,
        node=devnet.rpc_url,
        api=devnet.lcd_url,
        key_file=devnet.key_path("provider"),
        passphrase=TEST_PASSPHRASE,
        log_path=tmp_path / "relay.log",
    )
    try:
        yield relay
    finally:
        relay.stop()


@pytest.fixture
def relay(relay_process: RelayProcess) -> RelayProcess:
    relay_process.start()
    return relay_process


@pytest.fixture
async def chain(devnet: DevnetProcess) -> AsyncIterator[DevnetClients]:
    async with devnet.clients() as clients:
        yield clients
