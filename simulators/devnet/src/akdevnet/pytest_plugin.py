"""pytest fixture ``devnet``: a real devnet process with fast blocks, stopped after the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from akdevnet.testing import DevnetProcess


@pytest.fixture
def devnet(tmp_path: Path) -> Iterator[DevnetProcess]:
    with DevnetProcess(tmp_path / "devnet") as process:
        yield process
