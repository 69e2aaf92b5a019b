"""The test suite's tiers, given by each test's folder, and the unit tier's one rule.

- ``unit``: ``<package>/tests/unit/`` and ``tests/unit/``. Pure code: no socket, no child
  process (both refused, so a test that needs one fails here and belongs a tier up).
  ``scripts/check --fast`` runs this tier alone.
- ``service``: the rest of a package's ``tests/`` folder; one service, library or simulator
  with a real Redis, kubesim or devnet.
- ``suite``: the root ``tests/`` folder; several of the provider's processes together.

Tests run slowest tier first, so that parallel workers (``pytest -n``) end together rather
than one of them finishing the long end-to-end files alone.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import pytest

ROOT = Path(__file__).parent
TIERS = ("suite", "service", "unit")  # the order they run in


def tier_of(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    if "unit" in parts[:-1]:
        return "unit"
    return "suite" if parts[0] == "tests" else "service"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(tier_of(item.path))
    items.sort(key=lambda item: TIERS.index(tier_of(item.path)))  # stable: files stay whole


@pytest.fixture(autouse=True)
def _unit_tests_do_no_io(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("unit") is None:
        return

    def refused(*_: Any, **__: Any) -> NoReturn:
        raise AssertionError(
            "a unit test opens no socket and starts no process: "
            "this test belongs in its package's tests/ folder (the service tier)"
        )

    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, refused)
    monkeypatch.setattr(subprocess.Popen, "__init__", refused)
