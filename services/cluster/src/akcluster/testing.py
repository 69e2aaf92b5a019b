"""The cluster service as a subprocess for tests: ``python -m akcluster`` on a free port."""

from __future__ import annotations

from pathlib import Path

from akservice.testing import RuntimeProcess


class ClusterProcess(RuntimeProcess):
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
        env = {
            "AP_INSTANCE_ID": instance,
            "AP_CLUSTER_STATUS_INTERVAL": "500ms",
            **({"AP_CLUSTER_INVENTORY_FILE": str(inventory_file)} if inventory_file else {}),
            **(extra_env or {}),
        }
        super().__init__(
            "akcluster", "cluster", redis_url=redis_url, log_path=log_path, env=env,
            name=f"cluster-{instance}",
        )  # fmt: skip


# the smallest lease the benchmarks deploy by the thousand: one nginx service, 0.1 CPU
TINY_SDL = """
version: "2.0"
services:
  web:
    image: nginx:1.27
    expose:
      - port: 80
        to:
          - global: true
profiles:
  compute:
    web:
      resources: {cpu: {units: 0.1}, memory: {size: 64Mi}, storage: {size: 64Mi}}
  placement:
    dc:
      pricing:
        web: {denom: uakt, amount: 100}
deployment:
  web:
    dc: {profile: web, count: 1}
"""
