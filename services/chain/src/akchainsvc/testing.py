"""A real chain relay process for tests: ``python -m akchainsvc`` against a devnet and Redis."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from akbus import Bus
from akservice.testing import ServiceProcess, free_port, http_ready, http_status
from aktypes.events import Envelope, envelope_from_fields
from aktypes.events.streams import CHAIN_EVENTS, CHAIN_RESULTS


class RelayProcess(ServiceProcess):
    """The relay in a subprocess, with fast timings; ``kill()`` is SIGKILL."""

    def __init__(
        self,
        *,
        redis_url: str,
        node: str,
        api: str,
        key_file: Path,
        passphrase: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.health_port = free_port()
        env = {
            "REDIS_URL": redis_url,
            "AP_NODE": node,
            "AP_API": api,
            "AP_KEY_FILE": str(key_file),
            "AP_KEY_PASSPHRASE": passphrase,
            "AP_EVENTS_START_HEIGHT": "1",
            "AP_EVENTS_POLL_INTERVAL": "200ms",
            "AP_TX_POLL_INTERVAL": "50ms",
            "AP_TX_BROADCAST_TIMEOUT": "3s",
            "AP_STATUS_INTERVAL": "500ms",
            "AP_CHAIN_HEALTH_LISTEN": f"127.0.0.1:{self.health_port}",
            "AP_LOG_FORMAT": "json",
            "AKBUS_CLAIM_IDLE_S": "1",
            "AKBUS_CLAIM_INTERVAL_S": "0.2",
            "AKBUS_RETRY_INITIAL_S": "0.05",
            "AKBUS_RETRY_MAX_S": "0.5",
            **(extra_env or {}),
        }
        super().__init__(
            [sys.executable, "-m", "akchainsvc"],
            log_path=log_path,
            ready=http_ready(f"{self.health_url}/readyz"),
            env={**_inherited(), **env},
            name="relay",
        )

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.health_port}"

    def readiness(self) -> tuple[int, Any]:
        return http_status(f"{self.health_url}/readyz")


def _inherited() -> dict[str, str]:
    """The test's environment without settings that would leak into the relay's."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("AP_", "AKBUS_", "REDIS_"))}


# -- reading the relay's streams ------------------------------------------------------------


async def entries(bus: Bus, stream: str) -> list[Envelope[Any]]:
    return [envelope_from_fields(e.fields) for e in await bus.backend.entries(stream)]


async def chain_events(bus: Bus) -> list[Any]:
    return [e.payload for e in await entries(bus, CHAIN_EVENTS)]


async def results(bus: Bus) -> list[Any]:
    return [e.payload for e in await entries(bus, CHAIN_RESULTS)]
