"""The chaos run, short: two replicas of every service, three simulated tenants, fifteen
random SIGKILLs (services, relay, Redis) over a minute and a half; nothing lost, nothing
done twice (``bench/chaos.py`` audits the chain, kubesim and Redis at the end; the full run
is ten minutes and a hundred kills)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
LAST_LINE = re.compile(
    r"chaos kills=(\d+) lost_leases=(\d+) duplicate_bids=(\d+) leaked_reservations=(\d+) "
    r"double_withdrawals=(\d+) undeployed_manifests=(\d+)"
)


@pytest.mark.timeout(900)  # about two and a half minutes: the run, then the audit
def test_a_short_chaos_run_loses_nothing_and_does_nothing_twice() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "chaos.py"),
         "--minutes", "1.5", "--kills", "15", "--seed", "7", "--settle", "120"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    found = LAST_LINE.fullmatch(lines[-1]) if lines else None
    assert found, output[-5000:]
    kills, *problems = map(int, found.groups())
    assert kills == 15
    assert problems == [0, 0, 0, 0, 0], output[-5000:]
    assert "chaos closed_leases=" in lines[-2] and lines[-2].endswith("not_torn_down=0")
    assert int(lines[-2].split()[1].split("=")[1]) > 0  # tenants did close leases
    tenants = re.search(
        r"tenants: (\d+) deployments, (\d+) manifests accepted, (\d+) updates", output
    )
    assert tenants, output[-5000:]
    assert min(map(int, tenants.groups())) > 0  # deployments, manifests and updates all ran
    assert result.returncode == 0, output[-5000:]
