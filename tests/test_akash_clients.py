"""Akash's own client code (chain-sdk, cosmjs) against the provider and the devnet.

- The devnet as a node Cosmos clients use: cosmjs's StargateClient reads it field by field,
  cosmjs's SigningStargateClient and chain-sdk sign bank sends and Akash messages on it, and
  Akash's queries decode with chain-sdk's types (abci_query and gRPC).
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
import hashlib
import math
import re
from collections.abc import AsyncIterator, Callable, Iterator
from decimal import Decimal
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
from akchain.keys import Signer
from akcli.akashjs import AkashJS
from akcli.testing import Provider, certified, leased, running, whole_suite
from akdevnet.testing import DevnetClients, DevnetProcess
from akgateway._pb.akash.provider.lease.v1 import lease_pb2, lease_pb2_grpc
from akgateway._pb.akash.provider.v1 import provider_pb2, provider_pb2_grpc
from akgateway.domain.lease_rpc import manifest_pb
from akservice.testing import eventually
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.ids import BidID, LeaseID
from aktypes.ingress import ingress_host
from aktypes.namespace import lease_namespace
from aktypes.sdl import SDL, parse_sdl

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


# -- the devnet as a node ---------------------------------------------------------------

GAS_PRICE = "0.025uakt"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevnetProcess]:
    """One devnet for this module's client scripts; each test uses its own accounts."""
    with DevnetProcess(Path(tmp_path_factory.mktemp("akash-clients")) / "devnet") as process:
        yield process


@pytest.fixture
async def on_node(node: DevnetProcess) -> AsyncIterator[DevnetClients]:
    async with node.clients() as clients:
        yield clients


async def test_cosmjs_reads_the_devnet_as_a_node(
    akashjs: AkashJS, node: DevnetProcess, on_node: DevnetClients
) -> None:
    sender, recipient = on_node.wallet("tenant-2"), Signer.generate().address
    sent = await sender.send(msgs.send(sender.address, recipient, [Coin(denom="uakt", amount=777)]))
    searches: list[Any] = [
        f"tx.height={sent.height}",
        [{"key": "message.sender", "value": sender.address}],
        f"transfer.recipient='{recipient}'",
    ]

    payload = {
        "rpc": node.rpc_url,
        "address": sender.address,
        "missingAddress": Signer.generate().address,
        "denom": "uakt",
        "height": sent.height,
        "txHash": sent.hash,
        "searches": searches,
    }
    got = akashjs.run("cosmjs-query.mjs", payload)

    status = await on_node.rpc.call("status")
    assert got["chainId"] == status["node_info"]["network"] == on_node.chain_id
    assert sent.height <= got["height"] <= node.height()
    block = await on_node.rpc.call("block", height=str(sent.height))
    assert got["block"]["id"] == block["block_id"]["hash"]
    header = block["block"]["header"]
    assert got["block"]["header"] == {
        "version": header["version"],
        "height": sent.height,
        "chainId": header["chain_id"],
        "time": header["time"],
    }
    assert got["block"]["txs"] == block["block"]["data"]["txs"]

    account = (await on_node.lcd.get(f"/cosmos/auth/v1beta1/accounts/{sender.address}"))["account"]
    assert got["account"] == {
        "address": account["address"],
        "pubkey": {"type": "tendermint/PubKeySecp256k1", "value": account["pub_key"]["key"]},
        "accountNumber": account["account_number"],  # a bigint in cosmjs 0.39
        "sequence": int(account["sequence"]),
    }
    assert got["missingAccount"] is None
    balances = (await on_node.lcd.get(f"/cosmos/bank/v1beta1/balances/{sender.address}"))[
        "balances"
    ]
    assert got["allBalances"] == balances
    assert got["balance"] == next(b for b in balances if b["denom"] == "uakt")

    found = await on_node.lcd.get(f"/cosmos/tx/v1beta1/txs/{sent.hash}")
    response = found["tx_response"]
    assert got["tx"]["hash"] == response["txhash"] == sent.hash
    assert got["tx"]["height"] == int(response["height"]) == sent.height
    assert got["tx"]["code"] == response["code"] == 0
    assert got["tx"]["gasUsed"] == response["gas_used"]
    assert got["tx"]["gasWanted"] == response["gas_wanted"]
    assert got["tx"]["events"] == [e["type"] for e in response["events"]]
    assert got["tx"]["msgResponses"] == ["/cosmos.bank.v1beta1.MsgSendResponse"]
    committed = await on_node.rpc.call(
        "tx", hash=base64.b64encode(bytes.fromhex(sent.hash)).decode()
    )
    assert got["tx"]["txBytes"] == committed["tx"]
    assert got["missingTx"] is None

    in_block = [
        hashlib.sha256(base64.b64decode(t)).hexdigest().upper() for t in got["block"]["txs"]
    ]
    assert got["searches"] == [in_block, [sent.hash], [sent.hash]]

    # the same over the websocket (cosmjs adds /websocket to a ws:// endpoint)
    ws = akashjs.run("cosmjs-query.mjs", payload | {"rpc": node.rpc_url.replace("http", "ws", 1)})
    assert ws["height"] >= got["height"]
    assert ws | {"height": got["height"]} == got


async def test_cosmjs_and_chain_sdk_sign_bank_sends_and_akash_messages(
    akashjs: AkashJS, node: DevnetProcess, on_node: DevnetClients
) -> None:
    tenant = node.signer("tenant-1")
    recipient = Signer.generate().address
    before = await on_node.lcd.balance(tenant.address, "uakt")
    mnemonic = tenant.reveal_mnemonic()
    assert mnemonic

    got = akashjs.run(
        "cosmjs-sign.mjs",
        {
            "rpc": node.rpc_url,
            "mnemonic": mnemonic,
            "recipient": recipient,
            "amount": {"denom": "uakt", "amount": "1234"},
            "gasPrice": GAS_PRICE,
            "fixedFee": {"amount": [{"denom": "uakt", "amount": "5000"}], "gas": "250000"},
        },
    )

    assert got["address"] == tenant.address
    fees = 0
    txs = {}
    for name in ("sendAuto", "certFixed", "sdkCert"):
        delivered = got[name]
        assert delivered["code"] == 0, delivered
        found = (await on_node.lcd.get(f"/cosmos/tx/v1beta1/txs/{delivered['hash']}"))[
            "tx_response"
        ]
        assert (int(found["height"]), found["code"]) == (delivered["height"], 0)
        assert (found["gas_used"], found["gas_wanted"]) == (
            delivered["gasUsed"],
            delivered["gasWanted"],
        )
        txs[name] = found["tx"]
        [fee] = found["tx"]["auth_info"]["fee"]["amount"]
        fees += int(fee["amount"])

    # fee "auto": cosmjs simulated the gas and priced 1.4 times as much
    gas = math.ceil(got["simulated"] * 1.4)
    assert txs["sendAuto"]["auth_info"]["fee"] == {
        "amount": [{"denom": "uakt", "amount": str(math.ceil(gas * Decimal("0.025")))}],
        "gas_limit": str(gas),
    }
    assert int(got["sendAuto"]["gasUsed"]) <= got["simulated"] <= gas
    assert got["sendAuto"]["msgResponses"] == ["/cosmos.bank.v1beta1.MsgSendResponse"]
    assert txs["certFixed"]["auth_info"]["fee"] == {
        "amount": [{"denom": "uakt", "amount": "5000"}],
        "gas_limit": "250000",
    }
    assert txs["certFixed"]["body"]["memo"] == "by cosmjs"
    assert got["certFixed"]["msgResponses"] == ["/akash.cert.v1.MsgCreateCertificateResponse"]
    assert got["sdkCert"]["msgResponses"] == ["/akash.cert.v1.MsgCreateCertificateResponse"]

    assert await on_node.lcd.balance(recipient, "uakt") == 1234
    assert await on_node.lcd.balance(tenant.address, "uakt") == before - 1234 - fees
    listed = await on_node.lcd.get(
        "/akash/cert/v1/certificates/list", {"filter.owner": tenant.address}
    )
    on_chain = {
        base64.b64decode(c["certificate"]["cert"]).decode(): c["certificate"]["state"]
        for c in listed["certificates"]
    }
    assert {pem: on_chain.get(pem) for pem in got["certs"]} == dict.fromkeys(got["certs"], "valid")


# -- Akash's queries through abci_query ----------------------------------------------------

ZERO: tuple[Any, ...] = (
    *(None, "", "0", 0, False, [], {}),
    *("invalid", "lease_closed_invalid", "SHARED_HTTP"),  # enums at 0
)


def normal(value: Any, *, resource_bytes: bool = False) -> Any:
    """A JSON answer with its zero values dropped and its numbers in one form, so chain-sdk's
    JSON (defaults omitted, LegacyDec trimmed, ``ResourceValue.val`` as base64 bytes) and
    the LCD's compare field by field."""
    if isinstance(value, dict):
        out = {}
        for key, raw in value.items():
            if key == "val" and resource_bytes and isinstance(raw, str):
                raw = base64.b64decode(raw).decode()  # noqa: PLW2901 - the bytes' text
            item = normal(raw, resource_bytes=resource_bytes)
            if not any(item == zero and type(item) is type(zero) for zero in ZERO):
                out[key] = item
        return out
    if isinstance(value, list):
        return [normal(item, resource_bytes=resource_bytes) for item in value]
    if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value):
        return format(Decimal(value).normalize(), "f")
    return value


async def test_akash_queries_decode_with_chain_sdk_through_abci_query_and_grpc(
    akashjs: AkashJS,
    node: DevnetProcess,
    on_node: DevnetClients,
    corpus: Callable[[str], SDL],
) -> None:
    tenant, provider = on_node.tenant("tenant-3"), on_node.wallet("provider")
    await tenant.create_certificate()
    deployment = await tenant.deploy(corpus("tetris.yaml"))
    bid = BidID(
        owner=deployment.owner, dseq=deployment.dseq, gseq=1, oseq=1, provider=provider.address
    )
    await provider.send(
        msgs.create_bid(
            bid, DecCoin(denom="uact", amount=Dec("12.5")), Coin(denom="uakt", amount=500_000)
        )
    )
    await tenant.accept(deployment.dseq, provider.address)
    owner, dseq = deployment.owner, str(deployment.dseq)
    auditor = node.signer("auditor").address
    order = {"owner": owner, "dseq": dseq, "gseq": 1, "oseq": 1}
    lease = order | {"provider": provider.address}

    # (chain-sdk module, service, method, request, response, fields, LCD path, LCD params)
    cases: list[tuple[str, str, str, str, str, dict[str, Any], str, dict[str, str]]] = [
        ("akash.v1beta4", "deployment.v1beta4", "Deployments", "QueryDeploymentsRequest",
         "QueryDeploymentsResponse", {"filters": {"owner": owner}},
         "/akash/deployment/v1beta4/deployments/list", {"filters.owner": owner}),
        ("akash.v1beta4", "deployment.v1beta4", "Deployment", "QueryDeploymentRequest",
         "QueryDeploymentResponse", {"id": {"owner": owner, "dseq": dseq}},
         "/akash/deployment/v1beta4/deployments/info", {"id.owner": owner, "id.dseq": dseq}),
        ("akash.v1beta4", "deployment.v1beta4", "Group", "QueryGroupRequest",
         "QueryGroupResponse", {"id": {"owner": owner, "dseq": dseq, "gseq": 1}},
         "/akash/deployment/v1beta4/groups/info",
         {"id.owner": owner, "id.dseq": dseq, "id.gseq": "1"}),
        ("akash.v1beta5", "market.v1beta5", "Orders", "QueryOrdersRequest",
         "QueryOrdersResponse", {"filters": {"owner": owner}},
         "/akash/market/v1beta5/orders/list", {"filters.owner": owner}),
        ("akash.v1beta5", "market.v1beta5", "Order", "QueryOrderRequest",
         "QueryOrderResponse", {"id": order},
         "/akash/market/v1beta5/orders/info", {f"id.{k}": str(v) for k, v in order.items()}),
        ("akash.v1beta5", "market.v1beta5", "Bids", "QueryBidsRequest",
         "QueryBidsResponse", {"filters": {"owner": owner, "dseq": dseq}},
         "/akash/market/v1beta5/bids/list", {"filters.owner": owner, "filters.dseq": dseq}),
        ("akash.v1beta5", "market.v1beta5", "Bid", "QueryBidRequest",
         "QueryBidResponse", {"id": lease},
         "/akash/market/v1beta5/bids/info", {f"id.{k}": str(v) for k, v in lease.items()}),
        ("akash.v1beta5", "market.v1beta5", "Leases", "QueryLeasesRequest",
         "QueryLeasesResponse", {"filters": {"owner": owner, "state": "active"}},
         "/akash/market/v1beta5/leases/list", {"filters.owner": owner, "filters.state": "active"}),
        ("akash.v1beta5", "market.v1beta5", "Lease", "QueryLeaseRequest",
         "QueryLeaseResponse", {"id": lease},
         "/akash/market/v1beta5/leases/info", {f"id.{k}": str(v) for k, v in lease.items()}),
        ("akash.v1", "escrow.v1", "Accounts", "QueryAccountsRequest",
         "QueryAccountsResponse", {"xid": f"{owner}/{dseq}"},
         "/akash/escrow/v1/types/accounts", {"xid": f"{owner}/{dseq}"}),
        ("akash.v1", "escrow.v1", "Payments", "QueryPaymentsRequest",
         "QueryPaymentsResponse", {"xid": f"{owner}/{dseq}", "state": "open"},
         "/akash/escrow/v1/types/payments", {"xid": f"{owner}/{dseq}", "state": "open"}),
        ("akash.v1beta4", "provider.v1beta4", "Providers", "QueryProvidersRequest",
         "QueryProvidersResponse", {"pagination": {"limit": "1"}},
         "/akash/provider/v1beta4/providers", {"pagination.limit": "1"}),
        ("akash.v1beta4", "provider.v1beta4", "Provider", "QueryProviderRequest",
         "QueryProviderResponse", {"owner": provider.address},
         f"/akash/provider/v1beta4/providers/{provider.address}", {}),
        ("akash.v1", "audit.v1", "ProviderAttributes", "QueryProviderAttributesRequest",
         "QueryProvidersResponse", {"owner": provider.address},
         f"/akash/audit/v1/audit/attributes/{provider.address}/list", {}),
        ("akash.v1", "audit.v1", "ProviderAuditorAttributes", "QueryProviderAuditorRequest",
         "QueryProvidersResponse", {"owner": provider.address, "auditor": auditor},
         f"/akash/audit/v1/audit/attributes/{auditor}/{provider.address}", {}),
        ("akash.v1", "cert.v1", "Certificates", "QueryCertificatesRequest",
         "QueryCertificatesResponse", {"filter": {"owner": owner}},
         "/akash/cert/v1/certificates/list", {"filter.owner": owner}),
    ]  # fmt: skip
    queries = [
        {
            "module": module,
            "path": f"/akash.{service}.Query/{method}",
            "request": request,
            "response": response,
            "fields": fields,
        }
        for module, service, method, request, response, fields, _, _ in cases
    ]
    missing = {"owner": Signer.generate().address, "dseq": "1"}
    queries.append(queries[1] | {"fields": {"id": missing}})

    answers = akashjs.run("akash-queries.mjs", {"rpc": node.rpc_url, "queries": queries})

    for (*_, method, _, _, _, path, params), answer in zip(cases, answers, strict=False):
        lcd = await on_node.lcd.get(path, params)
        assert "response" in answer, (method, answer)
        decoded = normal(answer["response"], resource_bytes=True)
        assert decoded == normal(lcd), method
        assert decoded, method
    assert answers[-1] == {
        "error": "Query failed with (38): rpc error: code = NotFound desc = "
        "deployment not found: key not found"
    }

    # chain-sdk's chain client reads the same over gRPC
    calls = [
        {
            "service": f"akash.{service}",
            "method": f"get{method}",
            "module": module,
            "response": response,
            "input": fields,
        }
        for module, service, method, _, response, fields, _, _ in cases
    ]
    calls.append(calls[1] | {"input": {"id": missing}})
    calls.append(
        {
            "service": "cosmos.bank.v1beta1",
            "method": "getBalance",
            "module": "cosmos.v1beta1",
            "response": "QueryBalanceResponse",
            "input": {"address": owner, "denom": "uact"},
        }
    )
    read = akashjs.run("chain-sdk-query.mjs", {"grpc": node.grpc_url, "calls": calls})
    for (*_, method, _, _, _, path, params), answer in zip(cases, read, strict=False):
        assert "response" in answer, (method, answer)
        lcd = await on_node.lcd.get(path, params)
        assert normal(answer["response"], resource_bytes=True) == normal(lcd), method
    assert read[-2]["code"] == 5  # NotFound
    assert read[-2]["error"].endswith("deployment not found")
    uact = await on_node.lcd.balance(owner, "uact")
    assert read[-1] == {"response": {"balance": {"denom": "uact", "amount": str(uact)}}}


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
        operators=("hostname", "ip"),
        operator_env={"AP_IP_POOL": "203.0.113.20-203.0.113.23", "AP_IP_RETRY": "500ms"},
        cluster_env={"AP_CLUSTER_PUBLIC_HOSTNAME": "provider.test"},
    ) as provider:
        yield provider


@pytest.fixture
async def chain(suite: Provider) -> AsyncIterator[DevnetClients]:
    async with suite.devnet.clients() as clients:
        yield clients


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
    creds = grpc.ssl_channel_credentials(root_certificates=suite.gateway.server_certificate())
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


async def test_a_console_tenant_certifies_deploys_and_reads_its_lease_with_akash_s_clients(
    suite: Provider, chain: DevnetClients, akashjs: AkashJS
) -> None:
    """As Akash Console does it: a certificate from chain-sdk's generator, published with a
    cosmjs SigningStargateClient connected to the devnet; the deployment made of
    chain-sdk's manifest and group specs, signed the same way; the manifest sent and the
    lease status read over mTLS with that certificate (Node's TLS client). The lease's HTTP
    service has its generated ingress hostname in the status."""
    tenant = chain.tenant("tenant-2")
    mnemonic = suite.devnet.signer("tenant-2").reveal_mnemonic()
    text = (CORPUS / "tetris.yaml").read_text()
    shape = parse_sdl(text)
    dseq = (await chain.rpc.status()).latest_height + 1_000_000
    rpc = suite.devnet.rpc_url
    made, manifest = akashjs.run(
        "tenant.mjs",
        {
            "steps": [
                {"do": "certificate", "address": tenant.address},
                {"do": "manifest", "sdl": text},
            ]
        },
    )
    assert "\r\n" in made["cert"]
    assert made["publicKey"].startswith("-----BEGIN EC PUBLIC KEY-----")
    assert manifest["version"] == shape.manifest_version.hex()
    published, deployed = akashjs.run(
        "tenant.mjs",
        {
            "steps": [
                {"do": "publish", "rpc": rpc, "mnemonic": mnemonic, **made},
                {
                    "do": "deploy",
                    "rpc": rpc,
                    "mnemonic": mnemonic,
                    "sdl": text,
                    "dseq": dseq,
                    "deposit": {"denom": "uact", "amount": "5000000"},
                },
            ]
        },
    )
    assert (published["code"], deployed["code"]) == (0, 0), (published, deployed)
    deployment = await chain.lcd.get(
        "/akash/deployment/v1beta4/deployments/info",
        {"id.owner": tenant.address, "id.dseq": str(dseq)},
    )
    assert base64.b64decode(deployment["deployment"]["hash"]).hex() == manifest["version"]

    me = suite.devnet.signer("provider").address

    async def bid() -> Any:
        return await tenant.bids(dseq, provider=me)

    await eventually(bid, timeout_s=90, what=f"our bid on {dseq}")
    [lease] = await tenant.accept(dseq, me)
    mtls = {"cert": made["cert"], "key": made["privateKey"]}

    def call(method: str, path: str, body: str | None = None) -> dict[str, Any]:
        step = {"do": "request", "method": method, "url": suite.gateway.url + path, **mtls}
        if body is not None:
            step["body"] = body
        [answer] = akashjs.run("tenant.mjs", {"steps": [step]})
        return answer

    def trusted() -> dict[str, Any] | None:  # published a moment ago: read on the next sync
        answer = call("PUT", f"/deployment/{dseq}/manifest", manifest["body"])
        return answer if answer["status"] else None

    put = await eventually(trusted, timeout_s=30, what="the manifest accepted over mTLS")
    assert (put["status"], put["body"]) == (200, None), put

    host = ingress_host(lease, "tetris", suite.ingress_domain)
    path = f"/lease/{lease.dseq}/{lease.gseq}/{lease.oseq}/status"

    def running() -> dict[str, Any] | None:
        answer = call("GET", path)
        services = (answer["body"] or {}).get("services") if answer["status"] == 200 else None
        tetris = (services or {}).get("tetris") or {}
        return answer if tetris.get("available") == 1 and tetris.get("uris") else None

    status = await eventually(running, timeout_s=60, what="the lease running with its URI")
    assert status["body"]["services"]["tetris"]["total"] == 1
    assert status["body"]["services"]["tetris"]["uris"] == [host]
