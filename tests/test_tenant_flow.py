"""A tenant's whole path through the gateway, as Akash's own client takes it: a client
certificate on chain, the manifest over mTLS, the lease's status, the close.

Every process is real (devnet, Redis, relay, kubesim and its operators, cluster, bid engine,
manifest, gateway); what runs is read from kubesim with the official client (the Ingresses
are the hostname operator's), the reservations from the cluster's retained status. The
provider runs with static ingress hosts (the harness's default), so every HTTP service also
has Go's generated hostname; without them, an HTTP expose without a hostname is refused.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from operator import not_
from typing import Any

import kubernetes

from akbus import Bus
from akchain import msgs
from akcli.testing import (
    DSEQS,
    Provider,
    certified,
    flow,
    lease_status,
    leased,
    sdl,
    sdl_text,
)
from akdevnet.tenant import DEFAULT_DEPOSIT, ClientCertificate, Tenant
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.events import ClusterStatus
from aktypes.ids import DeploymentID, LeaseID
from aktypes.ingress import ingress_host
from aktypes.namespace import lease_namespace
from aktypes.sdl import SDL, parse_sdl

SHAPES = [
    "ghost.yaml",  # HTTP with a hostname
    "big-dipper.yaml",  # several services, hostnames
    "budibase.yaml",  # persistent storage (beta2)
    "vaultwarden.yaml",  # persistent storage
    "discourse.yaml",  # TCP node port, several services
    "metabase.yaml",  # HTTP and TCP, several services
    "softether-vpn.yaml",  # HTTP, TCP and UDP
    "kawpow-pool-ravencoin.yaml",  # TCP node ports, several services
    "CodiMD.yaml",  # several services, TCP
    "snake-game.yaml",  # several services, HTTP
    "matomo.yaml",  # several services
    "jitsi-meet.yaml",  # HTTP, TCP, several services
    "micro-services-example.yaml",
    "AI-Image-App.yaml",  # GPU, any model
    "flan-t5-xxl.yaml",  # GPU, a100 asked by name
    "ollama-gpu.yaml",  # GPU, TCP
    "anubis.yaml",
    "odoo.yaml",
    "tensorflow-webapp-mnist.yaml",
]
TWO_GROUPS = sdl_text(cpu=0.5).replace(
    """deployment:
  web:
    dc:
      profile: web
      count: 1""",
    """    dc2:
      attributes: {host: akash}
      pricing:
        web:
          denom: uact
          amount: 100000
deployment:
  web:
    dc:
      profile: web
      count: 1
    dc2:
      profile: web
      count: 2""",
)


def kube(provider: Provider) -> Any:
    """The official client's ``CoreV1Api`` on the provider's kubesim."""
    client = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        str(provider.kubesim.kubeconfig)
    )
    return kubernetes.client.CoreV1Api(client)


def ingresses(provider: Provider, namespace: str | None = None) -> list[Any]:
    """The Ingresses on kubesim (of one namespace, or all)."""
    client = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        str(provider.kubesim.kubeconfig)
    )
    api = kubernetes.client.NetworkingV1Api(client)
    if namespace is None:
        return list(api.list_ingress_for_all_namespaces().items)
    return list(api.list_namespaced_ingress(namespace).items)


def ingress_routes(provider: Provider, lease: LeaseID) -> set[tuple[str, str]]:
    """(host, Service) of every rule of the lease's Ingresses."""
    return {
        (rule.host, path.backend.service.name)
        for ingress in ingresses(provider, lease_namespace(lease))
        for rule in ingress.spec.rules
        for path in rule.http.paths
    }


async def uris_of(
    provider: Provider, tenant: Tenant, lease: LeaseID, certificate: ClientCertificate
) -> dict[str, set[str]]:
    """Each service's URIs, from the tenant's lease status through the gateway."""
    status, body = await lease_status(provider, tenant, lease, certificate)
    assert status == 200, body
    return {name: set(service["uris"] or ()) for name, service in body["services"].items()}


def lease_namespaces(provider: Provider) -> set[str]:
    """The lease namespaces that exist on kubesim."""
    listed = kube(provider).list_namespace(label_selector="akash.network=true")
    return {ns.metadata.name for ns in listed.items}


async def test_twenty_shapes_go_from_sdl_to_running_to_gone(
    provider: Provider, chain: DevnetClients, bus: Bus, corpus: Callable[[str], SDL]
) -> None:
    provider.cluster_env["AP_CLUSTER_PUBLIC_HOSTNAME"] = "provider.test"
    provider.operators = ("hostname",)  # the Ingresses, so the URIs
    provider.start()
    tenant = chain.tenant("tenant-1")
    certificate = await certified(tenant, provider)
    shapes = [(name, corpus(name)) for name in SHAPES] + [("two groups", parse_sdl(TWO_GROUPS))]
    gate = asyncio.Semaphore(5)

    async def one(name: str, shape: SDL) -> dict[str, Any]:
        async with gate:
            return await flow(provider, tenant, certificate, shape, name)

    results = await asyncio.gather(*(one(name, shape) for name, shape in shapes))
    assert len(results) == 20
    assert len(results[-1]["leases"]) == 2  # one lease per placement group
    generated: set[str] = set()
    for result in results:
        shape: SDL = result["shape"]
        for lease, body in result["reports"].items():
            group = next(
                g for g in shape.manifest.groups if g.name == shape.groups[lease.gseq - 1].name
            )
            hosts = {}  # what each service is reached by: its hostnames and Go's generated one
            for service in group.services or ():
                hosts[service.name] = {
                    h.lower() for e in service.expose or () for h in e.hosts or ()
                }
                if any(e.is_ingress for e in service.expose or ()):
                    made = ingress_host(lease, service.name, provider.ingress_domain)
                    hosts[service.name].add(made)
                    generated.add(made)
            uris = await eventually(  # running may be reported before the Ingresses are made
                lambda lease=lease: uris_of(provider, tenant, lease, certificate),
                timeout_s=30,
                what=f"{result['name']}: the URIs of {lease}",
                until=lambda found, hosts=hosts: found == hosts,
            )
            assert uris == hosts, result["name"]
            routed = ingress_routes(provider, lease)
            for service in group.services or ():
                assert {h for h, s in routed if s == service.name} == hosts[service.name]
                reported = body["services"][service.name]
                assert reported["total"] == service.count, result["name"]
                node_ports = [e for e in service.expose or () if e.global_ and not e.is_ingress]
                forwarded = body["forwarded_ports"].get(service.name, [])
                assert (
                    len(forwarded)
                    >= len({(e.effective_external_port, e.proto) for e in node_ports})
                    > 0
                    or not node_ports
                ), result["name"]
                for port in forwarded:
                    assert port["host"] == "provider.test"
                    assert 30000 <= port["externalPort"] <= 32767
            assert lease_namespace(lease) in lease_namespaces(provider)
    for result in results:
        await tenant.close(result["leases"][0].dseq)
    await eventually(
        lambda: lease_namespaces(provider),
        timeout_s=90,
        what="every namespace gone",
        until=lambda n: not n,
    )
    assert generated

    async def still_held() -> set[str]:  # released with each lease's teardown, in its time
        held = set(await bus.backend.hgetall("akcluster:hostnames"))
        return generated & (held | {i.spec.rules[0].host for i in ingresses(provider)})

    await eventually(still_held, timeout_s=30, what="generated hosts released", until=not_)

    async def reservations() -> tuple[int, int]:
        envelope = await bus.status("cluster")
        assert envelope is not None
        status: ClusterStatus = envelope.payload
        return status.reservations_pending, status.reservations_active

    await eventually(
        reservations, timeout_s=30, what="no reservation left", until=lambda r: r == (0, 0)
    )


async def test_bad_manifests_get_akash_status_codes_and_deploy_nothing(
    provider: Provider, chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    provider.ingress_domain = ""  # no static ingress hosts (Akash's default)
    provider.start()
    tenant, other = chain.tenant("tenant-1"), chain.tenant("tenant-2")
    certificate = await certified(tenant, provider)
    other_certificate = await certified(other, provider)
    url = provider.gateway.url
    web = parse_sdl(sdl_text(cpu=0.5).replace("as: 80\n", "as: 80\n        accept: [web.test]\n"))
    assert web.manifest.groups[0].services[0].expose[0].hosts == ["web.test"]
    [lease] = await leased(provider, tenant, web)

    async def put(
        body: str, dseq: int, cert: ClientCertificate | None = certificate
    ) -> tuple[int, Any]:
        return await tenant.gateway_request(
            "PUT", f"{url}/deployment/{dseq}/manifest", certificate=cert, body=body
        )

    def body_of(shape: SDL) -> str:
        return json.dumps(shape.manifest.go_json())

    # the wrong hash: another SDL's manifest
    status, answer = await put(body_of(sdl(cpu=0.7)), lease.dseq)
    assert status == 422, answer
    assert "version" in answer["message"] and web.manifest.version_hex() in answer["message"]
    # no client certificate
    status, answer = await put(body_of(web), lease.dseq, cert=None)
    assert status == 401, answer
    # another tenant's certificate: the deployment is not theirs
    status, answer = await put(body_of(web), lease.dseq, cert=other_certificate)
    assert status == 404, answer
    assert str(lease.dseq) in answer["message"]
    # malformed JSON
    status, answer = await put('[{"name": "dc", "services": [}', lease.dseq)
    assert status == 400, answer
    assert "line 1" in answer["message"] or "column" in answer["message"]
    # a deployment with no lease yet
    lonely = await tenant.deploy(sdl(cpu=0.8), dseq=next(DSEQS))
    status, answer = await put(body_of(sdl(cpu=0.8)), lonely.dseq)
    assert status == 404, answer
    assert "lease" in answer["message"]
    # a manifest whose hash is on chain but whose groups are not: cross-validation
    small, big = sdl(cpu=0.5), sdl(cpu=2)
    crossed = DeploymentID(owner=tenant.address, dseq=lonely.dseq + 1000)
    await tenant.wallet.send(
        msgs.create_deployment(crossed, list(small.groups), big.manifest_version, DEFAULT_DEPOSIT)
    )
    me = provider.devnet.signer("provider").address
    await eventually(
        lambda: tenant.bids(crossed.dseq, provider=me),
        timeout_s=60,
        what="a bid on the crossed one",
    )
    await tenant.accept(crossed.dseq, me)
    status, answer = await put(body_of(big), crossed.dseq)
    assert status == 422, answer
    assert "cpu" in answer["message"].lower()

    # an HTTP expose without a hostname, and the provider generates none: Go's refusal
    hostless = sdl(cpu=0.6)
    [bare] = await leased(provider, tenant, hostless)
    status, answer = await put(body_of(hostless), bare.dseq)
    assert status == 422, answer
    assert answer["message"].startswith(
        'manifest rejected: service "web" exposed on 80:TCP must have a hostname'
    )

    await asyncio.sleep(2)  # anything wrongly accepted would be deploying by now
    assert lease_namespaces(provider) == set()
    # and the right manifest still goes through
    assert (await put(body_of(web), lease.dseq))[0] == 200

    async def deployed() -> bool:
        return lease_namespace(lease) in lease_namespaces(provider)

    await eventually(deployed, timeout_s=60, what="the right manifest deployed")
