"""The operators in the whole suite (devnet, Redis, relay, kubesim, every service, the
inventory, hostname and IP operators) on a cluster the provider has never run on (nodes
carry only what GPU feature discovery and the device plugin set): the cluster takes its
inventory from the inventory operator, which labels the nodes, so bids follow the GPUs it
found; the cluster declares ProviderHosts (the accepted hostnames and, with static ingress
hosts, each HTTP service's generated one) and ProviderLeasedIPs and leaves the Ingresses and
LoadBalancer Services to the operators; the leased-IP capacity the bid engine is offered
comes from the IP operator's pool.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import kubernetes
import pytest

from akbus import Bus, RedisSettings
from akcli.testing import Provider, certified, leased, running, sdl, stream, whole_suite
from akdevnet.node import PROVIDER_ATTRIBUTES
from akdevnet.tenant import ClientCertificate, Tenant
from akdevnet.testing import DevnetClients
from akservice.testing import eventually, http_status
from aktypes.events import BidDeclined, ClusterStatus
from aktypes.events.streams import BIDENGINE_EVENTS
from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host
from aktypes.namespace import lease_namespace
from aktypes.sdl import SDL, parse_sdl

NGINX = "nginx.ingress.kubernetes.io"
SHARED_IP = "metallb.universe.tf/allow-shared-ip"
RTX4090 = "capabilities/gpu/vendor/nvidia/model/rtx4090"
SDL_TEXT = """
version: "2.0"
endpoints:
  myip:
    kind: ip
services:
  web:
    image: nginx:1.27
    expose:
      - port: 80
        as: 80
        accept: [shop.operators.test, www.operators.test]
        http_options: {read_timeout: 2500, max_body_size: 4194304}
        to:
          - global: true
      - port: 5432
        as: 5432
        to:
          - global: true
            ip: myip
profiles:
  compute:
    web:
      resources:
        cpu: {units: 0.25}
        memory: {size: 256Mi}
        storage: {size: 512Mi}
  placement:
    dc:
      attributes: {host: akash}
      pricing:
        web: {denom: uact, amount: 100000}
deployment:
  web:
    dc: {profile: web, count: 1}
"""


NODES = """
nodes:
  - {name: big-a, cpu: "64", memory: 256Gi, ephemeral-storage: 4Ti, akash-labels: false}
  - name: gpu-a
    cpu: "32"
    memory: 128Gi
    ephemeral-storage: 2Ti
    akash-labels: false
    gpus: {vendor: nvidia, model: a100, count: 2, memory: 80Gi, interface: sxm}
  - name: gpu-shared
    cpu: "16"
    memory: 64Gi
    ephemeral-storage: 1Ti
    akash-labels: false
    gpus: {vendor: nvidia, model: rtx4090, count: 1, replicas: 4, memory: 24Gi, interface: pcie}
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with whole_suite(
        tmp_path_factory.mktemp("suite"),
        nodes=NODES,
        operators=("hostname", "ip"),
        operator_env={
            "AP_IP_POOL": "203.0.113.10-203.0.113.13",
            "AP_HOSTNAME_RETRY": "500ms",
            "AP_IP_RETRY": "500ms",
        },
        cluster_env={"AP_CLUSTER_PUBLIC_HOSTNAME": "provider.test"},
        # the devnet's provider advertises the embedded inventory's GPUs; these nodes have
        # time-sliced rtx4090s too
        attributes={**PROVIDER_ATTRIBUTES, RTX4090: "true"},
    ) as provider:
        yield provider


@pytest.fixture
async def chain(suite: Provider) -> AsyncIterator[DevnetClients]:
    async with suite.devnet.clients() as clients:
        yield clients


def routed(provider: Provider) -> dict[str, Any]:
    """What the operators made on kubesim: Ingresses by ``namespace/host`` and
    LoadBalancer Services by ``namespace/name``."""
    api = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        str(provider.kubesim.kubeconfig)
    )
    try:
        ingresses = api.sanitize_for_serialization(
            kubernetes.client.NetworkingV1Api(api).list_ingress_for_all_namespaces().items
        )
        services = api.sanitize_for_serialization(
            kubernetes.client.CoreV1Api(api).list_service_for_all_namespaces().items
        )
    finally:
        api.close()
    return {
        "ingresses": {
            f"{i['metadata']['namespace']}/{i['spec']['rules'][0]['host']}": i for i in ingresses
        },
        "balancers": {
            f"{s['metadata']['namespace']}/{s['metadata']['name']}": s
            for s in services
            if s["spec"]["type"] == "LoadBalancer"
        },
    }


async def deployed(
    provider: Provider, tenant: Tenant, certificate: ClientCertificate, shape: SDL
) -> LeaseID:
    [lease] = await leased(provider, tenant, shape)
    status, answer = await tenant.send_manifest_answer(
        lease.dseq, shape, provider.gateway.url, certificate=certificate
    )
    assert status == 200, answer

    async def answer_of() -> tuple[int, Any]:
        return await tenant.lease_status(
            lease.dseq, lease.gseq, lease.oseq, provider.gateway.url, certificate
        )

    await eventually(answer_of, timeout_s=90, what=f"{lease} running", until=running(shape, lease))
    return lease


@pytest.mark.timeout(300)
async def test_hostnames_and_a_leased_ip_are_routed_by_the_operators_and_torn_down(
    suite: Provider, chain: DevnetClients
) -> None:
    tenant = chain.tenant("tenant-1")
    certificate = await certified(tenant, suite)
    shape = parse_sdl(SDL_TEXT)
    first = await deployed(suite, tenant, certificate, shape)
    ns = lease_namespace(first)
    generated = ingress_host(first, "web", suite.ingress_domain)  # static ingress hosts
    made = await eventually(
        lambda: _routed(suite),
        timeout_s=30,
        what="three Ingresses and a LoadBalancer port",
        until=lambda r: len(r["ingresses"]) == 3 and len(r["balancers"]) == 1,
    )
    assert set(made["ingresses"]) == {
        f"{ns}/shop.operators.test",
        f"{ns}/www.operators.test",
        f"{ns}/{generated}",
    }
    for host in ("shop.operators.test", generated):
        ingress = made["ingresses"][f"{ns}/{host}"]
        labels, annotations = ingress["metadata"]["labels"], ingress["metadata"]["annotations"]
        assert labels["app.kubernetes.io/managed-by"] == "akash-hostname-operator"
        assert annotations[f"{NGINX}/proxy-read-timeout"] == "3"
        assert annotations[f"{NGINX}/proxy-body-size"] == "4194304"
        backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]
        assert backend == {"service": {"name": "web", "port": {"number": 80}}}
    status, body = await tenant.lease_status(
        first.dseq, first.gseq, first.oseq, suite.gateway.url, certificate
    )
    assert status == 200, body
    assert sorted(body["services"]["web"]["uris"]) == sorted(
        ["shop.operators.test", "www.operators.test", generated]
    )
    [balancer] = made["balancers"].values()
    assert balancer["metadata"]["namespace"] == ns
    assert balancer["metadata"]["name"] == "web-ip-5432-tcp"
    key = balancer["metadata"]["annotations"][SHARED_IP]
    pool = suite.operator("ip")
    assert _pool(pool.health_url)["sharing_keys"] == [key]

    # the second lease of the same owner: the hostnames move to it on request
    second = await deployed(suite, tenant, certificate, shape)
    moved_to = lease_namespace(second)
    status, answer = await tenant.gateway_request(
        "POST",
        f"{suite.gateway.url}/hostname/migrate",
        certificate=certificate,
        body=json.dumps(
            {
                "hostnames_to_migrate": ["shop.operators.test"],
                "destination_dseq": second.dseq,
                "destination_gseq": 1,
            }
        ),
    )
    assert (status, answer) == (200, {"transferred": ["shop.operators.test"]})
    after = await eventually(
        lambda: _routed(suite),
        timeout_s=30,
        what="shop's Ingress in the second lease",
        until=lambda r: (
            f"{moved_to}/shop.operators.test" in r["ingresses"]
            and f"{ns}/shop.operators.test" not in r["ingresses"]
        ),
    )
    assert f"{ns}/www.operators.test" in after["ingresses"]
    assert f"{moved_to}/{ingress_host(second, 'web', suite.ingress_domain)}" in after["ingresses"]
    assert f"{ns}/{generated}" in after["ingresses"]  # a generated hostname stays its lease's

    # both leases close: every Ingress and LoadBalancer Service goes with them
    for lease in (first, second):
        await tenant.close(lease.dseq)
    await eventually(
        lambda: _routed(suite),
        timeout_s=60,
        what="nothing routed any more",
        until=lambda r: not r["ingresses"] and not r["balancers"],
    )
    await eventually(  # the pool counts the Services' deletions as they are watched
        lambda: _pool(pool.health_url)["in_use"],
        timeout_s=10,
        what="the pool free",
        until=lambda used: used == 0,
    )


async def _routed(provider: Provider) -> dict[str, Any]:
    return routed(provider)


def _pool(url: str) -> dict[str, Any]:
    status, body = http_status(f"{url}/v1/pool")
    assert status == 200 and isinstance(body, dict)
    return body


async def test_bids_follow_the_gpus_the_inventory_operator_found(
    suite: Provider, chain: DevnetClients
) -> None:
    status, inventory = http_status(f"{suite.operator('inventory').health_url}/v1/inventory")
    assert status == 200 and isinstance(inventory, dict)
    gpus = {n["name"]: n["gpus"] for n in inventory["nodes"]}
    [a100] = gpus["gpu-a"]
    assert (a100["model"], a100["memory"], a100["interface"], a100["count"]) == (
        "a100", "80Gi", "sxm", 2,
    )  # fmt: skip
    [shared] = gpus["gpu-shared"]  # one card, time-sliced into four
    assert (shared["model"], shared["count"], shared["physical"], shared["replicas"]) == (
        "rtx4090", 4, 1, 4,
    )  # fmt: skip
    assert gpus["big-a"] == []

    tenant = chain.tenant("tenant-2")
    me = suite.devnet.signer("provider").address
    wanted = await tenant.deploy(sdl(cpu=1, gpu="a100"))
    sliced = await tenant.deploy(sdl(cpu=1, gpu="rtx4090"))
    other = await tenant.deploy(sdl(cpu=1, gpu="h100"))
    for deployment in (wanted, sliced):

        async def bid_or_decline(d: Any = deployment) -> Any:
            return await tenant.bids(d.dseq, provider=me) or await _declined(suite, d.dseq)

        found = await eventually(bid_or_decline, timeout_s=60, what=f"a bid on {deployment.dseq}")
        assert isinstance(found, list), found
    declined = await eventually(
        lambda: _declined(suite, other.dseq),
        timeout_s=60,
        what=f"the h100 order {other.dseq} declined",
    )
    assert {r.code for r in declined.reasons} == {"gpu_capability"}  # no h100 offered
    assert await tenant.bids(other.dseq, provider=me) == []

    # a cordoned node leaves the inventory, and the cluster's, within seconds
    api = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        str(suite.kubesim.kubeconfig)
    )
    core = kubernetes.client.CoreV1Api(api)
    try:
        core.patch_node("gpu-shared", {"spec": {"unschedulable": True}})
        nodes = await eventually(
            lambda: _cluster_nodes(suite),
            timeout_s=5,
            what="gpu-shared gone from the cluster's inventory",
            until=lambda names: "gpu-shared" not in names,
        )
        assert {"big-a", "gpu-a"} <= nodes
        await eventually(  # the labels go just after the inventory is published
            lambda: [k for k in core.read_node("gpu-shared").metadata.labels if "akash" in k],
            timeout_s=5,
            what="gpu-shared's Akash labels gone",
            until=lambda left: left == [],
        )
        again = await tenant.deploy(sdl(cpu=1, gpu="rtx4090"))
        refused = await eventually(
            lambda: _declined(suite, again.dseq),
            timeout_s=60,
            what="an rtx4090 order declined while gpu-shared is cordoned",
        )
        assert {r.code for r in refused.reasons} == {"gpu_unavailable"}  # none left to reserve
    finally:
        core.patch_node("gpu-shared", {"spec": {"unschedulable": False}})
        api.close()
    await eventually(
        lambda: _cluster_nodes(suite),
        timeout_s=5,
        what="gpu-shared back",
        until=lambda names: "gpu-shared" in names,
    )


@contextlib.asynccontextmanager
async def _bus(provider: Provider) -> AsyncIterator[Bus]:
    bus = Bus.connect(RedisSettings(url=provider.redis_url), producer="test")
    try:
        yield bus
    finally:
        await bus.close()


async def _declined(provider: Provider, dseq: int) -> BidDeclined | None:
    async with _bus(provider) as bus:
        found = await stream(bus, BIDENGINE_EVENTS)
    for envelope in found:
        payload = envelope.payload
        if isinstance(payload, BidDeclined) and payload.order_id.dseq == dseq:
            return payload
    return None


async def _cluster_nodes(provider: Provider) -> set[str]:
    async with _bus(provider) as bus:
        status = await bus.status("cluster")
    payload = status.payload if status is not None else None
    return {n.name for n in payload.nodes} if isinstance(payload, ClusterStatus) else set()
