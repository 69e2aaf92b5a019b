"""What ``GET /version`` says about this build, in the shape of Akash's ``version.Info``
(``name``, ``server_name``, ``version``, ``commit``, ``build_tags``, ``go``, ``build_deps``,
``cosmos_sdk_version``), read once per process.

The values are this build's own: the installed ``akgateway`` version; the commit from the
package's install record (a VCS install) or from git when it runs from a checkout, else
empty; the Python runtime in ``go``'s place (``CPython 3.12.3 linux/x86_64``); every
installed distribution as a build dependency (``Path``, ``Version``, ``Sum``, ``Replace``,
Go's module fields); no Cosmos SDK inside, so ``cosmos_sdk_version`` is empty.
"""

from __future__ import annotations

import functools
import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from akservice.runtime import version_of

NAME = "akash-provider"


def _commit() -> str:
    try:
        direct = metadata.distribution("akgateway").read_text("direct_url.json")
        commit = json.loads(direct or "{}").get("vcs_info", {}).get("commit_id", "")
        if commit:
            return str(commit)
    except (metadata.PackageNotFoundError, ValueError):
        pass
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],  # noqa: S607 - git from PATH, when there is one
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _dependencies() -> list[dict[str, Any]]:
    found = {
        (d.metadata["Name"] or "", d.version)
        for d in metadata.distributions()
        if d.metadata["Name"]
    }
    return [
        {"Path": name, "Version": version, "Sum": "", "Replace": None}
        for name, version in sorted(found, key=lambda f: (f[0].lower(), f[1]))
    ]


@functools.cache
def build_info() -> dict[str, Any]:
    return {
        "name": NAME,
        "server_name": NAME,
        "version": version_of("akgateway"),
        "commit": _commit(),
        "build_tags": "",
        "go": f"{platform.python_implementation()} {platform.python_version()} "
        f"{sys.platform}/{platform.machine()}",
        "build_deps": _dependencies(),
        "cosmos_sdk_version": "",
    }
