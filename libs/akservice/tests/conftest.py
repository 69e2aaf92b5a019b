from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from akservice.testing import ServiceProcess, free_port, http_ready

TOY = Path(__file__).parent / "toy.py"

ToyFactory = Callable[..., ServiceProcess]


def toy_env(redis_url: str, port: int, **env: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AP_", "AKBUS_", "REDIS_"))}
    return {
        **base,
        "REDIS_URL": redis_url,
        "AP_TOY_HEALTH_LISTEN": f"127.0.0.1:{port}",
        "AP_LOG_FORMAT": "json",
        "AKBUS_DRAIN_TIMEOUT_S": "2",
        "AKBUS_BLOCK_MS": "100",
        **env,
    }


@pytest.fixture
def toy(redis_url: str, tmp_path: Path) -> Iterator[ToyFactory]:
    started: list[ServiceProcess] = []

    def make(*, ready: str = "/readyz", **env: str) -> ServiceProcess:
        port = free_port()
        process = ServiceProcess(
            [sys.executable, str(TOY)],
            log_path=tmp_path / f"toy-{len(started)}.log",
            ready=http_ready(f"http://127.0.0.1:{port}{ready}"),
            env=toy_env(redis_url, port, **env),  # AP_TOY_HEALTH_LISTEN names the port
            name="toy",
        )
        started.append(process)
        return process

    yield make
    for process in started:
        process.stop()
