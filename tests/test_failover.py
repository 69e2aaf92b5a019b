"""The suite on Sentinel with its Redis primary SIGKILLed under load: ``bench/chaos.py
--failovers 1`` (no other kill) while tenants deploy, lease and send manifests. Every
service follows the new primary without a restart (none exits), the relay, the bid engine
and the cluster make progress again (a new lease won and its manifest accepted after the
kill), and the chaos run's audit finds nothing lost and nothing done twice."""

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


@pytest.mark.timeout(600)
def test_the_suite_rides_out_a_failover_of_its_redis_primary() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "chaos.py"),
         "--minutes", "0.3", "--kills", "0", "--failovers", "1", "--replicas", "1",
         "--tenants", "2", "--seed", "5", "--settle", "60"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    found = LAST_LINE.fullmatch(lines[-1]) if lines else None
    assert found, output[-5000:]
    assert list(map(int, found.groups())) == [0] * 6, output[-5000:]
    failover = FAILOVERS.search(result.stdout)
    assert failover, output[-5000:]
    count, unrecovered, write_s = failover.groups()
    assert (int(count), int(unrecovered)) == (1, 0), output[-5000:]  # writes, relay, txs, leases
    assert float(write_s) < 15  # down-after 1 s, then the Sentinels' election
    assert "exits on their own: {}" in output  # every service rode it out, none restarted
    assert result.returncode == 0, output[-5000:]
