"""Akash's own client code (chain-sdk, cosmjs) against the provider and the devnet."""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import AsyncIterator, Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from akchain import msgs
from akchain.keys import Signer
from akcli.akashjs import AkashJS
from akdevnet.testing import DevnetClients, DevnetProcess
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.ids import BidID
from aktypes.sdl import SDL

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


def test_the_pinned_client_packages_are_installed_and_run(akashjs: AkashJS) -> None:
    answer = akashjs.run("probe.mjs", {"ping": 1})
    assert answer["echo"] == {"ping": 1}
    assert answer["chainSdk"] == "1.0.0-alpha.25"
    assert answer["stargate"] == "0.39.0"
    assert set(answer["exports"]) >= {"createProviderSDK"}


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
