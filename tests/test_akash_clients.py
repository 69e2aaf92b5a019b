"""Akash's own client code (chain-sdk, cosmjs) against the provider and the devnet.

- Our gRPC messages, field for field, against chain-sdk's generated ones: every message the
  gateway serves, fully populated, is read by chain-sdk and written back; what comes back
  must be what we sent (less our documented additions), with the same field names.
- A tenant as Akash Console is one: chain-sdk's certificate generator and SDL tools, Node's
  TLS client sending the manifest and reading the lease over mTLS.
- chain-sdk's provider client (``createProviderSDK``, as Akash Console uses it) calling the
  gateway's ``ProviderRPC`` and ``LeaseRPC`` on a running suite with the IP operator, for a
  lease with a leased IP: what it decodes equals what our own stubs and REST answer.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import decimal
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import kubernetes
import pytest
from google.protobuf import descriptor as pb_descriptor
from google.protobuf import empty_pb2, json_format, message_factory
from google.protobuf.message import Message

from akchain import msgs
from akchain.convert import group_spec_pb, lease_id_pb
from akcli.akashjs import AkashJS
from akcli.testing import Provider, certified, leased, running, whole_suite
from akdevnet.testing import DevnetClients
from akgateway._pb.akash.provider.lease.v1 import lease_pb2, lease_pb2_grpc
from akgateway._pb.akash.provider.v1 import provider_pb2, provider_pb2_grpc
from akgateway.domain.lease_rpc import manifest_pb
from akservice.testing import eventually
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[1] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
SERVICES = (provider_pb2.DESCRIPTOR.services_by_name["ProviderRPC"],)
SERVICES += (lease_pb2.DESCRIPTOR.services_by_name["LeaseRPC"],)
# fields we add to Akash's messages, on numbers Akash does not use (docs/gateway.md)
ADDITIONS = {"akash.provider.v1.BidScreeningResponse": {"resource_offers"}}
F = pb_descriptor.FieldDescriptor
DEC = re.compile(r"\d+\.\d+")


def test_the_pinned_client_packages_are_installed_and_run(akashjs: AkashJS) -> None:
    answer = akashjs.run("probe.mjs", {"ping": 1})
    assert answer["echo"] == {"ping": 1}
    assert answer["chainSdk"] == "1.0.0-alpha.25"
    assert answer["stargate"] == "0.39.0"
    assert set(answer["exports"]) >= {"createProviderSDK"}


# -- our messages as chain-sdk reads them ---------------------------------------------------


def served_messages() -> list[pb_descriptor.Descriptor]:
    """Every message type the gateway's services take or give, and those inside them."""
    found: dict[str, pb_descriptor.Descriptor] = {}
    todo = [m.input_type for s in SERVICES for m in s.methods]
    todo += [m.output_type for s in SERVICES for m in s.methods]
    while todo:
        message = todo.pop()
        if message.full_name in found or message.full_name.startswith("google.protobuf."):
            continue
        if not message.GetOptions().map_entry:
            found[message.full_name] = message
        todo += [f.message_type for f in message.fields if f.message_type is not None]
    return sorted(found.values(), key=lambda m: m.full_name)


def _scalar(field: F, n: int) -> Any:
    """A value of the field's type that a reader of another type would misread: negative
    signed numbers, unsigned ones past the signed range, 64-bit ones past 32 bits."""
    kind = field.type
    if kind in (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32):
        return -(100 + n)
    if kind in (F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64):
        return -(2**40 + n)
    if kind in (F.TYPE_UINT32, F.TYPE_FIXED32):
        return 3_000_000_000 + n
    if kind in (F.TYPE_UINT64, F.TYPE_FIXED64):
        return 2**63 + n
    if kind == F.TYPE_BOOL:
        return True
    if kind == F.TYPE_STRING:  # Cosmos's amounts are decimal numbers in a string
        return str(10**18 + n) if field.name == "amount" else f"{field.name}-{n}"
    if kind == F.TYPE_BYTES:
        return bytes([1, 2, n % 256])
    if kind == F.TYPE_ENUM:
        return field.enum_type.values[-1].number
    if kind in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return 1.5 + n
    raise AssertionError(f"no sample for {field.full_name}")


def populated(message: Message, n: int = 0, depth: int = 0) -> Message:
    """Every field of ``message`` set (repeated ones twice, maps once) to a value that is
    not the default."""
    name = message.DESCRIPTOR.full_name
    if name == "google.protobuf.Timestamp":  # chain-sdk reads it into a Date: milliseconds
        message.seconds, message.nanos = 1_700_000_000 + n, 5_000_000  # type: ignore[attr-defined]
        return message
    for i, field in enumerate(message.DESCRIPTOR.fields):
        k = n + i + 1
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key_field, value_field = field.message_type.fields
            key = _scalar(key_field, k)
            target = getattr(message, field.name)
            if value_field.message_type is not None:
                populated(target[key], k, depth + 1)
            else:
                target[key] = _scalar(value_field, k)
        elif field.message_type is not None:
            if depth > 6:
                continue
            if field.is_repeated:
                for j in range(2):
                    populated(getattr(message, field.name).add(), k + j, depth + 1)
            else:
                populated(getattr(message, field.name), k, depth + 1)
        elif field.is_repeated:
            getattr(message, field.name).extend([_scalar(field, k), _scalar(field, k + 1)])
        else:
            setattr(message, field.name, _scalar(field, k))
    return message


def plain(value: Any) -> Any:
    """A message's JSON with every value as text: chain-sdk writes 64-bit numbers as text
    and protobuf's JSON does so too, but both write 32-bit ones as numbers."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and DEC.fullmatch(value):  # chain-sdk shows a Dec as a decimal
        return str(int(decimal.Decimal(value).scaleb(18)))  # the wire holds its 10^-18 units
    return str(value)


def test_every_served_message_is_akash_s_field_for_field(akashjs: AkashJS) -> None:
    messages = served_messages()
    names = {m.full_name for m in messages}
    assert {  # both services' messages and what they carry
        "akash.provider.v1.Status",
        "akash.provider.v1.BidScreeningResponse",
        "akash.inventory.v1.Node",
        "akash.provider.lease.v1.ServiceStatusResponse",
        "akash.provider.lease.v1.SendManifestRequest",
        "akash.manifest.v2beta3.ServiceExpose",
        "akash.market.v1.LeaseID",
        "akash.deployment.v1beta4.GroupSpec",
        "akash.base.resources.v1beta4.Resources",
        "k8s.io.apimachinery.pkg.api.resource.Quantity",
    } <= names
    sent = {m.full_name: populated(message_factory.GetMessageClass(m)()) for m in messages}
    answer = akashjs.run(
        "messages.mjs",
        {
            "messages": [
                {"type": name, "bytes": base64.b64encode(m.SerializeToString()).decode()}
                for name, m in sent.items()
            ]
        },
    )
    unknown = [r["type"] for r in answer["results"] if not r["found"]]
    assert unknown == [], f"chain-sdk has no message {unknown}"
    for result in answer["results"]:
        assert "error" not in result, result
        ours = sent[result["type"]]
        expected = type(ours)()
        expected.CopyFrom(ours)
        for added in ADDITIONS.get(result["type"], ()):
            expected.ClearField(added)
        back = type(ours).FromString(base64.b64decode(result["bytes"]))
        assert back == expected, f"{result['type']}: chain-sdk read\n{back}\nof\n{expected}"
        ours_json = json_format.MessageToDict(expected, preserving_proto_field_name=True)
        assert plain(result["json"]) == plain(ours_json), result["type"]  # names and values


def test_our_additions_are_on_numbers_akash_does_not_use(akashjs: AkashJS) -> None:
    """An addition read by chain-sdk alone: nothing of it shows, nothing else changes."""
    offers = provider_pb2.BidScreeningResponse()
    populated(offers.resource_offers.add())
    populated(offers.resource_offers.add(), 7)
    answer = akashjs.run(
        "messages.mjs",
        {
            "messages": [
                {
                    "type": "akash.provider.v1.BidScreeningResponse",
                    "bytes": base64.b64encode(offers.SerializeToString()).decode(),
                }
            ]
        },
    )
    [result] = answer["results"]
    assert result["bytes"] == ""  # nothing read, so nothing written back
    assert "resource_offer" not in result["json"]


# -- chain-sdk's provider client against the running suite ----------------------------------

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
        accept: [shop.clients.test]
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
ADDRESS = "203.0.113.21"  # what MetalLB would give the leased IP


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with whole_suite(
        tmp_path_factory.mktemp("suite"),
        operators=("ip",),
        operator_env={"AP_IP_POOL": "203.0.113.20-203.0.113.23", "AP_IP_RETRY": "500ms"},
        cluster_env={"AP_CLUSTER_PUBLIC_HOSTNAME": "provider.test"},
    ) as provider:
        yield provider


@pytest.fixture
async def chain(suite: Provider) -> AsyncIterator[DevnetClients]:
    async with suite.devnet.clients() as clients:
        yield clients


def server_certificate(suite: Provider) -> bytes:
    [pem] = suite.gateway.tls_dir.glob("*.pem")
    text = pem.read_bytes()
    start = text.index(b"-----BEGIN CERTIFICATE-----")
    end = text.index(b"-----END CERTIFICATE-----") + len(b"-----END CERTIFICATE-----")
    return text[start:end] + b"\n"


def assign_address(suite: Provider, lease: LeaseID) -> None:
    """Give the lease's leased-IP Service an address, as MetalLB does (kubesim has none)."""
    api = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        str(suite.kubesim.kubeconfig)
    )
    try:
        kubernetes.client.CoreV1Api(api).patch_namespaced_service_status(
            "web-ip-5432-tcp",
            lease_namespace(lease),
            {"status": {"loadBalancer": {"ingress": [{"ip": ADDRESS}]}}},
        )
    finally:
        api.close()


async def trusted_by_gateway(suite: Provider, akashjs: AkashJS, made: dict[str, str]) -> None:
    """Wait until the gateway's TLS takes a certificate published a moment ago (it reads the
    chain's certificates every AP_GATEWAY_CERT_SYNC_INTERVAL)."""
    step = {
        "do": "request",
        "method": "GET",
        "url": f"{suite.gateway.url}/lease/1/1/1/status",
        "cert": made["cert"],
        "key": made["privateKey"],
    }

    def answered() -> int:
        [answer] = akashjs.run("tenant.mjs", {"steps": [step]})
        return int(answer["status"])  # 0: refused in the handshake, not read yet

    await eventually(
        lambda: asyncio.to_thread(answered), timeout_s=30, what="the certificate trusted"
    )


async def test_akash_s_provider_client_reads_status_screening_and_lease_calls(
    suite: Provider, chain: DevnetClients, akashjs: AkashJS
) -> None:
    tenant = chain.tenant("tenant-1")
    certificate = await certified(tenant, suite)
    token = tenant.token()
    bearer = (("authorization", f"Bearer {token}"),)
    shape_ = parse_sdl(SDL_TEXT)
    [lease] = await leased(suite, tenant, shape_)
    creds = grpc.ssl_channel_credentials(root_certificates=server_certificate(suite))
    async with grpc.aio.secure_channel(suite.gateway.grpc_target, creds) as channel:
        leases = lease_pb2_grpc.LeaseRPCStub(channel)
        providers = provider_pb2_grpc.ProviderRPCStub(channel)
        # the manifest over gRPC: the version hash of what arrives is the one on chain
        await leases.SendManifest(
            lease_pb2.SendManifestRequest(
                lease_id=lease_id_pb(lease), manifest=manifest_pb(shape_.manifest)
            ),
            metadata=bearer,
        )

        async def rest() -> tuple[int, Any]:
            return await tenant.lease_status(
                lease.dseq, lease.gseq, lease.oseq, suite.gateway.url, certificate
            )

        await eventually(rest, timeout_s=90, what="web available", until=running(shape_, lease))
        pending = {"Port": 5432, "ExternalPort": 5432, "Protocol": "TCP", "IP": ""}
        _, body = await eventually(
            rest,
            timeout_s=30,
            what="the leased-IP port, no address yet",
            until=lambda a: a[1]["ips"] == {"web": [pending]},
        )
        await asyncio.to_thread(assign_address, suite, lease)
        _, body = await eventually(
            rest,
            timeout_s=30,
            what="the leased IP's address",
            until=lambda a: a[1]["ips"] == {"web": [{**pending, "IP": ADDRESS}]},
        )

        request = lease_pb2.ServiceStatusRequest(lease_id=lease_id_pb(lease))
        ours = await leases.ServiceStatus(request, metadata=bearer)
        [web] = ours.services
        assert web.name == "web"
        assert [(i.port, i.external_port, i.protocol, i.ip) for i in web.ips] == [
            (5432, 5432, "TCP", ADDRESS)
        ]
        rest_web = body["services"]["web"]
        assert (web.status.available, web.status.total, list(web.status.uris)) == (
            rest_web["available"], rest_web["total"], rest_web["uris"],
        )  # fmt: skip
        assert [(p.port, p.external_port, p.proto) for p in web.ports] == [
            (p["port"], p["externalPort"], p["proto"])
            for p in body["forwarded_ports"].get("web", [])
        ]

        group = group_spec_pb(shape_.groups[0])
        screening = provider_pb2.BidScreeningRequest(group_spec=group)
        ours_screening = await providers.BidScreening(screening, metadata=bearer)
        assert ours_screening.passed, ours_screening.reasons
        logs = await leases.ServiceLogs(
            lease_pb2.ServiceLogsRequest(lease_id=lease_id_pb(lease)), metadata=bearer
        )
        assert logs.services and {e.name.startswith("web-") for e in logs.services} == {True}

        # a certificate as chain-sdk makes it (keyUsage without digitalSignature), on chain
        [made] = akashjs.run(
            "tenant.mjs", {"steps": [{"do": "certificate", "address": tenant.address}]}
        )
        await tenant.wallet.send(
            msgs.create_certificate(
                tenant.address, made["cert"].encode(), made["publicKey"].encode()
            )
        )
        await trusted_by_gateway(suite, akashjs, made)

        host, port = suite.gateway.grpc_target.rsplit(":", 1)
        answers = await asyncio.to_thread(
            akashjs.run,
            "provider_sdk.mjs",
            {
                "baseUrl": f"https://{host}:{port}",
                "token": token,
                "lease": {
                    "owner": lease.owner,
                    "dseq": lease.dseq,
                    "gseq": lease.gseq,
                    "oseq": lease.oseq,
                    "provider": lease.provider,
                },
                "groupSpec": base64.b64encode(group.SerializeToString()).decode(),
                "mtls": {"cert": made["cert"], "key": made["privateKey"]},
            },
        )
        ours_status = await providers.GetStatus(empty_pb2.Empty())

    def read(name: str, kind: type[Message]) -> Any:
        found = answers[name]
        assert "error" not in found, (name, found)
        return kind.FromString(base64.b64decode(found["bytes"])), found["json"]

    # GetStatus: what chain-sdk decoded is what we send (the time apart)
    status, status_json = read("getStatus", provider_pb2.Status)
    assert status.public_hostnames == ["provider.test"]
    sent_at = dt.datetime.fromisoformat(status_json["timestamp"].replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.UTC) - sent_at).total_seconds()) < 60
    for message in (status, ours_status):
        message.ClearField("timestamp")
    assert status == ours_status

    # BidScreening: Akash's one resource_offer; our addition is invisible to chain-sdk
    screened, screened_json = read("bidScreening", provider_pb2.BidScreeningResponse)
    expected = provider_pb2.BidScreeningResponse()
    expected.CopyFrom(ours_screening)
    expected.ClearField("resource_offers")
    assert screened == expected
    assert screened_json["resource_offer"]["count"] == 1
    assert screened_json["passed"] is True
    assert answers["bidScreeningWithoutToken"]["error"]["code"] == 16  # Unauthenticated

    # LeaseRPC: the services with their leased IP, as our stubs and REST read them
    for name in ("serviceStatus", "streamServiceStatus", "serviceStatusByCertificate"):
        decoded, decoded_json = read(name, lease_pb2.ServiceStatusResponse)
        assert decoded == ours, name
        assert decoded_json["services"][0]["ips"] == [
            {"port": 5432, "external_port": 5432, "protocol": "TCP", "ip": ADDRESS}
        ]
    assert answers["serviceStatusOfAnother"]["error"]["code"] == 5  # NotFound
    logged, _ = read("serviceLogs", lease_pb2.ServiceLogsResponse)
    assert logged.services and {e.name for e in logged.services} <= {e.name for e in logs.services}


async def test_a_console_tenant_sends_its_manifest_and_reads_its_lease_with_sdk_certificate(
    suite: Provider, chain: DevnetClients, akashjs: AkashJS
) -> None:
    """chain-sdk's certificate generator and SDL tools, Node's TLS client: the manifest is
    accepted over mTLS and the lease status lists the running service."""
    tenant = chain.tenant("tenant-2")
    yaml = (CORPUS / "tetris.yaml").read_text()
    made, manifest = akashjs.run(
        "tenant.mjs",
        {
            "steps": [
                {"do": "certificate", "address": tenant.address},
                {"do": "manifest", "sdl": yaml},
            ]
        },
    )
    assert "\r\n" in made["cert"]
    assert made["publicKey"].startswith("-----BEGIN EC PUBLIC KEY-----")
    shape = parse_sdl(yaml)
    assert manifest["version"] == shape.manifest_version.hex()
    await tenant.wallet.send(
        msgs.create_certificate(tenant.address, made["cert"].encode(), made["publicKey"].encode())
    )
    [lease] = await leased(suite, tenant, shape)
    base = f"{suite.gateway.url}"
    mtls = {"cert": made["cert"], "key": made["privateKey"]}

    def call(method: str, path: str, body: str | None = None) -> dict[str, Any]:
        step = {"do": "request", "method": method, "url": base + path, **mtls}
        if body is not None:
            step["body"] = body
        [answer] = akashjs.run("tenant.mjs", {"steps": [step]})
        return answer

    def trusted() -> dict[str, Any] | None:  # published a moment ago: read on the next sync
        answer = call("PUT", f"/deployment/{lease.dseq}/manifest", manifest["body"])
        return answer if answer["status"] else None

    put = await eventually(trusted, timeout_s=30, what="the manifest accepted over mTLS")
    assert (put["status"], put["body"]) == (200, None), put

    path = f"/lease/{lease.dseq}/{lease.gseq}/{lease.oseq}/status"

    def running() -> dict[str, Any] | None:
        answer = call("GET", path)
        services = (answer["body"] or {}).get("services") if answer["status"] == 200 else None
        return answer if services and services["tetris"]["available"] == 1 else None

    status = await eventually(running, timeout_s=60, what="the lease running")
    assert status["body"]["services"]["tetris"]["total"] == 1
