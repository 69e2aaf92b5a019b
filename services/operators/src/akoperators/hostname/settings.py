"""Hostname operator settings: Akash's names where the Go operator has them
(``AP_INGRESS_MODE``, ``AP_GATEWAY_NAME``…), ``AP_HOSTNAME_*`` for the rest. The process's
own settings (``AP_HOSTNAME_HEALTH_LISTEN``, logs), ``REDIS_*`` and ``AKBUS_*`` come from
the service runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from akoperators.adapters.election import OperatorElectionSettings
from akservice import Duration


class HostnameSettings(OperatorElectionSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    kubeconfig: Path | None = Field(
        default=None,
        description="kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    operator_status_interval: Duration = Field(
        default=10.0, gt=0, description="how often the operator's status is published"
    )
    k8s_manifest_ns: str = Field(
        default="lease", description="namespace of the Manifest and ProviderHost resources"
    )
    ingress_mode: Literal["ingress", "gateway-api"] = Field(
        default="ingress",
        description="route hostnames with Ingresses (ingress-nginx) or Gateway API HTTPRoutes",
    )
    deployment_ingress_class: str = Field(
        default="akash-ingress-class", description="IngressClass of tenants' hostnames"
    )
    gateway_name: str = Field(
        default="akash-gateway", description="gateway-api mode: the Gateway routes attach to"
    )
    gateway_namespace: str = Field(
        default="akash-gateway", description="gateway-api mode: the Gateway's namespace"
    )
    hostname_ignore_failures: int = Field(
        default=3,
        ge=1,
        description="failed attempts in a row before a hostname is put on the ignore list",
    )
    hostname_ignore_for: Duration = Field(
        default=726 * 3600.0, gt=0, description="how long a hostname stays on the ignore list"
    )
    hostname_retry: Duration = Field(
        default=5.0, gt=0, description="wait before trying a failed or conflicting host again"
    )
