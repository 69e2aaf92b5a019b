"""Stream names (``akash.<area>.<what>``) and which payload types belong on each."""

from __future__ import annotations

from typing import Final

CHAIN_EVENTS: Final = "akash.chain.events"
CHAIN_TX: Final = "akash.provider.chain.tx"
CHAIN_RESULTS: Final = "akash.provider.chain.results"
CLUSTER_COMMANDS: Final = "akash.provider.cluster.commands"
CLUSTER_EVENTS: Final = "akash.provider.cluster.events"
CLUSTER_LEASE_STATUS: Final = "akash.provider.cluster.lease-status"
# beside it, a hash of each lease's latest LeaseStatusChanged (JSON): what a follower loads
CLUSTER_LEASE_STATUS_HASH: Final = "akcluster:lease-status"
BIDENGINE_EVENTS: Final = "akash.provider.bidengine.events"
BIDENGINE_COMMANDS: Final = "akash.provider.bidengine.commands"
MANIFEST_EVENTS: Final = "akash.provider.manifest.events"
MANIFEST_COMMANDS: Final = "akash.provider.manifest.commands"
BALANCE_EVENTS: Final = "akash.provider.balance.events"
INVENTORY_EVENTS: Final = "akash.provider.inventory.events"

SERVICES: Final = (
    "chain",
    "bidengine",
    "cluster",
    "manifest",
    "balance",
    "gateway",
    "inventory",
    "hostname",
    "ip",
)


def status_stream(service: str) -> str:
    """The retained status stream of ``service``."""
    if service not in SERVICES:
        raise ValueError(f"unknown service {service!r} (known: {', '.join(SERVICES)})")
    return f"akash.provider.{service}.status"


def dlq_stream(stream: str) -> str:
    """Where entries of ``stream`` that cannot be handled end up."""
    return f"{stream}.dlq"
