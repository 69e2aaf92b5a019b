"""The cluster's reconciliation never repairs on a chain it cannot read.

A cluster (``null`` backend) deploys a lease the chain has never had, while the node is down:
every sweep is skipped and the lease stays deployed. Once the node answers again, the next
sweeps find the lease not active on chain and tear it down.
"""

from __future__ import annotations

import asyncio
import re
import urllib.request
from pathlib import Path

from akbus import Bus
from akcluster.domain.leases import LeaseRecord, lease_key
from akcluster.testing import TINY_SDL, ClusterProcess
from akdevnet.testing import DevnetProcess
from akservice.testing import eventually
from aktypes.events import ManifestReceived, ReconcileRepaired, envelope_from_fields
from aktypes.events.streams import CLUSTER_EVENTS, MANIFEST_EVENTS
from aktypes.ids import LeaseID
from aktypes.sdl import parse_sdl
from aktypes.testing import address

PROVIDER = address(3)
LEASE = LeaseID.parse(f"{address(1)}/7/1/1/{PROVIDER}")


def sweeps(process: ClusterProcess, result: str) -> float:
    with urllib.request.urlopen(f"{process.health_url}/metrics", timeout=5) as reply:  # noqa: S310 - ours
        text = reply.read().decode()
    found = re.search(
        rf'^provider_reconcile_sweeps_total\{{result="{result}"\}} (\S+)$', text, re.M
    )
    return float(found.group(1)) if found else 0.0


async def repairs(bus: Bus) -> list[ReconcileRepaired]:
    entries = await bus.backend.entries(CLUSTER_EVENTS)
    payloads = [envelope_from_fields(e.fields).payload for e in entries]
    return [p for p in payloads if isinstance(p, ReconcileRepaired)]


async def state(bus: Bus) -> str:
    raw = await bus.backend.get(lease_key(LEASE))
    return LeaseRecord.model_validate_json(raw).state if raw else ""


async def test_no_repair_without_a_chain_read_and_the_repair_once_there_is_one(
    devnet: DevnetProcess, redis_url: str, bus: Bus, tmp_path: Path
) -> None:
    devnet.stop()  # the node cannot answer
    cluster = ClusterProcess(
        redis_url=redis_url,
        log_path=tmp_path / "cluster.log",
        extra_env={
            "AP_API": devnet.lcd_url,
            "AP_PROVIDER_ADDRESS": PROVIDER,
            "AP_CLUSTER_CAPABILITIES_CHECK": "false",
            "AP_CLUSTER_RECONCILE_INTERVAL": "200ms",
            "AP_CLUSTER_RECONCILE_GRACE": "0s",
        },
    )
    cluster.start()
    try:
        sdl = parse_sdl(TINY_SDL)
        group, version = sdl.manifest.groups[0], sdl.manifest.version_hex()
        await bus.publish(
            MANIFEST_EVENTS, ManifestReceived(lease_id=LEASE, version=version, group=group)
        )
        await eventually(
            lambda: state(bus), what="the lease deployed", until=lambda s: s == "deployed"
        )
        await eventually(
            lambda: sweeps(cluster, "skipped"), what="five sweeps skipped", until=lambda n: n >= 5
        )
        assert await state(bus) == "deployed"
        assert sweeps(cluster, "done") == 0
        assert await repairs(bus) == []

        # the chain readable again (a loaded machine may take a while to start it): it has
        # no such lease
        await asyncio.to_thread(devnet.start, timeout=90)
        await eventually(
            lambda: state(bus),
            timeout_s=30,
            what="the lease torn down",
            until=lambda s: s == "closed",
        )
        assert [(r.kind, r.action, r.lease_id) for r in await repairs(bus)] == [
            ("lease_closed_deployed", "torn_down", LEASE)
        ]
    finally:
        cluster.stop()
