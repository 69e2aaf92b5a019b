"""From lease to running workload, across real processes: devnet, Redis, relay, kubesim,
cluster, bid engine, manifest service.

Manifests are sent the way the gateway sends them (``SubmitManifest`` on the manifest
service's command stream); what is deployed is read from kubesim with the official client
and from the chain, never from the services' internals.
"""

from __future__ import annotations

import asyncio
import re
import signal
import urllib.request
from collections.abc import Callable
from typing import Any

import kubernetes

from akbus import Bus
from akchain import msgs
from akcli.testing import Provider, sdl, sdl_text, stream
from akdevnet.tenant import Tenant
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.events import (
    GetLeaseStatus,
    LeaseClosedReason,
    LeaseQueryFailed,
    LeaseStatusReport,
    ManifestAccepted,
    ManifestRejected,
    SubmitManifest,
)
from aktypes.events.streams import CHAIN_TX, CLUSTER_COMMANDS, MANIFEST_COMMANDS
from aktypes.ids import DeploymentID, LeaseID
from aktypes.namespace import lease_namespace
from aktypes.sdl import SDL, parse_sdl

FAST_MONITOR = {
    "AP_MONITOR_RETRY_PERIOD": "500ms",
    "AP_MONITOR_RETRY_PERIOD_JITTER": "0s",
    "AP_MONITOR_HEALTHCHECK_PERIOD": "500ms",
    "AP_MONITOR_HEALTHCHECK_PERIOD_JITTER": "0s",
}


def core(provider: Provider) -> Any:
    client = kubernetes.config.new_client_from_config(str(provider.kubesim.kubeconfig))
    return kubernetes.client.CoreV1Api(client), kubernetes.client.AppsV1Api(client)


async def lease_of(provider: Provider, tenant: Tenant, sdl_: SDL) -> list[LeaseID]:
    """Deploy ``sdl_``, wait for our bid on every group, accept them: the leases."""
    me = provider.devnet.signer("provider").address
    deployment = await tenant.deploy(sdl_)
    dseq = deployment.dseq
    groups = len(sdl_.groups)

    async def bids() -> Any:
        found = await tenant.bids(dseq, provider=me)
        return found if len(found) == groups else None

    await eventually(bids, timeout_s=60, what=f"our bids on deployment {dseq}")
    return await tenant.accept(dseq, me)


async def submit(bus: Bus, owner: str, dseq: int, sdl_: SDL) -> Any:
    return await bus.request(
        MANIFEST_COMMANDS,
        SubmitManifest(deployment_id=DeploymentID(owner=owner, dseq=dseq), manifest=sdl_.manifest),
        (ManifestAccepted, ManifestRejected),
        timeout_s=30,
    )


async def lease_status(bus: Bus, lease: LeaseID) -> LeaseStatusReport | LeaseQueryFailed:
    return await bus.request(
        CLUSTER_COMMANDS, GetLeaseStatus(lease_id=lease), (LeaseStatusReport, LeaseQueryFailed)
    )


async def all_available(bus: Bus, lease: LeaseID) -> LeaseStatusReport | None:
    status = await lease_status(bus, lease)
    if not isinstance(status, LeaseStatusReport) or not status.services:
        return None
    ok = all(s.available >= s.total > 0 for s in status.services.values())
    return status if ok else None


def namespaces(provider: Provider) -> set[str]:
    api, _ = core(provider)
    return {
        ns.metadata.name for ns in api.list_namespace(label_selector="akash.network=true").items
    }


async def test_a_manifest_runs_on_kubesim_reports_status_and_is_torn_down_on_close(
    provider: Provider, chain: DevnetClients, bus: Bus, corpus: Callable[[str], SDL]
) -> None:
    provider.cluster_env.update(FAST_MONITOR)
    provider.start()
    tenant = chain.tenant("tenant-1")
    web = corpus("ghost.yaml")
    [lease] = await lease_of(provider, tenant, web)
    reply = await submit(bus, tenant.address, lease.dseq, web)
    assert isinstance(reply, ManifestAccepted), reply
    status = await eventually(
        lambda: all_available(bus, lease), timeout_s=60, what="the lease's services available"
    )
    assert set(status.services) == {s.name for s in web.manifest.groups[0].services}
    assert lease_namespace(lease) in namespaces(provider)
    await tenant.close(lease.dseq)

    async def gone() -> bool:
        return lease_namespace(lease) not in namespaces(provider)

    await eventually(gone, timeout_s=60, what="the lease's namespace removed")
    closes = [e for e in await stream(bus, CHAIN_TX) if "close-bid/unstable" in e.payload.key]
    assert closes == []


def workloads(provider: Provider, lease: LeaseID) -> list[tuple[str, int]]:
    """(name, replicas) of every Deployment and StatefulSet in the lease's namespace."""
    _, apps = core(provider)
    namespace = lease_namespace(lease)
    found = [
        (d.metadata.name, d.spec.replicas) for d in apps.list_namespaced_deployment(namespace).items
    ]
    found += [
        (s.metadata.name, s.spec.replicas)
        for s in apps.list_namespaced_stateful_set(namespace).items
    ]
    return sorted(found)


def unreachable_checks(provider: Provider) -> float:
    """Health checks the cluster could not make because Kubernetes was unreachable."""
    url = f"{provider.cluster().health_url}/metrics"
    with urllib.request.urlopen(url, timeout=5) as reply:  # noqa: S310 - our own process
        text = reply.read().decode()
    found = re.search(
        r'^provider_deployment_monitor_health_total\{state="err"\} (\S+)$', text, re.M
    )
    return float(found.group(1)) if found else 0.0


async def lease_state(tenant: Tenant, lease: LeaseID) -> str:
    return str((await tenant.lcd.lease(lease)).state)


async def test_no_lease_is_lost_or_doubled_when_the_cluster_and_then_everything_is_killed(
    provider: Provider, chain: DevnetClients, bus: Bus, corpus: Callable[[str], SDL]
) -> None:
    provider.cluster_env.update(FAST_MONITOR)
    provider.start()
    tenant = chain.tenant("tenant-1")
    shapes = [corpus("ghost.yaml"), corpus("budibase.yaml"), corpus("CodiMD.yaml"), sdl(count=3)]
    leases = [await lease_of(provider, tenant, shape) for shape in shapes]
    for [lease], shape in zip(leases, shapes, strict=True):
        reply = await submit(bus, tenant.address, lease.dseq, shape)
        assert isinstance(reply, ManifestAccepted), reply
    provider.cluster().kill()  # mid-deploy: some applied, some half-applied, some not begun
    provider.cluster().start()
    for [lease] in leases:
        await eventually(
            lambda lease=lease: all_available(bus, lease), timeout_s=60, what=f"{lease} available"
        )
    expected = {
        lease: sorted((s.name, s.count) for s in shape.manifest.groups[0].services)
        for [lease], shape in zip(leases, shapes, strict=True)
    }
    assert {lease: workloads(provider, lease) for lease in expected} == expected
    assert namespaces(provider) == {lease_namespace(lease) for lease in expected}

    for name in ("relay", "cluster-0", "bidengine", "manifest"):  # everything at once
        provider.processes[name].kill()
    for name in ("relay", "cluster-0", "bidengine", "manifest"):
        provider.processes[name].start()
    for lease in expected:
        await eventually(
            lambda lease=lease: all_available(bus, lease),
            timeout_s=60,
            what=f"{lease} available again",
        )
    assert {lease: workloads(provider, lease) for lease in expected} == expected
    assert namespaces(provider) == {lease_namespace(lease) for lease in expected}
    # and it goes on working: one more lease, deployed once
    extra = sdl(cpu=0.5)
    [lease] = await lease_of(provider, tenant, extra)
    assert isinstance(await submit(bus, tenant.address, lease.dseq, extra), ManifestAccepted)
    await eventually(
        lambda: all_available(bus, lease), timeout_s=60, what="the new lease available"
    )
    assert workloads(provider, lease) == [("web", 1)]


async def test_an_api_outage_closes_nothing_and_only_the_crashing_lease_is_closed(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.cluster_env.update({**FAST_MONITOR, "AP_MONITOR_MAX_RETRIES": "4"})
    provider.start()
    tenant = chain.tenant("tenant-1")
    [healthy] = await lease_of(provider, tenant, sdl(cpu=0.5))
    [crashing] = await lease_of(provider, tenant, sdl(cpu=0.6))
    for lease, shape in ((healthy, sdl(cpu=0.5)), (crashing, sdl(cpu=0.6))):
        assert isinstance(await submit(bus, tenant.address, lease.dseq, shape), ManifestAccepted)
        await eventually(
            lambda lease=lease: all_available(bus, lease), timeout_s=60, what="available"
        )
    # the API server is gone for far longer than 4 checks × 0.5 s: the monitor keeps
    # checking (and failing to reach it) well past its budget, judging nothing
    provider.kubesim.faults(unavailable={"seconds": 8})
    before = unreachable_checks(provider)
    await eventually(
        lambda: unreachable_checks(provider) - before,
        timeout_s=30,
        what="more unreachable checks than the retry budget",
        until=lambda n: n > 2 * 4,
    )
    await eventually(lambda: all_available(bus, healthy), timeout_s=30, what="healthy again")
    assert await lease_state(tenant, healthy) == "active"
    assert await lease_state(tenant, crashing) == "active"
    closes = [e for e in await stream(bus, CHAIN_TX) if "close-bid/unstable" in e.payload.key]
    assert closes == []

    provider.kubesim.faults(
        crashloop={"namespace": lease_namespace(crashing), "selector": "akash.network=true"}
    )

    async def closed() -> bool:
        return await lease_state(tenant, crashing) != "active"

    await eventually(closed, timeout_s=60, what="the crash-looping lease closed")
    closed_lease = await tenant.lcd.lease(crashing)
    assert closed_lease.reason == LeaseClosedReason.UNSTABLE, closed_lease
    await eventually(
        lambda: lease_namespace(crashing) not in namespaces(provider),
        timeout_s=60,
        what="torn down",
    )
    assert await lease_state(tenant, healthy) == "active"
    assert lease_namespace(healthy) in namespaces(provider)
    closes = [e for e in await stream(bus, CHAIN_TX) if "close-bid/unstable" in e.payload.key]
    assert [e.payload.key for e in closes] == [f"close-bid/unstable/{crashing}"]


async def test_a_lease_closed_while_the_cluster_is_down_is_torn_down_after_restart(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.start()
    tenant = chain.tenant("tenant-1")
    shape = sdl(cpu=0.5)
    [lease] = await lease_of(provider, tenant, shape)
    assert isinstance(await submit(bus, tenant.address, lease.dseq, shape), ManifestAccepted)
    await eventually(lambda: all_available(bus, lease), timeout_s=60, what="available")
    provider.cluster().stop(signal.SIGKILL)
    await tenant.close(lease.dseq)
    await eventually(lambda: lease_state(tenant, lease), timeout_s=30, what="closed on chain")
    await asyncio.sleep(1)
    assert lease_namespace(lease) in namespaces(provider)  # nobody removed it meanwhile
    provider.cluster().start()
    await eventually(
        lambda: lease_namespace(lease) not in namespaces(provider), timeout_s=60, what="torn down"
    )
    status = await lease_status(bus, lease)
    assert isinstance(status, LeaseQueryFailed) and status.code == "not_found"


async def test_a_manifest_update_rolls_the_pods_and_a_rename_is_refused(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.cluster_env.update(FAST_MONITOR)
    provider.start()
    tenant = chain.tenant("tenant-1")
    first = sdl(cpu=0.5)
    [lease] = await lease_of(provider, tenant, first)
    assert isinstance(await submit(bus, tenant.address, lease.dseq, first), ManifestAccepted)
    await eventually(lambda: all_available(bus, lease), timeout_s=60, what="available")
    api, apps = core(provider)
    namespace = lease_namespace(lease)
    before = {p.metadata.name for p in api.list_namespaced_pod(namespace).items}

    updated = parse_sdl(sdl_text(cpu=0.5).replace("nginx:1.27", "nginx:1.28"))
    deployment_id = DeploymentID(owner=tenant.address, dseq=lease.dseq)
    await tenant.wallet.send(msgs.update_deployment(deployment_id, updated.manifest_version))
    reply = await eventually(
        lambda: submit(bus, tenant.address, lease.dseq, updated),
        timeout_s=30,
        what="the update accepted (once the chain has the new hash)",
        until=lambda r: isinstance(r, ManifestAccepted),
    )
    assert reply.version == updated.manifest.version_hex()

    def rolled() -> bool:
        pods = api.list_namespaced_pod(namespace).items
        images = {c.image for p in pods for c in p.spec.containers}
        names = {p.metadata.name for p in pods}
        return images == {"nginx:1.28"} and not names & before

    await eventually(rolled, timeout_s=60, what="the pods replaced with the new image")
    [deployment] = apps.list_namespaced_deployment(namespace).items
    assert deployment.spec.template.spec.containers[0].image == "nginx:1.28"
    await eventually(lambda: all_available(bus, lease), timeout_s=60, what="available again")

    renamed = parse_sdl(sdl_text(cpu=0.5).replace("web", "site"))
    await tenant.wallet.send(msgs.update_deployment(deployment_id, renamed.manifest_version))
    refused = await eventually(
        lambda: submit(bus, tenant.address, lease.dseq, renamed),
        timeout_s=30,
        what="the rename refused",
        until=lambda r: isinstance(r, ManifestRejected) and r.code != "version_mismatch",
    )
    assert refused.code == "services_changed", refused
    assert "web" in refused.reason and "site" in refused.reason
    assert workloads(provider, lease) == [("web", 1)]


async def test_the_null_backend_deploys_without_a_cluster(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.backend = "null"
    provider.start()
    tenant = chain.tenant("tenant-1")
    shape = sdl(cpu=0.5, count=2)
    [lease] = await lease_of(provider, tenant, shape)
    assert isinstance(await submit(bus, tenant.address, lease.dseq, shape), ManifestAccepted)
    status = await eventually(lambda: all_available(bus, lease), timeout_s=30, what="available")
    assert status.services["web"].total == 2
    await tenant.close(lease.dseq)
    closed = await eventually(
        lambda: lease_status(bus, lease),
        timeout_s=30,
        what="forgotten after the close",
        until=lambda s: isinstance(s, LeaseQueryFailed),
    )
    assert closed.code == "not_found"


async def test_a_cluster_without_its_records_adopts_deployed_leases_and_removes_orphans(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    """Redis lost, or a cluster moved from Akash's provider: the Manifest resources are the
    truth; a lease namespace without one is a leftover."""
    provider.cluster_env.update(FAST_MONITOR)
    provider.start()
    tenant = chain.tenant("tenant-1")
    shape = sdl(cpu=0.5)
    [lease] = await lease_of(provider, tenant, shape)
    assert isinstance(await submit(bus, tenant.address, lease.dseq, shape), ManifestAccepted)
    await eventually(lambda: all_available(bus, lease), timeout_s=60, what="available")
    provider.cluster().stop()
    record = f"akcluster:lease:{lease}"
    assert await bus.backend.get(record)
    deleted = await bus.backend.delete(
        record,
        "akcluster:leases",
        "akcluster:work",
        "akcluster:hostnames",
        "akcluster:hostnames:version",
        "akcluster:reservations",
        "akcluster:reservations:version",
    )
    assert deleted >= 4
    api, _ = core(provider)
    orphan = LeaseID.parse(f"{tenant.address}/999/1/1/{lease.provider}")
    labels = {
        "akash.network": "true",
        "akash.network/lease.id.owner": orphan.owner,
        "akash.network/lease.id.dseq": "999",
        "akash.network/lease.id.gseq": "1",
        "akash.network/lease.id.oseq": "1",
        "akash.network/lease.id.provider": orphan.provider,
    }
    api.create_namespace({"metadata": {"name": lease_namespace(orphan), "labels": labels}})
    provider.cluster().start()
    status = await eventually(lambda: all_available(bus, lease), timeout_s=60, what="adopted")
    assert set(status.services) == {"web"}
    await eventually(
        lambda: lease_namespace(orphan) not in namespaces(provider),
        timeout_s=60,
        what="the orphan namespace removed",
    )

    async def reserved() -> int:
        envelope = await bus.status("cluster")
        return envelope.payload.reservations_active if envelope else 0

    await eventually(reserved, timeout_s=30, what="the adopted lease's reservation")
    await tenant.close(lease.dseq)
    await eventually(
        lambda: lease_namespace(lease) not in namespaces(provider), timeout_s=60, what="torn down"
    )
