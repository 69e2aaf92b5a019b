"""Cluster service settings.

Akash's names where the Go provider has them (``AP_OVERCOMMIT_PCT_CPU``, ``…_MEM``,
``…_STORAGE``, ``AP_DEPLOYMENT_INGRESS_STATIC_HOSTS``, ``AP_DEPLOYMENT_INGRESS_DOMAIN``);
``AP_CLUSTER_*`` for the rest. The ingress domain is checked as Go checks it at start
(``builder.ValidateSettings``: required with static hosts, Go's ``IsDomainName``), and also
refused when no Ingress could carry the hostnames made from it. The process's own settings
(``AP_CLUSTER_HEALTH_LISTEN``, ``AP_INSTANCE_ID``, logs), ``REDIS_*`` and ``AKBUS_*`` come
from the service runtime (``python -m akcluster --help`` lists them all).

The capabilities check reads the provider's attributes from the node (``AP_API``, the
provider ``AP_PROVIDER_ADDRESS`` or the chain relay's), as the bid engine does; the
reconciliation (``AP_CLUSTER_RECONCILE_*``) reads its leases and bids there.

What the operators know is not configured here: the ``kube`` backend's inventory is the
inventory operator's (``AP_INVENTORY_*``), the leased IPs it may offer are the IP operator's
pool (``AP_IP_POOL``), and the Ingresses of its hostnames are the hostname operator's
(``AP_DEPLOYMENT_INGRESS_CLASS``, ``AP_INGRESS_MODE``).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from akservice import Duration
from aktypes.ingress import is_domain_name

DEFAULT_BLOCKED_HOSTNAMES = ["localhost", ".localhost"]
MAX_INGRESS_DOMAIN = 253 - 27  # a hostname has at most 253 characters; the label takes 26 + "."


def checked_ingress_domain(domain: str, static_hosts: object) -> str:
    """``domain`` if generated hostnames can be made from it; else ValueError saying why."""
    if not static_hosts:
        return domain
    if not domain:
        raise ValueError(
            "empty ingress domain: AP_DEPLOYMENT_INGRESS_STATIC_HOSTS=true needs the domain "
            "of the generated hostnames"
        )
    if not is_domain_name(domain):
        raise ValueError(f"invalid domain name {domain!r}")
    if "_" in domain or domain.endswith(".") or len(domain) > MAX_INGRESS_DOMAIN:
        raise ValueError(
            f"{domain!r} cannot end a hostname an Ingress routes (no '_', no final '.', at "
            f"most {MAX_INGRESS_DOMAIN} characters)"
        )
    return domain


class ClusterSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    cluster_backend: Literal["null", "kube"] = Field(
        default="null",
        description="a Kubernetes cluster, its inventory the inventory operator's (kube), or "
        "none, the inventory a nodes file (null)",
    )
    cluster_inventory_file: Path | None = Field(
        default=None,
        description="null backend: YAML nodes file (default: one node 'solo', as Akash's)",
    )
    kubeconfig: Path | None = Field(
        default=None,
        description="kube backend: kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
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
    cluster_status_interval: Duration = Field(
        default=10.0, gt=0, description="how often status is published"
    )
    cluster_lease_status_interval: Duration = Field(
        default=2.0,
        ge=0,
        description="kube: confirm the lease statuses kept from watches this often "
        "(0: keep none; the gateway asks for each)",
    )
    cluster_public_hostname: str = Field(
        default="",
        description="the cluster's public host: forwarded ports, AKASH_CLUSTER_PUBLIC_HOSTNAME",
    )
    k8s_manifest_ns: str = Field(
        default="lease", description="namespace of the Manifest and ProviderHost resources"
    )
    deployment_network_policies_enabled: bool = Field(
        default=True, description="isolate each lease's namespace with NetworkPolicies"
    )
    deployment_blocked_hostnames: str = Field(
        default="",
        description="hostnames tenants may not use, comma list; '.example.com' blocks "
        "subdomains (always added: localhost, .localhost, AP_CLUSTER_PUBLIC_HOSTNAME, the "
        "ingress domain with static hosts, IP addresses)",
    )
    deployment_runtime_class: str = Field(
        default="", description="RuntimeClass of workloads without GPUs (empty: the default)"
    )
    docker_image_pull_secrets_name: str = Field(
        default="", description="image-pull Secret for services without credentials"
    )
    deployment_ingress_static_hosts: bool = Field(
        default=False,
        description="give every HTTP service a generated hostname under "
        "AP_DEPLOYMENT_INGRESS_DOMAIN (Akash's); off: HTTP services need accept hosts",
    )
    deployment_ingress_domain: str = Field(
        default="",
        validate_default=True,
        description="domain of the generated hostnames (<26 characters>.<domain>)",
    )
    cluster_deploy_concurrency: int = Field(
        default=8, ge=1, description="leases deployed, checked or torn down at once"
    )
    cluster_capabilities_check: bool = Field(
        default=True,
        description="compare the inventory with the provider's on-chain capabilities/* "
        "attributes (on the status, the metric provider_capability_mismatches, the dashboard)",
    )
    cluster_capabilities_interval: Duration = Field(
        default=60.0, gt=0, description="capabilities check: re-read the provider's attributes"
    )
    cluster_reconcile: bool = Field(
        default=True,
        description="compare the leases, deployments and reservations with the chain's "
        "leases and bids of the provider, and repair what a missed chain event left behind",
    )
    cluster_reconcile_interval: Duration = Field(
        default=120.0, gt=0, description="reconciliation: time between two sweeps"
    )
    cluster_reconcile_grace: Duration = Field(
        default=60.0,
        ge=0,
        description="reconciliation: a finding is repaired once seen on two sweeps in a row "
        "at least this far apart",
    )
    api: str = Field(
        default="http://localhost:1317",
        description="capabilities check and reconciliation: Cosmos REST (LCD) of the node",
    )
    provider_address: str = Field(
        default="",
        description="capabilities check and reconciliation: the provider's account (empty: "
        "the chain relay's)",
    )
    cluster_lease_events_maxlen: int = Field(
        default=1000,
        ge=1,
        description="kube backend: a lease's Kubernetes events kept on Redis for the "
        "gateway's /kubeevents, at most this many (the oldest go first)",
    )
    cluster_lease_events_retention: Duration = Field(
        default=86400.0,
        ge=1,
        description="how long a lease's kept events outlive its teardown (keep it above the "
        "cluster's --event-ttl: an event is recognised as kept for this long)",
    )
    monitor_max_retries: int = Field(
        default=40,
        ge=1,
        description="unhealthy checks in a row before a lease is closed as unstable",
    )
    monitor_retry_period: Duration = Field(
        default=4.0, gt=0, description="wait before checking an unhealthy lease again"
    )
    monitor_retry_period_jitter: Duration = Field(
        default=15.0, ge=0, description="random extra wait, up to this, after a failed check"
    )
    monitor_healthcheck_period: Duration = Field(
        default=10.0, gt=0, description="wait before checking a healthy lease again"
    )
    monitor_healthcheck_period_jitter: Duration = Field(
        default=5.0, ge=0, description="random extra wait, up to this, after a healthy check"
    )

    @field_validator("deployment_ingress_domain")
    @classmethod
    def _ingress_domain(cls, value: str, info: ValidationInfo) -> str:
        return checked_ingress_domain(value, info.data.get("deployment_ingress_static_hosts"))

    def ingress_domain(self) -> str:
        """The domain of generated hostnames; empty when static hosts are off."""
        return self.deployment_ingress_domain if self.deployment_ingress_static_hosts else ""

    def blocked_hostnames(self) -> list[str]:
        """The operator's list, then the defaults no tenant may use: ``localhost`` and its
        subdomains, the cluster's public hostname, and the ingress domain itself when
        hostnames are generated under it (IP literals are refused by
        :func:`akcluster.domain.leases.blocked` whatever the list)."""
        own = [self.cluster_public_hostname.strip(), self.ingress_domain()]
        listed = self.deployment_blocked_hostnames.split(",") + DEFAULT_BLOCKED_HOSTNAMES + own
        return list(dict.fromkeys(h.strip().lower().rstrip(".") for h in listed if h.strip()))
