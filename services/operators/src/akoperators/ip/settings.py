"""IP operator settings (``AP_IP_*``, plus ``AP_KUBECONFIG`` and ``AP_K8S_MANIFEST_NS``
shared with the cluster service). The process's own settings (``AP_IP_HEALTH_LISTEN``,
logs), ``REDIS_*`` and ``AKBUS_*`` come from the service runtime."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from akoperators.adapters.election import OperatorElectionSettings
from akoperators.domain.ips import pool_size
from akservice import Duration


class IPSettings(OperatorElectionSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    kubeconfig: Path | None = Field(
        default=None,
        description="kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    operator_status_interval: Duration = Field(
        default=10.0, gt=0, description="how often the operator's status is published"
    )
    k8s_manifest_ns: str = Field(
        default="lease", description="namespace of the ProviderLeasedIP resources"
    )
    ip_pool: str = Field(
        default="",
        description="the addresses MetalLB leases out: addresses, ranges (a-b) and networks",
    )
    ip_pool_name: str = Field(
        default="", description="MetalLB address pool to take them from (empty: MetalLB's choice)"
    )
    ip_retry: Duration = Field(
        default=5.0, gt=0, description="wait before trying a pending leased IP again"
    )

    @field_validator("ip_pool")
    @classmethod
    def _pool(cls, value: str) -> str:
        pool_size(value)
        return value
