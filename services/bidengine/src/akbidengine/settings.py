"""Bid engine settings, with Akash's names (``AP_BID_PRICE_STRATEGY``, ``AP_BID_TIMEOUT``…).

The additions are ours: ``AP_BID_PRICE_GPU_SCALE`` (per GPU model, which Akash's ``scale``
strategy cannot price), tenant allow and deny lists, and ``AP_PROVIDER_ADDRESS`` (empty:
the address the chain relay signs for, read from its status). The process's own settings
(``AP_BIDENGINE_HEALTH_LISTEN``, ``AP_INSTANCE_ID``, logs), ``REDIS_*`` and ``AKBUS_*``
come from the service runtime (``python -m akbidengine --help`` lists them all).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from akbidengine.domain.pricing import ScaleStrategy
from akbidengine.errors import ProviderConfigError
from akservice import Duration
from aktypes.attributes import Attribute
from aktypes.coin import Coin


def _names(text: str) -> frozenset[str]:
    return frozenset(filter(None, (part.strip() for part in text.split(","))))


class BidSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    api: str = Field(default="http://localhost:1317", description="Cosmos REST (LCD) of the node")
    provider_address: str = Field(
        default="", description="the provider's account (empty: the chain relay's, from its status)"
    )
    provider_config: Path | None = Field(
        default=None,
        description="YAML with attributes every order must ask for (Akash's provider config)",
    )
    bid_price_strategy: Literal["scale", "shellScript"] = Field(
        default="scale", description="how bids are priced: scale or shellScript"
    )
    bid_price_cpu_scale: str = Field(default="0", description="scale: price per millicpu")
    bid_price_memory_scale: str = Field(default="0", description="scale: price per MiB of memory")
    bid_price_storage_scale: str = Field(
        default="0", description="scale: per MiB of storage, 'v' or 'v,class=v' (ephemeral first)"
    )
    bid_price_endpoint_scale: str = Field(default="0", description="scale: price per endpoint")
    bid_price_ip_scale: str = Field(default="0", description="scale: price per leased IP")
    bid_price_gpu_scale: str = Field(
        default="", description="scale: price per GPU by model, 'a100=120,a100.80Gi=140,*=100'"
    )
    bid_price_script_path: Path | None = Field(
        default=None, description="shellScript: the executable that prices a bid"
    )
    bid_price_script_process_limit: int = Field(
        default=32, ge=1, description="shellScript: scripts running at once"
    )
    bid_price_script_process_timeout: Duration = Field(
        default=10.0, gt=0, description="shellScript: time a script may take"
    )
    bid_deposit: str = Field(default="500000uakt", description="deposit of every bid")
    bid_timeout: Duration = Field(
        default=300.0, ge=0, description="close a bid not won after this long (0: never)"
    )
    reclamation_window: Duration = Field(
        default=0.0, ge=0, description="reclamation window offered with bids (0: none)"
    )
    bid_tenant_allow: str = Field(
        default="", description="bid only for these tenants (comma-separated; empty: everyone)"
    )
    bid_tenant_deny: str = Field(default="", description="never bid for these tenants")
    bid_attributes_refresh: Duration = Field(
        default=600.0, gt=0, description="re-read on-chain attributes and audits this often"
    )
    bid_catchup_interval: Duration = Field(
        default=300.0, gt=0, description="read the open orders again this often (missed events)"
    )
    bid_reconcile_interval: Duration = Field(
        default=120.0,
        gt=0,
        description="compare the bids in play with the chain this often (a bid left open for "
        "a closed order is closed)",
    )
    bid_reconcile_grace: Duration = Field(
        default=60.0,
        ge=0,
        description="reconciliation: a finding is repaired once seen on two sweeps in a row "
        "at least this far apart",
    )
    bid_concurrency: int = Field(default=64, ge=1, description="orders handled at once")
    bidengine_status_interval: Duration = Field(
        default=5.0, gt=0, description="how often status is published"
    )

    @field_validator("bid_deposit")
    @classmethod
    def _deposit(cls, value: str) -> str:
        Coin.parse(value.strip())
        return value.strip()

    @model_validator(mode="after")
    def _strategy(self) -> BidSettings:
        if self.bid_price_strategy == "scale":
            self.scale()
        else:
            path = self.bid_price_script_path
            if path is None:
                raise ValueError("AP_BID_PRICE_STRATEGY=shellScript needs AP_BID_PRICE_SCRIPT_PATH")
            if not path.is_file() or not os.access(path, os.X_OK):
                raise ValueError(f"AP_BID_PRICE_SCRIPT_PATH {path} is not an executable file")
        return self

    def scale(self) -> ScaleStrategy:
        return ScaleStrategy.from_settings(
            cpu=self.bid_price_cpu_scale,
            memory=self.bid_price_memory_scale,
            storage=self.bid_price_storage_scale,
            endpoint=self.bid_price_endpoint_scale,
            ip=self.bid_price_ip_scale,
            gpu=self.bid_price_gpu_scale,
        )

    def deposit(self) -> Coin:
        return Coin.parse(self.bid_deposit)

    def tenants(self) -> tuple[frozenset[str], frozenset[str]]:
        return _names(self.bid_tenant_allow), _names(self.bid_tenant_deny)

    def required_attributes(self) -> tuple[Attribute, ...]:
        """Attributes of the provider config file (Akash's ``--provider-config``)."""
        path = self.provider_config
        if path is None:
            return ()
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ProviderConfigError(f"provider config {path}: {exc}") from exc
        items = data.get("attributes") if isinstance(data, dict) else None
        if items is None:
            return ()
        if not isinstance(items, list) or not all(
            isinstance(i, dict) and isinstance(i.get("key"), str) for i in items
        ):
            raise ProviderConfigError(
                f"provider config {path}: attributes must be a list of {{key, value}}"
            )
        return tuple(Attribute(key=i["key"], value=str(i.get("value", ""))) for i in items)
