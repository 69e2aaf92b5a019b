"""The ``akash-provider`` command, run as a real process and in-process with typer's runner."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from akbus import Bus, RedisSettings
from akcli.main import app
from akservice.testing import eventually_sync
from aktypes.events.streams import BIDENGINE_EVENTS

CORPUS = Path(__file__).parents[2] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
runner = CliRunner()

GOOD = """\
version: "2.0"
services:
  web:
    image: nginx
    expose:
      - port: 80
        to:
          - global: true
profiles:
  compute:
    web:
      resources:
        cpu: {units: 1}
        memory: {size: 512Mi}
        storage: {size: 1Gi}
  placement:
    dcloud:
      attributes: {host: akash}
      pricing:
        web: {denom: uakt, amount: 1000}
deployment:
  web:
    dcloud: {profile: web, count: 2}
"""


def command(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("akash-provider")
    assert exe, "the akash-provider command is not installed"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, check=False)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_validate_the_whole_corpus() -> None:
    files = sorted(str(p) for p in CORPUS.glob("*.yaml"))
    result = command("sdl", "validate", "--quiet", *files)
    assert result.returncode == 1
    assert "334 valid, 8 invalid (342 files)" in result.stdout
    teamspeak = [line for line in result.stdout.splitlines() if "teamspeak.yaml" in line]
    assert teamspeak and "teamspeak.yaml:2:8:" in teamspeak[0] and "not valid YAML" in teamspeak[0]


def test_valid_files_exit_zero() -> None:
    files = [str(CORPUS / name) for name in ("minecraft.yaml", "Grav.yaml", "Llama-3-8B.yaml")]
    result = command("sdl", "validate", *files)
    assert result.returncode == 0, result.stdout
    assert "3 valid, 0 invalid" in result.stdout


BROKEN = {
    "unknown-key.yaml": (GOOD + "extra: 1\n", "extra: unknown key 'extra'"),
    "count-zero.yaml": (GOOD.replace("count: 2", "count: 0"), "deployment.web.dcloud.count: count 0"),
    "no-mount.yaml": (
        GOOD.replace("storage: {size: 1Gi}", "storage: [{size: 1Gi}, {name: data, size: 1Gi, attributes: {persistent: true}}]"),
        "profiles.compute.web.resources.storage[1]: persistent volume 'data' needs a mount",
    ),
    "ram-persistent.yaml": (
        GOOD.replace("storage: {size: 1Gi}", "storage: [{size: 1Gi}, {name: shm, size: 1Gi, attributes: {persistent: true, class: ram}}]"),
        "storage[1].attributes.persistent: storage class 'ram' cannot be persistent",
    ),
    "unused-ip.yaml": (GOOD + "endpoints:\n  spare: {kind: ip}\n", "endpoints.spare: endpoint 'spare' is declared but never used"),
    "gpu-no-attributes.yaml": (
        GOOD.replace("storage: {size: 1Gi}", "storage: {size: 1Gi}\n        gpu: {units: 1}"),
        "resources.gpu.attributes: GPU attributes (vendor and model) are required",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_sdls_are_rejected_with_file_path_and_reason(tmp_path: Path, name: str) -> None:
    text, expected = BROKEN[name]
    path = write(tmp_path, name, text)
    result = runner.invoke(app, ["sdl", "validate", str(path)])
    assert result.exit_code == 1
    error_lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert any(str(path) in line and expected in line for line in error_lines), result.output


def test_warnings_pass_unless_strict(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cmd.yaml",
        GOOD.replace("    image: nginx\n", "    image: nginx\n    cmd: [sh]\n"),
    )
    relaxed = runner.invoke(app, ["sdl", "validate", str(path)])
    assert relaxed.exit_code == 0
    assert "warning:" in relaxed.output and "services.web.cmd" in relaxed.output
    strict = runner.invoke(app, ["sdl", "validate", "--strict", str(path)])
    assert strict.exit_code == 1 and "error:" in strict.output


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sdl", "validate", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 1
    assert "cannot read the file" in result.output


def test_manifest_prints_json_and_version(tmp_path: Path) -> None:
    path = write(tmp_path, "good.yaml", GOOD)
    result = command("sdl", "manifest", str(path))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    canonical = json.dumps(document["manifest"], sort_keys=True, separators=(",", ":"))
    assert document["version"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert document["manifest"][0]["services"][0]["count"] == 2
    body = command("sdl", "manifest", "--body", str(path))
    assert json.loads(body.stdout) == document["manifest"]


def test_manifest_of_a_broken_file_fails_cleanly(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", GOOD.replace("count: 2", "count: 0"))
    result = command("sdl", "manifest", str(path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "deployment.web.dcloud.count" in result.stderr
    assert "Traceback" not in result.stderr


def test_groups_table_and_json(tmp_path: Path) -> None:
    path = write(tmp_path, "good.yaml", GOOD)
    table = runner.invoke(app, ["sdl", "groups", str(path)])
    assert table.exit_code == 0
    assert "dcloud" in table.output and "max price 2000uakt per block" in table.output
    assert "requires host=akash" in table.output
    as_json = runner.invoke(app, ["sdl", "groups", "--json", str(path)])
    (group,) = json.loads(as_json.output)
    assert group["max_price"] == {"denom": "uakt", "amount": "2000.000000000000000000"}
    assert group["resources"][0]["resource"]["cpu"] == {"units": {"val": "1000"}}


def test_run_starts_the_suite_which_bids_and_stops_on_ctrl_c(
    redis_url: str, tmp_path: Path
) -> None:
    """`akash-provider run` as a newcomer runs it: bids appear on the chain, Ctrl-C stops all."""
    env = {**os.environ, "REDIS_URL": redis_url}
    tmp_path.chmod(0o755)  # as an earlier run, or a shared folder, might have left it
    command = [
        sys.executable,
        "-m",
        "akcli",
        "run",
        "--state",
        str(tmp_path),
        "--block-time",
        "200ms",
    ]
    suite = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        bids = eventually_sync(
            lambda: _bids_placed(redis_url), timeout_s=90, what="a BidPlaced from the running suite"
        )
        assert bids >= 1
    finally:
        suite.send_signal(signal.SIGINT)
        output, _ = suite.communicate(timeout=60)
    assert suite.returncode == 0, output
    assert "The provider suite is running" in output
    assert "XRANGE akash.provider.bidengine.events" in output
    assert output.rstrip().endswith("stopping…"), output[-2000:]
    assert "/v1/inventory" in output and "/v1/pool" in output
    assert '"uris": ["<26 characters>.ingress.localhost"]' in output  # generated hostnames
    for log in ("bidengine", "cluster-0", "relay", "inventory-operator", "hostname-operator"):
        assert '"stopped"' in (tmp_path / "logs" / f"{log}.log").read_text()
    cluster = (tmp_path / "logs" / "cluster-0.log").read_text()
    assert "from the inventory operator" in cluster  # the cluster's inventory is the operator's
    # the state folder and everything the run wrote in it are the provider's alone
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(written) > 10
    assert [path for path in written if path.stat().st_mode & 0o077] == []


def _bids_placed(redis_url: str) -> int:
    async def count() -> int:
        bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
        try:
            entries = await bus.backend.entries(BIDENGINE_EVENTS)
        finally:
            await bus.close()
        return sum(1 for e in entries if e.fields.get("type") == "bid.placed")

    return asyncio.run(count())


def test_module_entry_point() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "akcli", "sdl", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    assert "validate" in result.stdout
