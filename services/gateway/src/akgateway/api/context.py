"""What a request handler needs, built once at start and kept on ``app.state.gateway``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from fastapi import Request

from akbus import Bus
from akgateway.adapters.chain import AccountKeys, CertificateLookup
from akgateway.adapters.kube import LeaseCluster
from akgateway.api.limits import InputRate, TenantSlots
from akgateway.handlers import LeaseStatuses, StatusBoard
from akgateway.settings import GatewaySettings


@dataclass(frozen=True)
class Gateway:
    bus: Bus
    settings: GatewaySettings
    provider: str  # the provider's address
    certificates: CertificateLookup
    accounts: AccountKeys  # tenants' public keys, to check their tokens
    version: str  # of this package
    board: StatusBoard  # every service's latest status
    kube: LeaseCluster | None = None  # logs, events, shell (None: no cluster access)
    leases: LeaseStatuses | None = None  # leases' statuses from memory (None: always ask)
    slots: TenantSlots = field(default_factory=lambda: TenantSlots(16, 8))  # websockets held
    input_rate: InputRate = field(default_factory=lambda: InputRate(1024 * 1024))  # shell input


def gateway_of(request: Request) -> Gateway:
    return cast(Gateway, request.app.state.gateway)
