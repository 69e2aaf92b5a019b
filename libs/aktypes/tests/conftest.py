"""Shared fixtures for the aktypes tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from aktypes.testing import address

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """Akash's public SDL templates (see data/README.md)."""
    return DATA / "awesome-akash"


@pytest.fixture
def owner() -> str:
    return address(1)


@pytest.fixture
def provider() -> str:
    return address(2)
