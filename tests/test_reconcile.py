"""Chain events the provider never saw, noticed and repaired by the reconciliation sweeps.

One suite (relay, kubesim, cluster, bid engine, manifest, gateway) sweeping every second
with a one-second grace. With two leases running and a bid open, the relay is stopped, so
nothing the chain does from then on reaches the services as an event, and then:

- a running lease is closed on chain → the cluster tears it down (``lease_closed_deployed``);
- another running lease loses its record (Redis lost it) → the cluster adopts it back from
  its Manifest resource, and a lease namespace of a lease the chain never had is removed
  (``deployment_without_record``, adopted and removed);
- a reservation is made for an order the chain has never had → freed
  (``reservation_without_bid``);
- the deployment of the open bid is closed on chain → the bid engine closes its bid, with no
  ``CloseBid`` (the chain closed the bid with its order) (``bid_open_order_closed``).

Each repair is checked where it lands (Kubernetes, the records, the ledger), by its
``reconcile.repaired`` event and by ``provider_reconcile_repairs_total{kind}``.
"""

from __future__ import annotations

import asyncio
import re
import urllib.request

import kubernetes
from kubernetes.client import ApiClient, CoreV1Api

from akbidengine.domain.order import OrderRecord, record_key
from akbus import Bus, BusTx
from akcli.testing import DSEQS, Provider, certified, flow, sdl, stream
from akcluster.domain.leases import LEASES_KEY, WORK_KEY, LeaseRecord, lease_key
from akcluster.domain.objects.base import lease_labels
from akcluster.domain.objects.lease import namespace_object
from akcluster.reservations import RESERVATIONS_KEY
from akdevnet.testing import DevnetClients
from akservice.testing import RuntimeProcess, eventually
from aktypes.events import (
    BroadcastTx,
    ReconcileRepaired,
    ReserveResources,
    ResourcesReserved,
)
from aktypes.events.streams import BIDENGINE_EVENTS, CHAIN_TX, CLUSTER_COMMANDS, CLUSTER_EVENTS
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace

SWEEPS = {"INTERVAL": "1s", "GRACE": "1s"}


def metric(process: RuntimeProcess, kind: str) -> float:
    with urllib.request.urlopen(f"{process.health_url}/metrics", timeout=5) as reply:  # noqa: S310 - ours
        text = reply.read().decode()
    pattern = rf'^provider_reconcile_repairs_total\{{kind="{kind}"\}} (\S+)$'
    found = re.search(pattern, text, re.M)
    return float(found.group(1)) if found else 0.0


async def repaired(bus: Bus, stream_name: str) -> dict[tuple[str, str], str]:
    """(kind, lease or order) → action, of every repair published on ``stream_name``."""
    return {
        (e.payload.kind, str(e.payload.lease_id or e.payload.order_id)): e.payload.action
        for e in await stream(bus, stream_name)
        if isinstance(e.payload, ReconcileRepaired)
    }


def namespaces(api: ApiClient) -> set[str]:
    listed = CoreV1Api(api).list_namespace(label_selector="akash.network=true")
    return {ns.metadata.name for ns in listed.items if not ns.metadata.deletion_timestamp}


async def forget_record(bus: Bus, lease: LeaseID) -> None:
    """The lease's record gone from Redis, as if Redis had lost it."""

    async def forget(tx: BusTx) -> None:
        tx.state.delete(lease_key(lease))
        tx.state.srem(LEASES_KEY, str(lease))
        tx.state.zrem(WORK_KEY, str(lease))

    await bus.transact(forget)


async def test_what_missed_chain_events_left_behind_is_repaired(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.cluster_env = {f"AP_CLUSTER_RECONCILE_{k}": v for k, v in SWEEPS.items()}
    provider.bidengine_env = {
        **{f"AP_BID_RECONCILE_{k}": v for k, v in SWEEPS.items()},
        "AP_BID_TIMEOUT": "0",  # the open bid stays open: only the order's closing ends it
    }
    provider.start()
    tenant = chain.tenant("tenant-1")
    certificate = await certified(tenant, provider)
    closed, kept = await asyncio.gather(
        flow(provider, tenant, certificate, sdl(cpu=0.25), "closed on chain"),
        flow(provider, tenant, certificate, sdl(cpu=0.25), "record lost"),
    )
    gone, adopted = closed["leases"][0], kept["leases"][0]
    me = provider.devnet.signer("provider").address
    bidding = await tenant.deploy(sdl(cpu=0.25), dseq=next(DSEQS))
    await eventually(
        lambda: tenant.bids(bidding.dseq, provider=me), timeout_s=30, what="our open bid"
    )
    bid_order = str(bidding.group(1).order(1))

    async def bid_open() -> bool:
        raw = await bus.backend.get(record_key(bid_order))
        return raw is not None and OrderRecord.model_validate_json(raw).state == "open"

    await eventually(bid_open, timeout_s=30, what="the bid open in the bid engine's record")
    stray = LeaseID.parse(f"{tenant.address}/{next(DSEQS)}/1/1/{me}")  # never on chain
    lost_order = stray.order_id.model_copy(update={"dseq": next(DSEQS)})

    provider.relay.stop()  # from here, the chain's events reach no service
    await tenant.close(gone.dseq)
    await tenant.close(bidding.dseq)
    await forget_record(bus, adopted)
    api: ApiClient = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(provider.kubesim.kubeconfig)
    )
    try:
        body = namespace_object(stray, "", lease_labels(stray))
        await asyncio.to_thread(CoreV1Api(api).create_namespace, body)
        reply = await bus.request(
            CLUSTER_COMMANDS,
            ReserveResources(order_id=lost_order, group=closed["shape"].groups[0]),
            ResourcesReserved,
            timeout_s=10.0,
        )
        assert isinstance(reply, ResourcesReserved)

        expected = {
            ("lease_closed_deployed", str(gone)): "torn_down",
            ("deployment_without_record", str(adopted)): "adopted",
            ("deployment_without_record", str(stray)): "removed",
            ("reservation_without_bid", str(lost_order)): "freed",
        }

        async def cluster_repairs() -> dict[tuple[str, str], str]:
            found = await repaired(bus, CLUSTER_EVENTS)
            return found if expected.items() <= found.items() else {}

        found = await eventually(cluster_repairs, timeout_s=30, what="the cluster's repairs")
        assert expected.items() <= found.items()

        # (a) the closed lease is torn down; (b) the lease without a record runs on, recorded
        # again, and the stray namespace is gone
        async def torn_down() -> set[str]:
            left = await asyncio.to_thread(namespaces, api)
            return left if lease_namespace(gone) not in left else set()

        left = await eventually(torn_down, timeout_s=30, what="the closed lease torn down")
        assert lease_namespace(adopted) in left
        assert lease_namespace(stray) not in left
        raw = await bus.backend.get(lease_key(adopted))
        assert raw is not None and LeaseRecord.model_validate_json(raw).recovered
        # (c) the reservation of the order the chain never had is freed
        held = set(await bus.backend.hgetall(RESERVATIONS_KEY))
        assert str(lost_order) not in held
        assert str(adopted.order_id) in held
        for kind in (
            "lease_closed_deployed",
            "deployment_without_record",
            "reservation_without_bid",
        ):
            assert metric(provider.cluster(), kind) >= 1, kind
        assert metric(provider.cluster(), "deployment_without_record") >= 2
    finally:
        api.close()  # type: ignore[no-untyped-call]

    # (d) the bid engine closes the bid it held open for the closed order
    async def bid_repaired() -> dict[tuple[str, str], str]:
        return await repaired(bus, BIDENGINE_EVENTS)

    found = await eventually(bid_repaired, timeout_s=30, what="the bid engine's repair")
    assert found == {("bid_open_order_closed", bid_order): "closed"}
    raw = await bus.backend.get(record_key(bid_order))
    assert raw is not None
    record = OrderRecord.model_validate_json(raw)
    assert (record.state, record.cause) == ("closed", "order_closed")
    assert metric(provider.bidengine, "bid_open_order_closed") == 1
    sent = [e.payload for e in await stream(bus, CHAIN_TX) if isinstance(e.payload, BroadcastTx)]
    assert not [tx for tx in sent if tx.key == f"close-bid/{bid_order}"]  # closed by the chain
    assert str(bidding.group(1).order(1)) not in set(await bus.backend.hgetall(RESERVATIONS_KEY))
