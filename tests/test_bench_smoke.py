"""The benchmarks still run as the README documents (tiny sizes; not a timing test)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def bench(name: str, *args: str, timeout: int) -> list[str]:
    """The lines ``bench/<name>.py args`` printed; it must have ended well."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().splitlines()


def test_bus_benchmark_runs_and_prints_its_ratio_line() -> None:
    lines = bench("bus", "--events", "400", timeout=300)
    assert re.fullmatch(r"ratio akbus/raw_batched=\d+\.\d\d akbus/faststream=\d+\.\d\d", lines[-1])
    systems = {line.split("  ")[0].strip() for line in lines[2:-1]}
    assert systems == {"raw loop", "raw batched", "akbus", "FastStream"}
    assert sum(1 for line in lines if line.startswith("akbus ")) == 2  # 1 and 4 consumers


def test_bus_benchmark_compares_durable_commits_on_sentinel() -> None:
    lines = bench("bus", "--durable", "--events", "100", timeout=300)
    assert re.fullmatch(r"ratio durable/plain apply_if=\d+\.\d\d transact=\d+\.\d\d", lines[-1])
    systems = {line.split("  ")[0].strip() for line in lines[2:-1]}
    assert systems == {"apply_if plain", "apply_if WAIT", "transact plain", "transact WAIT"}


def test_bidengine_benchmark_bids_once_on_every_order_and_prints_its_line() -> None:
    lines = bench("bidengine", "--rate", "50", "--seconds", "1", timeout=120)
    number = r"\d+\.\d\d"
    assert re.fullmatch(
        rf"bidengine p50_ms={number} p99_ms={number} orders_per_s={number} "
        rf"bus_hop_p99_ms={number}",
        lines[-1],
    )
    assert "CreateBid per order: 50/50 exactly one, 0 none, 0 more than one" in lines
    rows = [re.match(r"(bus hop|bidengine) +50 +(\d+) ", line) for line in lines]
    assert {(m[1], m[2]) for m in rows if m} == {("bus hop", "50"), ("bidengine", "50")}


def test_recovery_benchmark_finds_every_lease_unchanged_and_prints_its_line() -> None:
    lines = bench("recovery", "--leases", "30", "--restarts", "1", timeout=300)
    last = re.fullmatch(r"recovery leases=30 seconds=(\d+\.\d\d) max_rss_mb=(\d+)", lines[-1])
    assert last, lines[-1]
    assert 0 < float(last[1]) < 120
    assert 20 < int(last[2]) < 1000
    recovery = next(line for line in lines if line.startswith("recovery of 30 leases: "))
    assert re.search(r"; 30 unchanged, 0 reapplied, 0 queued, 0 adopted, 0 orphans;", recovery)
    assert re.search(r"; 0 Kubernetes writes meanwhile; load average \d+\.\d\d at the", recovery)
    services = ("cluster", "bidengine", "manifest", "balance", "gateway")
    rss: dict[str, int] = {}
    for service in services:
        found = [re.fullmatch(rf"rss {service}: (\d+) MB \(peak (\d+) MB\)", x) for x in lines]
        row = next((m for m in found if m), None)
        assert row, f"no rss line for {service}"
        rss[service] = int(row[1])
    most = re.fullmatch(r"max rss: (\w+), (\d+) MB \(of the 5 provider services\)", lines[-2])
    assert most, lines[-2]
    assert rss[most[1]] == int(most[2]) == int(last[2]) == max(rss.values())
    shown = ("manifest", "deployments=30"), ("balance", "leases=30"), ("gateway", "leases=30, ")
    for service, what in shown:  # each started on the seeded state, and holds it
        assert any(x.startswith(f"{service} ready in ") and what in x for x in lines), service
