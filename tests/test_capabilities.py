"""The capabilities check on the whole provider: a storage class and a GPU advertised on
chain but not in the inventory (failed bids), then, once the chain stops advertising them
and the cluster gains them, in the inventory but not on chain (lost orders); each change
reported within seconds on the cluster's status, its metric, the dashboard's view and
``akash-provider provider check``.

The chain side changes through a real ``MsgUpdateProvider``: the re-read interval is ten
minutes, so only the relay's ``ProviderUpdated`` can bring the change in time. The
inventory side changes through kubesim's API (a StorageClass created, a node added), as
the inventory operator watches it. Then an order for beta3 gets no bid (a lost order) until
``akash-provider provider update --sync-capabilities`` advertises what the inventory has;
the next one is bid on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from typing import Any

from kubernetes import client, config

from akbus import Bus
from akcli.testing import Provider, stream
from akdevnet.testing import DevnetClients
from akservice.testing import eventually, http_status
from aktypes.capabilities import GPUOffer, Offer, capability_attributes
from aktypes.events import BidDeclined, ClusterStatus
from aktypes.events.streams import BIDENGINE_EVENTS
from aktypes.sdl import parse_sdl
from kubesim.cluster import GpuSpec, NodeSpec

NODES = """
nodes:
  - {name: big-a, cpu: "16", memory: 64Gi, ephemeral-storage: 1Ti, storage-classes: [beta2]}
  - name: gpu-a
    cpu: "32"
    memory: 128Gi
    ephemeral-storage: 2Ti
    storage-classes: [beta2]
    gpus: {vendor: nvidia, model: a100, count: 2, memory: 80Gi, interface: sxm}
"""
A100 = GPUOffer("nvidia", "a100", "80Gi", "sxm")
H100 = GPUOffer("nvidia", "h100", "80Gi", "sxm")
# what the cluster offers at first: beta2 (beta3 is configured, but has no StorageClass yet)
BASE = {
    "host": "akash",
    "tier": "community",
    **capability_attributes(Offer(storage={"beta2": True, "ram": False}, gpus=frozenset({A100}))),
}
BETA3 = {"capabilities/storage/3/class": "beta3", "capabilities/storage/3/persistent": "true"}
FAILED = {
    ("advertised_not_offered", "storage", "beta3 (persistent)"),
    ("advertised_not_offered", "gpu", "nvidia/h100"),
}
LOST = {
    ("offered_not_advertised", "storage", "beta3 (persistent)"),
    ("offered_not_advertised", "gpu", "nvidia/h100/80Gi/sxm"),
}
BETA3_SDL = """
version: "2.0"
services:
  db:
    image: postgres:16
    expose:
      - port: 5432
        to:
          - global: true
    params:
      storage:
        data:
          mount: /var/lib/postgresql/data
profiles:
  compute:
    db:
      resources:
        cpu:
          units: 0.5
        memory:
          size: 512Mi
        storage:
          - size: 512Mi
          - name: data
            size: 1Gi
            attributes:
              persistent: true
              class: beta3
  placement:
    dc:
      attributes:
        host: akash
      pricing:
        db:
          denom: uact
          amount: 100000
deployment:
  db:
    dc:
      profile: db
      count: 1
"""
REACT_S = 30.0  # the chain is re-read every ten minutes here: only the events are this quick
STATUS = ("capacity", "allocatable", "addresses", "nodeInfo")


async def reported(bus: Bus) -> set[tuple[str, str, str]] | None:
    """The differences on the cluster's status; None before the chain was read."""
    envelope = await bus.status("cluster")
    if envelope is None or not isinstance(envelope.payload, ClusterStatus):
        return None
    check = envelope.payload.capabilities
    if not check.checked:
        return None
    return {(m.direction, m.kind, m.subject) for m in check.mismatches}


def metric(provider: Provider) -> dict[tuple[str, str], float]:
    status, text = http_status(f"{provider.cluster().health_url}/metrics")
    assert status == 200
    found = {}
    for line in str(text).splitlines():
        if line.startswith("provider_capability_mismatches{"):
            labels, value = line.removeprefix("provider_capability_mismatches").rsplit(" ", 1)
            pairs = dict(p.split("=") for p in labels.strip("{}").split(","))
            found[(pairs["direction"].strip('"'), pairs["kind"].strip('"'))] = float(value)
    return found


def dashboard(provider: Provider) -> set[tuple[str, str, str]]:
    gateway = provider.gateway
    request = urllib.request.Request(  # noqa: S310 - our own process
        f"{gateway.dashboard_url}/api/view",
        headers={"Authorization": f"Bearer {gateway.dashboard_token}"},
    )
    with urllib.request.urlopen(request, timeout=5) as reply:  # noqa: S310
        view: dict[str, Any] = json.load(reply)
    return {(m["difference"], m["kind"], m["subject"]) for m in view["capabilities"]["mismatches"]}


def cli(provider: Provider, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "akcli", "provider", *args, "--redis-url", provider.redis_url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def check(provider: Provider) -> subprocess.CompletedProcess[str]:
    return cli(provider, "check")


async def declines(bus: Bus, dseq: int) -> list[str]:
    return [
        f"{reason.code}: {reason.message}"
        for e in await stream(bus, BIDENGINE_EVENTS)
        if isinstance(e.payload, BidDeclined) and e.payload.order_id.dseq == dseq
        for reason in e.payload.reasons
    ]


async def test_differences_both_ways_are_reported_within_seconds_of_a_change(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.nodes = NODES
    provider.storage = "beta2=8Ti,beta3=1Ti"
    provider.scales["AP_BID_PRICE_STORAGE_SCALE"] = "0.01,beta2=0.02,beta3=0.03"
    provider.cluster_env = {"AP_CLUSTER_CAPABILITIES_INTERVAL": "10m"}
    provider.attributes = {**BASE, **BETA3, **dict.fromkeys(H100.attribute_keys(), "true")}
    provider.start()

    # advertised, not offered: failed bids
    found = await eventually(
        lambda: reported(bus), timeout_s=60, what="the check's first result", until=FAILED.__eq__
    )
    assert found == FAILED
    counts = metric(provider)
    assert counts[("advertised_not_offered", "storage")] == 1
    assert counts[("advertised_not_offered", "gpu")] == 1
    assert counts[("offered_not_advertised", "gpu")] == 0
    assert dashboard(provider) == {
        ("failed bids", "storage", "beta3 (persistent)"),
        ("failed bids", "gpu", "nvidia/h100"),
    }
    result = check(provider)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "failed bids: advertised on chain, not in the inventory" in result.stdout
    assert "capabilities/storage/3/class=beta3" in result.stdout
    assert "capabilities/gpu/vendor/nvidia/model/h100/ram/80Gi/interface/sxm=true" in result.stdout

    # the chain stops advertising them: nothing to report
    await chain.set_provider_attributes(BASE)
    await eventually(
        lambda: reported(bus), timeout_s=REACT_S, what="the update taken", until=set().__eq__
    )
    result = check(provider)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the on-chain capabilities match the inventory" in result.stdout

    # the cluster gains them: offered, not advertised: lost orders
    api = config.new_client_from_config(str(provider.kubesim.kubeconfig))  # type: ignore[no-untyped-call]
    try:
        client.StorageV1Api(api).create_storage_class(
            {"metadata": {"name": "beta3"}, "provisioner": "kubesim.io/local"}
        )
        node = NodeSpec(
            name="gpu-h",
            akash_labels=False,
            gpus=GpuSpec(
                model="h100", count=4, memory="80Gi", interface="sxm",
                product="NVIDIA-H100-80GB-HBM3",
            ),
        )  # fmt: skip
        core = client.CoreV1Api(api)
        body = node.node_object(9, "v1.32.0")
        core.create_node(body)  # the status is the kubelet's to report, as here
        core.patch_node_status("gpu-h", {"status": {k: body["status"][k] for k in STATUS}})
        found = await eventually(
            lambda: reported(bus), timeout_s=REACT_S, what="the new inventory", until=LOST.__eq__
        )
    finally:
        api.close()
    assert found == LOST
    counts = metric(provider)
    assert counts[("offered_not_advertised", "storage")] == 1
    assert counts[("offered_not_advertised", "gpu")] == 1
    assert counts[("advertised_not_offered", "storage")] == 0
    assert dashboard(provider) == {
        ("lost orders", "storage", "beta3 (persistent)"),
        ("lost orders", "gpu", "nvidia/h100/80Gi/sxm"),
    }
    result = check(provider)
    assert result.returncode == 1
    assert "lost orders: in the inventory, not advertised on chain" in result.stdout
    assert "capabilities/gpu/vendor/nvidia/model/h100=true" in result.stdout

    # an order for beta3 is lost until the chain advertises it; --sync-capabilities does
    tenant = chain.tenant("tenant-1")
    me = chain.wallet("provider").address
    lost = await tenant.deploy(parse_sdl(BETA3_SDL))
    [reason] = await eventually(
        lambda: declines(bus, lost.dseq), timeout_s=REACT_S, what="the beta3 order declined"
    )
    assert reason.startswith("storage_capability:")
    assert "matches no provider storage class" in reason
    api = ("--api", provider.devnet.lcd_url)
    preview = cli(provider, "update", "--sync-capabilities", "--dry-run", *api)
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert "capabilities/storage/3/class" in preview.stdout
    assert "not sent (--dry-run)" in preview.stdout
    synced = cli(provider, "update", "--sync-capabilities", *api)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "provider updated" in synced.stdout
    on_chain = {a.key: a.value for a in (await chain.lcd.provider(me)).attributes}
    assert on_chain["host"] == "akash" and on_chain["tier"] == "community"  # the rest kept
    assert on_chain["capabilities/gpu/vendor/nvidia/model/h100"] == "true"
    await eventually(
        lambda: reported(bus), timeout_s=REACT_S, what="the synced attributes", until=set().__eq__
    )
    bid_on = await tenant.deploy(parse_sdl(BETA3_SDL))

    async def bid_or_decline() -> tuple[list[Any], list[str]] | None:
        found = (await tenant.bids(bid_on.dseq, provider=me), await declines(bus, bid_on.dseq))
        return found if any(found) else None

    bids, declined = await eventually(bid_or_decline, timeout_s=REACT_S, what="a beta3 bid")
    assert declined == []
    [bid] = bids
    assert bid.id.provider == me
