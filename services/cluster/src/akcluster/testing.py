"""The cluster service as a subprocess for tests: ``python -m akcluster`` on a free port."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from akservice.testing import ServiceProcess, free_port, http_ready, http_status


class ClusterProcess(ServiceProcess):
    """One cluster replica; ``instance`` tells replicas apart, ``kill()`` is SIGKILL."""

    def __init__(
        self,
        *,
        redis_url: str,
        log_path: Path,
        inventory_file: Path | None = None,
        instance: str = "0",
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.health_port = free_port()
        env = {
            "REDIS_URL": redis_url,
            "AP_INSTANCE_ID": instance,
            "AP_CLUSTER_HEALTH_LISTEN": f"127.0.0.1:{self.health_port}",
            "AP_CLUSTER_STATUS_INTERVAL": "500ms",
            "AP_LOG_FORMAT": "json",
            "AKBUS_CLAIM_IDLE_S": "1",
            "AKBUS_CLAIM_INTERVAL_S": "0.2",
            "AKBUS_RETRY_INITIAL_S": "0.05",
            "AKBUS_RETRY_MAX_S": "0.5",
            **({"AP_CLUSTER_INVENTORY_FILE": str(inventory_file)} if inventory_file else {}),
            **(extra_env or {}),
        }
        super().__init__(
            [sys.executable, "-m", "akcluster"],
            log_path=log_path,
            ready=http_ready(f"{self.health_url}/readyz"),
            env={**inherited_env(), **env},
            name=f"cluster-{instance}",
        )

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.health_port}"

    def readiness(self) -> tuple[int, Any]:
        return http_status(f"{self.health_url}/readyz")


def inherited_env() -> dict[str, str]:
    """The test's environment without settings that would leak into the service's."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("AP_", "AKBUS_", "REDIS_"))}
