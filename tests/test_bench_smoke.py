"""The benchmarks still run as the README documents (tiny sizes; not a timing test)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_bus_benchmark_runs_and_prints_its_ratio_line() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bus.py"), "--events", "400"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert re.fullmatch(r"ratio akbus/raw_batched=\d+\.\d\d akbus/faststream=\d+\.\d\d", lines[-1])
    systems = {line.split("  ")[0].strip() for line in lines[2:-1]}
    assert systems == {"raw loop", "raw batched", "akbus", "FastStream"}
    assert sum(1 for line in lines if line.startswith("akbus ")) == 2  # 1 and 4 consumers
