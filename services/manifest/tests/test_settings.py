"""``python -m akmanifest``: its settings, as ``--help`` lists them and as they fail."""

from __future__ import annotations

import os
import subprocess
import sys

from akbidengine.service import SPEC as BIDENGINE
from akchainsvc.service import SPEC as CHAIN
from akmanifest.service import SPEC
from akmanifest.settings import ManifestSettings
from akservice.settings import conflicts, settings_of


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AP_", "REDIS_"))}
    return subprocess.run(
        [sys.executable, "-m", "akmanifest", *args],
        capture_output=True, text=True, timeout=30, env={**clean, **env}, check=False,
    )  # fmt: skip


def test_help_lists_every_setting_with_its_default() -> None:
    shown = run("--help")
    assert shown.returncode == 0
    for name, default in [
        ("AP_API", "http://localhost:1317"),
        ("AP_PROVIDER_ADDRESS", '""'),
        ("AP_MANIFEST_TIMEOUT", "5m"),
        ("AP_MANIFEST_CACHE_AGE", "5s"),
        ("AP_MANIFEST_HOSTNAME_CHECK_TIMEOUT", "10s"),
        ("AP_MANIFEST_STATUS_INTERVAL", "5s"),
        ("AP_MANIFEST_HEALTH_LISTEN", "0.0.0.0:8094"),
    ]:
        line = next(x for x in shown.stdout.splitlines() if x.split()[:1] == [name])
        assert line.split()[1] == default, line


def test_a_bad_setting_is_named_without_a_traceback() -> None:
    failed = run(AP_MANIFEST_TIMEOUT="soon", AP_MANIFEST_CACHE_AGE="-1s")
    assert failed.returncode == 2
    assert "AP_MANIFEST_TIMEOUT='soon'" in failed.stderr
    assert "AP_MANIFEST_CACHE_AGE" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_shared_names_mean_what_they_mean_for_the_other_services() -> None:
    groups = [(spec.name, spec.settings) for spec in (CHAIN, BIDENGINE, SPEC)]
    assert conflicts(groups) == []
    names = {s.name for s in settings_of(ManifestSettings)}
    assert {"AP_API", "AP_PROVIDER_ADDRESS"} <= names
