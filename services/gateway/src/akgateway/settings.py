"""Gateway settings, with Akash's names where the Go provider has one.

``AP_GATEWAY_LISTEN`` is Akash's ``--gateway-listen-address``; ``AP_API``,
``AP_PROVIDER_ADDRESS`` (empty: the address the chain relay signs for, read from its status)
and ``AP_CLUSTER_PUBLIC_HOSTNAME`` mean what they mean in the other services. The rest are
ours: where the provider's certificate lives, how long bus requests may take, how often the
on-chain client certificates are read again, and the public certificate: its files
(``AP_GATEWAY_TLS_CERT``/``KEY``, Akash's ``--gateway-tls-cert``/``--gateway-tls-key``) or ACME
(``AP_GATEWAY_ACME_*``; Akash's ``--cert-issuer-*``), for ``AP_GATEWAY_TLS_HOSTNAMES``. The
process's own settings (``AP_GATEWAY_HEALTH_LISTEN``, logs), ``REDIS_*`` and ``AKBUS_*`` come
from the service runtime (``python -m akgateway --help`` lists them all).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from akgateway.api.limits import Timeouts
from akgateway.domain.public_tls import hostname
from akservice import Duration
from akservice.settings import listen_address

MIB = 1024 * 1024


class GatewaySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    gateway_listen: str = Field(
        default="0.0.0.0:8443", description="address of the tenant REST API (TLS 1.3)"
    )
    gateway_grpc_listen: str = Field(
        default="0.0.0.0:8444",
        description="address of the gRPC API, akash.provider.v1.ProviderRPC (empty: none)",
    )
    gateway_tls_dir: Path = Field(
        default=Path("."),
        description="folder of <provider address>.pem (`python -m akgateway cert generate`)",
    )
    api: str = Field(default="http://localhost:1317", description="Cosmos REST (LCD) of the node")
    provider_address: str = Field(
        default="", description="the provider's account (empty: the chain relay's, from its status)"
    )
    cluster_public_hostname: str = Field(
        default="",
        description="the cluster's public host: forwarded ports, AKASH_CLUSTER_PUBLIC_HOSTNAME",
    )
    cluster_backend: Literal["null", "kube"] = Field(
        default="null",
        description="kube: serve lease logs, events and shell from Kubernetes (null: refuse)",
    )
    kubeconfig: Path | None = Field(
        default=None,
        description="kube backend: kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    gateway_request_timeout: Duration = Field(
        default=10.0, gt=0, description="wait this long for the cluster to answer a lease query"
    )
    gateway_lease_status_max_age: Duration = Field(
        default=10.0,
        ge=0,
        description="serve a lease's status from memory while the cluster confirmed it "
        "within this (else ask the cluster; 0: always ask)",
    )
    gateway_submit_timeout: Duration = Field(
        default=120.0, gt=0, description="wait this long for the manifest service (Akash: 120s)"
    )
    gateway_cert_sync_interval: Duration = Field(
        default=2.0, gt=0, description="look for new on-chain client certificates this often"
    )
    gateway_cert_cache_ttl: Duration = Field(
        default=5.0, ge=0, description="reuse a client certificate's on-chain state this long"
    )
    gateway_status_max_age: Duration = Field(
        default=30.0, gt=0, description="a service status older than this is reported stale"
    )
    gateway_status_interval: Duration = Field(
        default=5.0, gt=0, description="how often the gateway's own status is published"
    )
    gateway_max_body: int = Field(
        default=4 * MIB,
        ge=1024,
        description="largest manifest (PUT /deployment/…/manifest, gRPC) accepted, bytes "
        "(413 above)",
    )
    gateway_max_request_body: int = Field(
        default=64 * 1024,
        ge=1024,
        description="largest body of any other request, bytes (413 above, checked before "
        "authentication)",
    )
    gateway_tls_handshake_timeout: Duration = Field(
        default=10.0, gt=0, description="close a connection whose TLS handshake takes longer"
    )
    gateway_header_timeout: Duration = Field(
        default=10.0,
        gt=0,
        description="close a connection whose request headers take longer (from its first "
        "byte, or from the connection's start)",
    )
    gateway_body_timeout: Duration = Field(
        default=30.0,
        gt=0,
        description="close a connection whose request body takes longer after its headers",
    )
    gateway_idle_timeout: Duration = Field(
        default=30.0, gt=0, description="close a kept-alive connection idle for longer"
    )
    gateway_tenant_max_websockets: int = Field(
        default=16,
        ge=1,
        description="websockets (logs, events, shells) one tenant may hold open at once "
        "(429 above)",
    )
    gateway_tenant_max_shells: int = Field(
        default=8, ge=1, description="shells one tenant may hold open at once (429 above)"
    )
    gateway_tenant_shell_input_rate: int = Field(
        default=1024 * 1024,
        ge=0,
        description="bytes per second of input one tenant may send over all its shells, after "
        "a one-second burst (a frame counts as at least 1 KiB); faster input waits in the "
        "tenant's own connection (0: no pacing)",
    )
    gateway_cert_renew_before: Duration = Field(
        default=720 * 3600.0,
        ge=0,
        description="renew the provider's on-chain certificate when it expires within this "
        "(0: never)",
    )
    gateway_cert_renew_validity: Duration = Field(
        default=8760 * 3600.0, gt=0, description="validity of a renewed certificate"
    )
    gateway_cert_renew_overlap: Duration = Field(
        default=24 * 3600.0,
        ge=0,
        description="revoke the previous certificate on chain this long after its successor "
        "is served",
    )
    gateway_cert_renew_interval: Duration = Field(
        default=60.0, gt=0, description="look at the certificate's renewal this often"
    )
    gateway_cert_renew_retry: Duration = Field(
        default=3600.0,
        gt=0,
        description="after the chain refused a renewed certificate, try another this much later",
    )

    gateway_dashboard_listen: str = Field(
        default="127.0.0.1:8446",
        description="address of the operator's dashboard (plain HTTP; empty: no dashboard)",
    )
    gateway_dashboard_token: SecretStr = Field(
        default=SecretStr(""),
        description="the dashboard's token (empty: one is made at start and logged with the URL)",
    )

    gateway_tls_cert: Path | None = Field(
        default=None,
        description="the public certificate chain (PEM) served for AP_GATEWAY_TLS_HOSTNAMES "
        "(Akash's --gateway-tls-cert); re-read when it changes",
    )
    gateway_tls_key: Path | None = Field(
        default=None, description="its private key (PEM; Akash's --gateway-tls-key)"
    )
    gateway_tls_hostnames: str = Field(
        default="",
        description="comma-separated names (SNI) served with the public certificate (empty: "
        "AP_CLUSTER_PUBLIC_HOSTNAME)",
    )
    gateway_tls_reload_interval: Duration = Field(
        default=5.0, gt=0, description="look for a changed public certificate this often"
    )
    gateway_acme_directory: str = Field(
        default="",
        description="ACME directory URL: obtain and renew the public certificate there "
        "(empty: off; Let's Encrypt: https://acme-v02.api.letsencrypt.org/directory)",
    )
    gateway_acme_email: str = Field(default="", description="the ACME account's contact email")
    gateway_acme_challenge: Literal["http-01", "tls-alpn-01", "dns-01"] = Field(
        default="http-01", description="how the CA checks the hostnames"
    )
    gateway_acme_http_listen: str = Field(
        default="0.0.0.0:5002",
        description="http-01: plain HTTP answering /.well-known/acme-challenge/ (route port 80 "
        "of the hostnames here)",
    )
    gateway_acme_tls_listen: str = Field(
        default="0.0.0.0:5001",
        description="tls-alpn-01: TLS answering the CA's acme-tls/1 handshakes (route port 443 "
        "of the hostnames here)",
    )
    gateway_acme_dns_hook: Path | None = Field(
        default=None,
        description="dns-01: program run as `HOOK add|remove RECORD VALUE` to publish the TXT "
        "record",
    )
    gateway_acme_dns_wait: Duration = Field(
        default=30.0, ge=0, description="dns-01: wait this long after the hook added a record"
    )
    gateway_acme_dir: Path | None = Field(
        default=None,
        description="the ACME account and certificate files (default: <AP_GATEWAY_TLS_DIR>/acme)",
    )
    gateway_acme_ca_file: Path | None = Field(
        default=None,
        description="CA certificates to trust for the ACME directory's HTTPS (default: the "
        "system's)",
    )
    gateway_acme_eab_kid: str = Field(
        default="", description="external account binding key id (Akash's --cert-issuer-kid)"
    )
    gateway_acme_eab_hmac: SecretStr = Field(
        default=SecretStr(""),
        description="external account binding HMAC key, base64url (Akash's --cert-issuer-hmac)",
    )
    gateway_acme_retry_interval: Duration = Field(
        default=60.0,
        gt=0,
        description="after a failed order, try again after this long, doubling up to an hour",
    )

    @field_validator("gateway_listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        listen_address(value)
        return value

    @field_validator("gateway_acme_http_listen", "gateway_acme_tls_listen")
    @classmethod
    def _acme_listen(cls, value: str) -> str:
        listen_address(value)
        return value

    @field_validator("gateway_acme_directory")
    @classmethod
    def _directory(cls, value: str) -> str:
        if value and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", value):
            raise ValueError(
                "not an http(s) URL (Let's Encrypt: https://acme-v02.api.letsencrypt.org/directory)"
            )
        return value

    @field_validator("gateway_tls_hostnames")
    @classmethod
    def _hostnames(cls, value: str) -> str:
        for name in value.split(","):
            if name.strip():
                hostname(name)
        return value

    @model_validator(mode="after")
    def _public_tls(self) -> GatewaySettings:
        if (self.gateway_tls_cert is None) != (self.gateway_tls_key is None):
            raise ValueError("set both AP_GATEWAY_TLS_CERT and AP_GATEWAY_TLS_KEY, or neither")
        if not (self.gateway_tls_cert or self.gateway_acme_directory):
            return self
        if self.gateway_tls_cert and self.gateway_acme_directory:
            raise ValueError(
                "the public certificate comes from AP_GATEWAY_TLS_CERT/KEY or from ACME "
                "(AP_GATEWAY_ACME_DIRECTORY), not both"
            )
        if not self.gateway_tls_hostnames.strip():
            try:
                hostname(self.cluster_public_hostname)
            except ValueError as exc:
                raise ValueError(
                    "the public certificate needs AP_GATEWAY_TLS_HOSTNAMES (or "
                    f"AP_CLUSTER_PUBLIC_HOSTNAME as its name: {exc})"
                ) from None
        if self.gateway_acme_challenge == "dns-01" and self.gateway_acme_dns_hook is None:
            raise ValueError("AP_GATEWAY_ACME_CHALLENGE=dns-01 needs AP_GATEWAY_ACME_DNS_HOOK")
        if self.gateway_acme_eab_kid and not self.gateway_acme_eab_hmac.get_secret_value():
            raise ValueError("AP_GATEWAY_ACME_EAB_KID needs AP_GATEWAY_ACME_EAB_HMAC")
        return self

    @field_validator("gateway_dashboard_listen", "gateway_grpc_listen")
    @classmethod
    def _dashboard(cls, value: str) -> str:
        if value:
            listen_address(value)
        return value

    def timeouts(self) -> Timeouts:
        return Timeouts(
            handshake=self.gateway_tls_handshake_timeout,
            headers=self.gateway_header_timeout,
            body=self.gateway_body_timeout,
            idle=self.gateway_idle_timeout,
        )

    def listen(self) -> tuple[str, int]:
        return listen_address(self.gateway_listen)

    def dashboard_listen(self) -> tuple[str, int] | None:
        return (
            listen_address(self.gateway_dashboard_listen) if self.gateway_dashboard_listen else None
        )

    def grpc_listen(self) -> tuple[str, int] | None:
        return listen_address(self.gateway_grpc_listen) if self.gateway_grpc_listen else None

    def public_hostnames(self) -> tuple[str, ...]:
        """The names served with the public certificate (and ordered from ACME)."""
        given = [name for name in self.gateway_tls_hostnames.split(",") if name.strip()]
        if not given and self.cluster_public_hostname:
            given = [self.cluster_public_hostname]
        return tuple(dict.fromkeys(hostname(name) for name in given))

    def acme_dir(self) -> Path:
        return self.gateway_acme_dir or self.gateway_tls_dir / "acme"

    def public_files(self) -> tuple[Path, Path] | None:
        """The public certificate's and key's files: configured, or those ACME keeps."""
        if self.gateway_tls_cert and self.gateway_tls_key:
            return self.gateway_tls_cert, self.gateway_tls_key
        if self.gateway_acme_directory:
            return self.acme_dir() / "cert.pem", self.acme_dir() / "key.pem"
        return None

    def certificate_path(self, address: str) -> Path:
        """Where the provider's certificate and key are: ``<AP_GATEWAY_TLS_DIR>/<address>.pem``."""
        return self.gateway_tls_dir / f"{address}.pem"
