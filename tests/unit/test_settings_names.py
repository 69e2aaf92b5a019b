"""One environment for every service: no name means two things (docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from akbalance.service import SPEC as BALANCE
from akbidengine.service import SPEC as BIDENGINE
from akchainsvc.service import SPEC as CHAIN
from akcluster.service import SPEC as CLUSTER
from akgateway.service import SPEC as GATEWAY
from akmanifest.service import SPEC as MANIFEST
from akoperators.hostname.service import SPEC as HOSTNAME
from akoperators.inventory.service import SPEC as INVENTORY
from akoperators.ip.service import SPEC as IP
from akservice.runtime import ServiceSpec
from akservice.settings import conflicts, settings_of

SERVICES: list[ServiceSpec[Any]] = [
    CHAIN,
    CLUSTER,
    BIDENGINE,
    MANIFEST,
    GATEWAY,
    BALANCE,
    INVENTORY,
    HOSTNAME,
    IP,
]


def test_no_two_services_declare_one_name_differently() -> None:
    groups = []
    for spec in SERVICES:
        groups += [(spec.name, spec.settings), (spec.name, spec.runtime_settings)]
    assert conflicts(groups) == []


def test_each_service_has_its_own_health_address() -> None:
    names = [settings_of(spec.runtime_settings)[0].name for spec in SERVICES]
    assert names == [f"AP_{spec.name.upper()}_HEALTH_LISTEN" for spec in SERVICES]
    defaults = [spec.health_listen for spec in SERVICES]
    assert len(set(defaults)) == len(defaults)
