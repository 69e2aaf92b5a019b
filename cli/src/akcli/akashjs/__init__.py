"""Akash's own client code for the tests: ``@akashnetwork/chain-sdk`` and cosmjs from the npm
registry (versions pinned by ``package-lock.json`` beside this file), installed once into
``.cache/akashjs/<lock digest>`` (under the working directory, or ``AKASHJS_CACHE``) and run
with the machine's Node.

A script in this folder is copied beside the installed ``node_modules`` (ES modules resolve
packages from the script's own location), given one JSON document on standard input, and
answers one JSON document on standard output; what it writes to standard error is shown
when it fails.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent


class NodeScriptError(AssertionError):
    """A client script failed; its message holds the script's standard error."""


class AkashJS:
    """The installed client packages and a way to run this folder's scripts with them."""

    def __init__(self, prefix: Path, node: str) -> None:
        self.prefix = prefix
        self.node = node

    def run(self, script: str, payload: Any = None, *, timeout: float = 90.0) -> Any:
        shutil.copy2(HERE / script, self.prefix / script)
        done = subprocess.run(  # noqa: S603 - our own argument list
            [self.node, str(self.prefix / script)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.prefix,
            env={**os.environ, "NODE_NO_WARNINGS": "1"},
            check=False,
        )
        if done.returncode != 0:
            raise NodeScriptError(
                f"{script} exited {done.returncode}:\n{done.stderr[-6000:]}{done.stdout[-2000:]}"
            )
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        if not lines:
            raise NodeScriptError(f"{script} printed nothing:\n{done.stderr[-6000:]}")
        return json.loads(lines[-1])


def install() -> AkashJS:
    """The client packages, installed when this lock file's folder lacks them; skipped where
    Node is absent, except in CI (``CI`` set), where its absence fails the test."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI"):
            pytest.fail("node and npm are needed for the Akash client tests (CI must have them)")
        pytest.skip("node and npm are not installed")
    lock = (HERE / "package-lock.json").read_bytes()
    cache = Path(os.environ.get("AKASHJS_CACHE") or Path.cwd() / ".cache" / "akashjs")
    prefix = cache / hashlib.sha256(lock).hexdigest()[:16]
    marker = prefix / "node_modules" / ".installed"
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock_file:  # parallel test workers install once
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        if not marker.exists():
            prefix.mkdir(parents=True, exist_ok=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy2(HERE / name, prefix / name)
            done = subprocess.run(  # noqa: S603 - our own argument list
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                cwd=prefix,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0:
                pytest.fail(f"npm ci of the Akash client packages failed:\n{done.stderr[-4000:]}")
            marker.write_text("ok\n")
    return AkashJS(prefix, node)
