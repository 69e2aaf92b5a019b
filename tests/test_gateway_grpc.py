"""The gateway's gRPC API against the running suite, the way grpcurl uses it: the services
and their messages come from the server's reflection, not from our generated modules.

One provider for the module (devnet, Redis, relay, kubesim, every service, gateway).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pool, empty_pb2, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from akchain import msgs
from akchain.convert import group_spec_pb, lease_id_pb
from akcli.testing import Provider, certified, leased, sdl, whole_suite
from akdevnet.testing import DevnetClients
from akgateway._pb.akash.provider.lease.v1 import lease_pb2
from akgateway.domain.lease_rpc import manifest_pb
from akgateway.testing import make_certificate
from akservice.testing import eventually
from aktypes.manifest import Manifest

SERVICE = "akash.provider.v1.ProviderRPC"
LEASE_SERVICE = "akash.provider.lease.v1.LeaseRPC"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with whole_suite(
        tmp_path_factory.mktemp("suite"),
        operators=("hostname",),
        cluster_env={
            "AP_CLUSTER_PUBLIC_HOSTNAME": "provider.test",
            "AP_DEPLOYMENT_BLOCKED_HOSTNAMES": ".blocked.test",
        },
    ) as provider:
        yield provider


@pytest.fixture
async def chain(suite: Provider) -> AsyncIterator[DevnetClients]:
    async with suite.devnet.clients() as clients:
        yield clients


@pytest.fixture
async def channel(suite: Provider) -> AsyncIterator[grpc.aio.Channel]:
    creds = grpc.ssl_channel_credentials(root_certificates=suite.gateway.server_certificate())
    async with grpc.aio.secure_channel(suite.gateway.grpc_target, creds) as channel:
        yield channel


class Reflected:
    """The server's messages, learned over reflection (synchronously, as grpcurl does)."""

    def __init__(self, suite: Provider) -> None:
        creds = grpc.ssl_channel_credentials(root_certificates=suite.gateway.server_certificate())
        self._channel = grpc.secure_channel(suite.gateway.grpc_target, creds)
        self.database = ProtoReflectionDescriptorDatabase(self._channel)
        self.pool = descriptor_pool.DescriptorPool(self.database)

    def close(self) -> None:
        self._channel.close()

    def message(self, name: str) -> Any:
        return message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name))

    def method(
        self, channel: grpc.aio.Channel, name: str, *, stream: bool = False, service: str = SERVICE
    ) -> Any:
        found = self.pool.FindServiceByName(service).methods_by_name[name]
        path = f"/{service}/{name}"
        request = self.message(found.input_type.full_name)
        response = self.message(found.output_type.full_name)
        call = channel.unary_stream if stream else channel.unary_unary
        return call(
            path,
            request_serializer=request.SerializeToString,
            response_deserializer=response.FromString,
        ), request


@pytest.fixture
def reflected(suite: Provider) -> Iterator[Reflected]:
    found = Reflected(suite)
    yield found
    found.close()


async def test_reflection_lists_the_services_and_health_answers(
    reflected: Reflected, channel: grpc.aio.Channel
) -> None:
    services = set(reflected.database.get_services())
    assert {
        SERVICE,
        LEASE_SERVICE,
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= services
    rpc = reflected.pool.FindServiceByName(SERVICE)
    assert {m.name: (m.input_type.full_name, m.output_type.full_name) for m in rpc.methods} == {
        "GetStatus": ("google.protobuf.Empty", "akash.provider.v1.Status"),
        "StreamStatus": ("google.protobuf.Empty", "akash.provider.v1.Status"),
        "BidScreening": (
            "akash.provider.v1.BidScreeningRequest",
            "akash.provider.v1.BidScreeningResponse",
        ),
    }
    # Akash's field numbers, as a client built from Akash's .proto expects them
    status = reflected.pool.FindMessageTypeByName("akash.provider.v1.Status")
    assert {f.name: f.number for f in status.fields} == {
        "errors": 1,
        "cluster": 2,
        "bid_engine": 3,
        "manifest": 4,
        "public_hostnames": 5,
        "timestamp": 6,
    }
    leases = reflected.pool.FindServiceByName(LEASE_SERVICE)
    status_call = (
        "akash.provider.lease.v1.ServiceStatusRequest",
        "akash.provider.lease.v1.ServiceStatusResponse",
    )
    logs_call = (
        "akash.provider.lease.v1.ServiceLogsRequest",
        "akash.provider.lease.v1.ServiceLogsResponse",
    )
    assert {m.name: (m.input_type.full_name, m.output_type.full_name) for m in leases.methods} == {
        "SendManifest": (
            "akash.provider.lease.v1.SendManifestRequest",
            "akash.provider.lease.v1.SendManifestResponse",
        ),
        "ServiceStatus": status_call,
        "StreamServiceStatus": status_call,
        "ServiceLogs": logs_call,
        "StreamServiceLogs": logs_call,
    }
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", SERVICE, LEASE_SERVICE):
        answer = await health.Check(health_pb2.HealthCheckRequest(service=name))
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


async def test_get_status_is_filled_from_the_running_suite(
    suite: Provider, reflected: Reflected, channel: grpc.aio.Channel
) -> None:
    get_status, _ = reflected.method(channel, "GetStatus")

    async def status() -> Any:
        return await get_status(empty_pb2.Empty())

    found = await eventually(
        status, timeout_s=30, what="every service's status", until=lambda s: not s.errors
    )
    assert found.HasField("bid_engine") and found.HasField("manifest")
    assert list(found.public_hostnames) == ["provider.test"]
    age = dt.datetime.now(dt.UTC) - found.timestamp.ToDatetime(dt.UTC)
    assert abs(age.total_seconds()) < 5
    nodes = found.cluster.inventory.cluster.nodes
    with urllib.request.urlopen(f"{suite.kubesim.url}/api/v1/nodes") as answer:  # noqa: S310
        kube_nodes = [n["metadata"]["name"] for n in json.load(answer)["items"]]
    assert sorted(n.name for n in nodes) == sorted(kube_nodes)
    for node in nodes:
        cpu = node.resources.cpu.quantity
        assert cpu.allocatable.string not in ("", "0"), node
        assert node.resources.memory.quantity.allocatable.string.isdigit()


async def test_stream_status_pushes_an_update_after_a_new_lease(
    suite: Provider, chain: DevnetClients, reflected: Reflected, channel: grpc.aio.Channel
) -> None:
    stream_status, _ = reflected.method(channel, "StreamStatus", stream=True)
    call = stream_status(empty_pb2.Empty())
    first = await asyncio.wait_for(call.read(), 30)
    before = first.cluster.leases.active
    tenant = chain.tenant("tenant-1")
    certificate = await certified(tenant, suite)
    shape = sdl(cpu=0.25)
    [lease] = await leased(suite, tenant, shape)
    status, answer = await tenant.send_manifest_answer(
        lease.dseq, shape, suite.gateway.url, certificate=certificate
    )
    assert status == 200, answer
    seen = [first]
    async with asyncio.timeout(90):  # pushed as soon as the cluster reports it deployed
        while seen[-1].cluster.leases.active <= before:
            seen.append(await call.read())
    call.cancel()
    assert seen[-1].cluster.leases.active == before + 1
    # each push is a change: no two consecutive messages say the same thing
    for earlier, later in itertools.pairwise(seen):
        earlier.ClearField("timestamp")
        later_copy = type(later)()
        later_copy.CopyFrom(later)
        later_copy.ClearField("timestamp")
        assert earlier != later_copy


async def test_bid_screening_answers_for_a_passing_and_a_failing_group(
    suite: Provider, chain: DevnetClients, reflected: Reflected, channel: grpc.aio.Channel
) -> None:
    screening, request_type = reflected.method(channel, "BidScreening")
    tenant = chain.tenant("tenant-2")
    await tenant.create_certificate()  # a signed transaction: the chain knows the account's key
    token = tenant.token()

    def request(cpu: float, hostnames: tuple[str, ...] = ()) -> Any:
        message = request_type(hostnames=list(hostnames))
        message.group_spec.MergeFromString(
            group_spec_pb(sdl(cpu=cpu).groups[0]).SerializeToString()
        )
        return message

    bearer = (("authorization", f"Bearer {token}"),)
    passing = await screening(request(0.5), metadata=bearer)
    assert passing.passed, passing.reasons
    assert list(passing.reasons) == []
    assert passing.price.denom and float(passing.price.amount) > 0
    assert [o.count for o in passing.resource_offers] == [1]
    assert passing.resource_offers[0].resources.cpu.units.val == b"500"
    assert passing.resource_offer == passing.resource_offers[0]  # Akash's field: one offer

    failing = await screening(request(300), metadata=bearer)
    assert not failing.passed
    assert any(r.startswith("insufficient_capacity") for r in failing.reasons), failing.reasons

    blocked = await screening(request(0.5, ("shop.blocked.test",)), metadata=bearer)
    assert not blocked.passed
    assert any("shop.blocked.test" in r and "blocked" in r for r in blocked.reasons)
    # blocked by default, besides the operator's list: the provider's own names, IPs
    own = ("provider.test", "localhost", "api.localhost", "10.0.0.1")
    defaults = await screening(request(0.5, own), metadata=bearer)
    assert not defaults.passed
    for host in own:
        assert any(f"'{host}'" in r and "blocked" in r for r in defaults.reasons), defaults.reasons

    # who asks is part of the question (tenant lists, price scripts): a token is required
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await screening(request(0.5))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await screening(request_type(), metadata=bearer)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "group_spec" in (refused.value.details() or "")


async def test_a_client_certificate_authenticates_a_call_as_a_token_does(
    suite: Provider, chain: DevnetClients, reflected: Reflected
) -> None:
    """Accepted on the gRPC listener's TLS as on REST's; a certificate and a token at once are
    ambiguous; a certificate not on chain is refused in the handshake, as on REST. (grpcio's
    TLS library will not present a certificate without digitalSignature as a client: the
    certificate Akash's SDKs make is tested over gRPC with chain-sdk's own client, in
    tests/test_akash_clients.py.)"""
    tenant = chain.tenant("tenant-3")
    await tenant.create_certificate()  # the account's key on chain
    made = make_certificate(tenant.address)
    await tenant.wallet.send(
        msgs.create_certificate(tenant.address, made.cert_pem, made.pubkey_pem)
    )
    message = reflected.message("akash.provider.v1.BidScreeningRequest")()
    message.group_spec.MergeFromString(group_spec_pb(sdl(cpu=0.5).groups[0]).SerializeToString())

    def mtls(cert: bytes, key: bytes) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=suite.gateway.server_certificate(),
            private_key=key,
            certificate_chain=cert,
        )

    async def screen(creds: grpc.ChannelCredentials, **kwargs: Any) -> Any:
        async with grpc.aio.secure_channel(suite.gateway.grpc_target, creds) as channel:
            screening, _ = reflected.method(channel, "BidScreening")
            return await screening(message, **kwargs)

    async def trusted() -> Any:
        try:
            return await screen(mtls(made.cert_pem, made.key_pem))
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:  # refused in the handshake: not yet
                raise
            return None

    answer = await eventually(trusted, timeout_s=15, what="a call with the client certificate")
    assert answer.passed, answer.reasons

    bearer = (("authorization", f"Bearer {tenant.token()}"),)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await screen(mtls(made.cert_pem, made.key_pem), metadata=bearer)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "ambiguous" in (refused.value.details() or "")

    stranger = make_certificate(tenant.address)  # never published
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await screen(mtls(stranger.cert_pem, stranger.key_pem))
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "gRPC API: client certificate refused" in suite.gateway.log()


async def test_lease_rpc_checks_who_asks_and_streams_status_and_logs(
    suite: Provider, chain: DevnetClients, reflected: Reflected, channel: grpc.aio.Channel
) -> None:
    tenant = chain.tenant("tenant-3")
    certificate = await certified(tenant, suite)
    shape = sdl(cpu=0.25)
    [lease] = await leased(suite, tenant, shape)
    full = (("authorization", f"Bearer {tenant.token()}"),)
    logs_only = (
        ("authorization", f"Bearer {tenant.token({'access': 'scoped', 'scope': ['logs']})}"),
    )
    send, send_request = reflected.method(channel, "SendManifest", service=LEASE_SERVICE)
    status, status_request = reflected.method(channel, "ServiceStatus", service=LEASE_SERVICE)
    stream_status, _ = reflected.method(
        channel, "StreamServiceStatus", stream=True, service=LEASE_SERVICE
    )
    stream_logs, logs_request = reflected.method(
        channel, "StreamServiceLogs", stream=True, service=LEASE_SERVICE
    )

    def about(request_type: Any, services: tuple[str, ...] = (), **changed: Any) -> Any:
        message = request_type(services=list(services)) if services else request_type()
        fields = {"owner": lease.owner, "dseq": lease.dseq, "gseq": lease.gseq, "oseq": lease.oseq}
        for name, value in {**fields, "provider": lease.provider, **changed}.items():
            setattr(message.lease_id, name, value)
        return message

    async def refused(call: Any, request: Any, metadata: Any = ()) -> tuple[Any, str]:
        async def first() -> Any:
            answer = call(request, metadata=metadata)
            return await (answer.read() if hasattr(answer, "read") else answer)

        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await first()
        return caught.value.code(), caught.value.details() or ""

    # a manifest that is not one, and one of another shape: refused, nothing deployed
    bad = send_request()
    bad.lease_id.MergeFrom(about(status_request).lease_id)
    code, details = await refused(send, bad, full)
    assert (code, "manifest" in details) == (grpc.StatusCode.INVALID_ARGUMENT, True)
    manifest = manifest_pb(sdl(cpu=0.5).manifest)  # not the version on chain
    wrong = send_request()
    wrong.MergeFromString(
        lease_pb2.SendManifestRequest(
            lease_id=lease_id_pb(lease), manifest=manifest
        ).SerializeToString()
    )
    code, _ = await refused(send, wrong, full)
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    hostile = shape.manifest.go_json()  # nginx configuration in next_cases: refused up front
    for service in hostile[0]["services"]:
        for expose in service["expose"] or ():
            expose["httpOptions"]["nextCases"] = ["timeout;}\n location /x {}\n#"]
    injected = send_request()
    injected.MergeFromString(
        lease_pb2.SendManifestRequest(
            lease_id=lease_id_pb(lease), manifest=manifest_pb(Manifest.from_data(hostile))
        ).SerializeToString()
    )
    code, details = await refused(send, injected, full)
    assert (code, "unknown next case 'timeout;}" in details) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        True,
    ), details
    good = send_request()
    good.MergeFromString(
        lease_pb2.SendManifestRequest(
            lease_id=lease_id_pb(lease), manifest=manifest_pb(shape.manifest)
        ).SerializeToString()
    )
    assert (await refused(send, good))[0] == grpc.StatusCode.UNAUTHENTICATED
    assert (await refused(send, good, logs_only))[0] == grpc.StatusCode.PERMISSION_DENIED
    await send(good, metadata=full)

    async def answer() -> Any:
        try:
            return await status(about(status_request), metadata=full)
        except grpc.aio.AioRpcError:
            return None  # not deployed yet

    found = await eventually(  # and routed: the hostname operator makes the Ingress
        answer,
        timeout_s=90,
        what="web available and routed over gRPC",
        until=lambda a: (
            a is not None
            and a.services
            and a.services[0].status.available == 1
            and a.services[0].status.uris
        ),
    )
    _, rest = await tenant.lease_status(
        lease.dseq, lease.gseq, lease.oseq, suite.gateway.url, certificate
    )
    [web] = found.services
    assert (web.name, web.status.total, list(web.status.uris)) == (
        "web", rest["services"]["web"]["total"], rest["services"]["web"]["uris"] or [],
    )  # fmt: skip

    # the tenant's own leases only, with the token's scopes, numbers that are numbers
    checks = [
        (status, about(status_request), logs_only, grpc.StatusCode.PERMISSION_DENIED),
        (status, about(status_request, owner=suite.devnet.signer("provider").address), full,
         grpc.StatusCode.NOT_FOUND),
        (status, about(status_request, provider=tenant.address), full, grpc.StatusCode.NOT_FOUND),
        (status, about(status_request, dseq=lease.dseq + 10**6), full, grpc.StatusCode.NOT_FOUND),
        (status, about(status_request, gseq=0), full, grpc.StatusCode.INVALID_ARGUMENT),
        (status, status_request(), full, grpc.StatusCode.INVALID_ARGUMENT),
        (status, about(status_request, ("db",)), full, grpc.StatusCode.NOT_FOUND),
        (stream_status, about(status_request), (*full, ("interval", "soon")),
         grpc.StatusCode.INVALID_ARGUMENT),
        (stream_logs, about(logs_request, ("db",)), full, grpc.StatusCode.NOT_FOUND),
    ]  # fmt: skip
    for call, request, metadata, expected in checks:
        assert (await refused(call, request, metadata))[0] == expected, request

    # the status stream: now, then every interval
    call = stream_status(about(status_request, ("web",)), metadata=(*full, ("interval", "1s")))
    first = await asyncio.wait_for(call.read(), 10)
    second = await asyncio.wait_for(call.read(), 10)
    call.cancel()
    assert [s.name for s in first.services] == [s.name for s in second.services] == ["web"]

    # the logs stream: the lines as they come, named after the pod; with the logs scope only
    logs = stream_logs(about(logs_request, ("web",)), metadata=logs_only)
    lines = [await asyncio.wait_for(logs.read(), 15) for _ in range(3)]
    logs.cancel()
    assert all(len(m.services) == 1 and m.services[0].name.startswith("web-") for m in lines)
    assert all(m.services[0].logs for m in lines)
