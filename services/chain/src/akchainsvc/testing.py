"""A real chain relay process for tests: ``python -m akchainsvc`` against a devnet and Redis."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from akbus import Bus
from akservice.testing import RuntimeProcess
from aktypes.events import Envelope, envelope_from_fields
from aktypes.events.streams import CHAIN_EVENTS, CHAIN_RESULTS


def passphrase_file(folder: Path, passphrase: str) -> Path:
    """``passphrase`` in a file of ``folder`` only its owner reads: the relay's key is
    unlocked from it, so the passphrase is in no process's environment."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "relay.passphrase"
    path.unlink(missing_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        file.write(passphrase)
    return path


class RelayProcess(RuntimeProcess):
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
        env = {
            "AP_NODE": node,
            "AP_API": api,
            "AP_KEY_FILE": str(key_file),
            "AP_KEY_PASSPHRASE_FILE": str(passphrase_file(log_path.parent, passphrase)),
            "AP_EVENTS_START_HEIGHT": "1",
            "AP_EVENTS_POLL_INTERVAL": "200ms",
            "AP_TX_POLL_INTERVAL": "50ms",
            "AP_TX_BROADCAST_TIMEOUT": "3s",
            "AP_STATUS_INTERVAL": "500ms",
            **(extra_env or {}),
        }
        super().__init__(
            "akchainsvc", "chain", redis_url=redis_url, log_path=log_path, env=env, name="relay"
        )


# -- reading the relay's streams ------------------------------------------------------------


async def entries(bus: Bus, stream: str) -> list[Envelope[Any]]:
    return [envelope_from_fields(e.fields) for e in await bus.backend.entries(stream)]


async def chain_events(bus: Bus) -> list[Any]:
    return [e.payload for e in await entries(bus, CHAIN_EVENTS)]


async def results(bus: Bus) -> list[Any]:
    return [e.payload for e in await entries(bus, CHAIN_RESULTS)]
