"""The chaos run, short (``bench/chaos.py`` audits the chain, kubesim and Redis at the end;
the full run is ten minutes and a hundred kills):

- two replicas of every service, three simulated tenants, fifteen random SIGKILLs
  (services, relay, Redis) over a minute and a half: nothing lost, nothing done twice;
- the suite on Sentinel with its Redis primary SIGKILLed under load (``--failovers 1``, no
  other kill) while tenants deploy, lease and send manifests: every service follows the new
  primary without a restart (none exits), the relay, the bid engine and the cluster make
  progress again (a new lease won and its manifest accepted after the kill), and the audit
  finds nothing lost and nothing done twice.
"""

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
FAILOVERS = re.compile(r"chaos failovers=(\d+) unrecovered=(\d+) write_s=max:([\d.]+),")


def chaos(*args: str) -> tuple[subprocess.CompletedProcess[str], str, list[int]]:
    """``bench/chaos.py`` run with ``args``: the run, its whole output, and the numbers of
    its last line (kills, then the five problems it audits)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "chaos.py"), *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    found = LAST_LINE.fullmatch(lines[-1]) if lines else None
    assert found, output[-5000:]
    return result, output, list(map(int, found.groups()))


@pytest.mark.timeout(900)  # about two and a half minutes: the run, then the audit
def test_a_short_chaos_run_loses_nothing_and_does_nothing_twice() -> None:
    result, output, (kills, *problems) = chaos(
        "--minutes", "1.5", "--kills", "15", "--seed", "7", "--settle", "120"
    )  # fmt: skip
    lines = result.stdout.strip().splitlines()
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


@pytest.mark.timeout(600)
def test_the_suite_rides_out_a_failover_of_its_redis_primary() -> None:
    result, output, numbers = chaos(
        "--minutes", "0.3", "--kills", "0", "--failovers", "1", "--replicas", "1",
        "--tenants", "2", "--seed", "5", "--settle", "60",
    )  # fmt: skip
    assert numbers == [0] * 6, output[-5000:]
    failover = FAILOVERS.search(result.stdout)
    assert failover, output[-5000:]
    count, unrecovered, write_s = failover.groups()
    assert (int(count), int(unrecovered)) == (1, 0), output[-5000:]  # writes, relay, txs, leases
    assert float(write_s) < 15  # down-after 1 s, then the Sentinels' election
    assert "exits on their own: {}" in output  # every service rode it out, none restarted
    assert result.returncode == 0, output[-5000:]
