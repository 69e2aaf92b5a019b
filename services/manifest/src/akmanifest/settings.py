"""Manifest service settings, with Akash's names where Akash has one (``AP_MANIFEST_TIMEOUT``).

``AP_API`` and ``AP_PROVIDER_ADDRESS`` mean what they mean for the bid engine (an empty
address: the one the chain relay signs for, read from its status). The cache age is
Akash's ``--cached-result-max-age`` under this service's name. Without
``AP_DEPLOYMENT_INGRESS_STATIC_HOSTS`` (the cluster's setting: then the cluster generates
no hostnames) an HTTP expose that accepts no hostname is refused, as Akash refuses it. The
process's own settings (``AP_MANIFEST_HEALTH_LISTEN``, ``AP_INSTANCE_ID``, logs),
``REDIS_*`` and ``AKBUS_*`` come from the service runtime (``python -m akmanifest --help``
lists them all).
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from akservice import Duration


class ManifestSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    api: str = Field(default="http://localhost:1317", description="Cosmos REST (LCD) of the node")
    provider_address: str = Field(
        default="", description="the provider's account (empty: the chain relay's, from its status)"
    )
    manifest_timeout: Duration = Field(
        default=300.0,
        ge=0,
        description="close a won lease's bid when no manifest came within this long (0: never)",
    )
    manifest_cache_age: Duration = Field(
        default=5.0, ge=0, description="reuse a deployment read from the chain for this long"
    )
    manifest_hostname_check_timeout: Duration = Field(
        default=10.0, gt=0, description="wait this long for the cluster to check hostnames"
    )
    deployment_ingress_static_hosts: bool = Field(
        default=False,
        description="the cluster generates hostnames; off: HTTP exposes must accept one",
    )
    manifest_status_interval: Duration = Field(
        default=5.0, gt=0, description="how often status is published"
    )
