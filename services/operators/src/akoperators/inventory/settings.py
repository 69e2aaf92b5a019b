"""Inventory operator settings (``AP_INVENTORY_*``, and ``AP_KUBECONFIG`` as the cluster
service reads it).

Akash configures its operator with a YAML file (``cluster_storage``, ``exclude.nodes``,
``exclude.node_storage``); here the same choices are environment variables:

- ``AP_INVENTORY_EXCLUDE_NODES=control-.*,gpu-7``: nodes never offered (names or regular
  expressions, matching the whole name);
- ``AP_INVENTORY_STORAGE=beta2=1Ti,beta3=512Gi``: the persistent storage pools and sizes;
- ``AP_INVENTORY_NODE_STORAGE=gpu-.*=beta3;edge-.*=``: which pools the nodes whose name
  matches offer (first match; by default every node offers every pool);
- ``AP_INVENTORY_GPU_REGISTRY=/etc/akash/gpus.yaml``: GPU names consulted before the
  bundled registry (:mod:`akoperators.domain.gpus` describes the format).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from akkube.quantity import parse_quantity
from akoperators.adapters.election import OperatorElectionSettings
from akoperators.domain.inventory import InventoryConfig
from akservice import Duration

_CLASS = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def _pattern(text: str, variable: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"{variable}: {text!r} is not a regular expression ({exc})") from None


def node_patterns(text: str) -> tuple[re.Pattern[str], ...]:
    """``"a,b-.*"`` as compiled patterns."""
    return tuple(
        _pattern(part, "exclude") for part in filter(None, (p.strip() for p in text.split(",")))
    )


def pools(text: str) -> dict[str, int]:
    """``"beta2=1Ti,beta3=512Gi"`` as {class: bytes}."""
    found: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        cls, sep, size = (s.strip() for s in part.partition("="))
        if not sep or _CLASS.fullmatch(cls) is None:
            raise ValueError(f"{part!r} is not <storage class>=<size> (beta2=1Ti)")
        amount = parse_quantity(size)
        if amount < 0 or amount != amount.to_integral_value():
            raise ValueError(f"{part!r}: the size must be a whole number of bytes")
        found[cls] = int(amount)
    return found


def node_storage(text: str) -> tuple[tuple[re.Pattern[str], frozenset[str]], ...]:
    """``"gpu-.*=beta3;edge-.*="`` as (node pattern, classes) pairs, in order."""
    found = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        pattern, sep, classes = part.partition("=")
        if not sep or not pattern.strip():
            raise ValueError(f"{part!r} is not <node regex>=<class>[,<class>…]")
        names = frozenset(filter(None, (c.strip() for c in classes.split(","))))
        bad = [c for c in names if _CLASS.fullmatch(c) is None]
        if bad:
            raise ValueError(f"{part!r}: {bad[0]!r} is not a storage class name")
        found.append((_pattern(pattern.strip(), "node storage"), names))
    return tuple(found)


class InventorySettings(OperatorElectionSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    kubeconfig: Path | None = Field(
        default=None,
        description="kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    operator_status_interval: Duration = Field(
        default=10.0, gt=0, description="how often the operator's status is published"
    )
    inventory_exclude_nodes: str = Field(
        default="",
        description="nodes never offered: names or regular expressions (full match), comma list",
    )
    inventory_storage: str = Field(
        default="", description="persistent storage pools: class=size list (beta2=1Ti,beta3=512Gi)"
    )
    inventory_node_storage: str = Field(
        default="",
        description="pools per node: <node regex>=<class>,… entries split by ; (default: all)",
    )
    inventory_gpu_registry: Path | None = Field(
        default=None, description="YAML GPU registry consulted before the bundled one"
    )
    inventory_label_nodes: bool = Field(
        default=True, description="write akash.network/capabilities.* labels on the nodes"
    )
    inventory_debounce: Duration = Field(
        default=0.2,
        gt=0,
        le=5,
        description="publish this long after a change (the changes meanwhile join it)",
    )
    inventory_resync: Duration = Field(
        default=300.0, ge=10, description="list everything again this often (heals watch gaps)"
    )
    inventory_api_timeout: Duration = Field(
        default=10.0, gt=0, description="longest wait for one Kubernetes API request"
    )

    @field_validator("inventory_exclude_nodes")
    @classmethod
    def _exclude(cls, value: str) -> str:
        node_patterns(value)
        return value

    @field_validator("inventory_storage")
    @classmethod
    def _storage(cls, value: str) -> str:
        pools(value)
        return value

    @field_validator("inventory_node_storage")
    @classmethod
    def _node_storage(cls, value: str) -> str:
        node_storage(value)
        return value

    def config(self) -> InventoryConfig:
        return InventoryConfig(
            exclude=node_patterns(self.inventory_exclude_nodes),
            pools=pools(self.inventory_storage),
            node_storage=node_storage(self.inventory_node_storage),
        )
