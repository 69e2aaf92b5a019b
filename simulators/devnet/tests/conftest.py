from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from akdevnet.testing import TEST_PASSPHRASE, DevnetClients, DevnetProcess
from aktypes.sdl import SDL, parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"

Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def corpus() -> Callable[[str], SDL]:
    def load(name: str) -> SDL:
        return parse_sdl((CORPUS / name).read_text())

    return load


@pytest.fixture
async def chain(devnet: DevnetProcess) -> AsyncIterator[DevnetClients]:
    async with devnet.clients() as clients:
        yield clients


@pytest.fixture
def cli() -> Cli:
    """``python -m akdevnet ARGS`` in a subprocess, with no ``AKDEVNET_*`` from the caller."""

    def run(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AKDEVNET_")}
        env["AKDEVNET_KEY_PASSPHRASE"] = TEST_PASSPHRASE
        return subprocess.run(
            [sys.executable, "-m", "akdevnet", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )

    return run


@pytest.fixture
def error_line() -> Callable[[subprocess.CompletedProcess[str]], str]:
    """The single stderr line of a failed command: no traceback, no panic, nothing else."""

    def check(result: subprocess.CompletedProcess[str]) -> str:
        assert result.returncode != 0, result.stdout
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert "panic" not in result.stderr
        return lines[0]

    return check
