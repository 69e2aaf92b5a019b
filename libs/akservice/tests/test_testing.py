"""The test helpers' care with secrets: what a child process inherits, how its log is
created."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from akservice.testing import ServiceProcess, child_environment


def test_a_child_inherits_no_setting_and_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AP_KEY_PASSPHRASE", "AKDEVNET_KEY_PASSPHRASE", "REDIS_URL", "GITHUB_TOKEN"):
        monkeypatch.setenv(name, "hidden")
    monkeypatch.setenv("KEYBOARD_LAYOUT", "us")
    given = child_environment(AKDEVNET_KEY_PASSPHRASE="given")
    assert "hidden" not in given.values()
    assert given["AKDEVNET_KEY_PASSPHRASE"] == "given"  # noqa: S105 - a test's
    assert given["KEYBOARD_LAYOUT"] == "us"
    assert given["PATH"] == os.environ["PATH"]


def test_a_childs_log_is_its_owners_alone(tmp_path: Path) -> None:
    process = ServiceProcess(
        [sys.executable, "-c", "print('hello')"],
        log_path=tmp_path / "child.log",
        ready=lambda: True,
    )
    process.start()
    assert process.process is not None
    process.process.wait()
    assert process.log_path.stat().st_mode & 0o777 == 0o600
    assert process.log() == "hello\n"
