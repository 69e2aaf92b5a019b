"""Cluster service settings.

Akash's names where the Go provider has them (``AP_OVERCOMMIT_PCT_CPU``, ``…_MEM``,
``…_STORAGE``); ``AP_CLUSTER_*`` for the rest. The process's own settings
(``AP_CLUSTER_HEALTH_LISTEN``, ``AP_INSTANCE_ID``, logs), ``REDIS_*`` and ``AKBUS_*`` come
from the service runtime (``python -m akcluster --help`` lists them all).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from akservice import Duration
from aktypes.errors import InvalidQuantityError
from aktypes.quantity import parse_bytes


def parse_pools(text: str) -> dict[str, int]:
    """``beta2=512Gi,beta3=1Ti`` → sizes in bytes per storage class."""
    pools: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        cls, sep, size = item.partition("=")
        if not sep or not cls.strip():
            raise ValueError(f"{item!r} is not class=size (example: beta2=512Gi)")
        try:
            pools[cls.strip()] = parse_bytes(size.strip()).value
        except InvalidQuantityError as exc:
            raise ValueError(f"{item!r}: {exc}") from exc
    return pools


class ClusterSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    cluster_backend: Literal["null", "kube"] = Field(
        default="null",
        description="inventory from Kubernetes (kube) or from a nodes file (null)",
    )
    cluster_inventory_file: Path | None = Field(
        default=None,
        description="null backend: YAML nodes file (default: one node 'solo', as Akash's)",
    )
    kubeconfig: Path | None = Field(
        default=None,
        description="kube backend: kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    cluster_storage: str = Field(
        default="",
        description="kube backend: persistent storage pools, class=size list (beta2=1Ti)",
    )
    overcommit_pct_cpu: Decimal = Field(
        default=Decimal(0), ge=0, description="CPU sold beyond capacity, %"
    )
    overcommit_pct_mem: Decimal = Field(
        default=Decimal(0), ge=0, description="memory sold beyond capacity, %"
    )
    overcommit_pct_storage: Decimal = Field(
        default=Decimal(0), ge=0, description="storage sold beyond capacity, %"
    )
    cluster_node_ports: int = Field(
        default=2768, ge=0, description="node ports available to leases (random-port endpoints)"
    )
    cluster_leased_ips: int = Field(default=0, ge=0, description="leased IPs available to leases")
    cluster_status_interval: Duration = Field(
        default=10.0, gt=0, description="how often status is published"
    )

    @field_validator("cluster_storage")
    @classmethod
    def _pools(cls, value: str) -> str:
        parse_pools(value)
        return value

    def storage_pools(self) -> dict[str, int]:
        return parse_pools(self.cluster_storage)
