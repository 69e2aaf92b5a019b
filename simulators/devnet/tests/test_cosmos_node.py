"""The devnet as a node that stock Cosmos clients use: CometBFT's headers, commits, validators,
genesis, ``abci_query``, ``tx_search`` and broadcasts, and the Cosmos REST transaction
service. Hashes and signatures are recomputed here from CometBFT's rules, not read back."""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from akchain import msgs
from akchain._pb.cosmos.bank.v1beta1 import query_pb2 as bank_query
from akchain._pb.cosmos.crypto.secp256k1 import keys_pb2
from akchain._pb.cosmos.tx.v1beta1 import tx_pb2
from akchain.keys import Signer
from akchain.models import TxResult
from akchain.rpc import RPCError
from akchain.tx import pack
from akchain.wallet import Wallet
from akdevnet.consensus import header_hash
from akdevnet.testing import DevnetClients, DevnetProcess
from aktypes.coin import Coin

EMPTY = hashlib.sha256(b"").hexdigest().upper()
COSMOS_DEFAULT_CONSENSUS_HASH = "048091BC7DDC283F77BFBF91D73C44DA58C3DF8A9CBC867405D8B7F3DAADA22F"
"""The consensus hash of CometBFT's default block limits, as every stock Cosmos chain shows."""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevnetProcess]:
    with DevnetProcess(Path(tmp_path_factory.mktemp("cosmos-node")) / "devnet") as process:
        yield process


@pytest.fixture
async def on_node(node: DevnetProcess) -> AsyncIterator[DevnetClients]:
    async with node.clients() as clients:
        yield clients


# -- CometBFT's hashing and encoding, written from its specification ----------------------------
def merkle(leaves: list[bytes]) -> bytes:
    """RFC 6962 root, CometBFT's ``merkle.HashFromByteSlices``."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\0" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\1" + merkle(leaves[:k]) + merkle(leaves[k:])).digest()


def varint(n: int) -> bytes:
    out = b""
    while n > 0x7F:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def timestamp(text: str) -> bytes:
    whole, fraction = text.rstrip("Z").split(".")
    seconds = int(datetime.fromisoformat(whole + "+00:00").timestamp())
    return b"\x08" + varint(seconds) + b"\x10" + varint(int(fraction.ljust(9, "0")))


def precommit_sign_bytes(chain_id: str, height: int, block_id: dict[str, Any], time: str) -> bytes:
    """CometBFT's ``VoteSignBytes`` of a precommit in round 0 (length-delimited CanonicalVote)."""
    parts = (
        b"\x08"
        + varint(block_id["parts"]["total"])
        + field(2, bytes.fromhex(block_id["parts"]["hash"]))
    )
    canonical_block_id = field(1, bytes.fromhex(block_id["hash"])) + field(2, parts)
    vote = (
        b"\x08\x02"  # type: precommit
        + b"\x11" + struct.pack("<q", height)  # height, sfixed64
        + field(4, canonical_block_id)
        + field(5, timestamp(time))
        + field(6, chain_id.encode())
    )  # fmt: skip
    return varint(len(vote)) + vote


def test_header_hash_matches_cometbfts_published_vector() -> None:
    """``TestHeaderHash`` of CometBFT's ``types/block_test.go``."""

    def tm(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest().upper()

    names = (
        "last_commit_hash",
        "data_hash",
        "validators_hash",
        "next_validators_hash",
        "consensus_hash",
        "app_hash",
        "last_results_hash",
        "evidence_hash",
    )
    header = {
        "version": {"block": "1", "app": "2"},
        "chain_id": "chainId",
        "height": "3",
        "time": "2019-10-13T16:14:44Z",
        "last_block_id": {"hash": "00" * 32, "parts": {"total": 6, "hash": "00" * 32}},
        **{name: tm(name) for name in names},
        "proposer_address": tm("proposer_address")[:40],
    }
    assert header_hash(header) == "F740121F553B5418C3EFBD343C2DBFE9E007BB67B0D020A0741374BAB65242A4"


async def send_some(chain: DevnetClients, sender: str, amount: int = 11) -> tuple[TxResult, str]:
    wallet = chain.wallet(sender)
    recipient = Signer.generate().address
    sent = await wallet.send(
        msgs.send(wallet.address, recipient, [Coin(denom="uakt", amount=amount)])
    )
    return sent, recipient


# -- blocks, commits, validators ---------------------------------------------------------
async def test_headers_carry_cometbft_hashes_that_check_out(on_node: DevnetClients) -> None:
    sent, _ = await send_some(on_node, "tenant-1")
    on_node.devnet.wait_height(sent.height + 1)
    status = await on_node.rpc.call("status")
    validator = status["validator_info"]
    public_key = base64.b64decode(validator["pub_key"]["value"])
    assert validator["pub_key"]["type"] == "tendermint/PubKeyEd25519" and len(public_key) == 32
    address = hashlib.sha256(public_key).digest()[:20].hex().upper()
    assert validator["address"] == address

    block = await on_node.rpc.call("block", height=str(sent.height))
    after = await on_node.rpc.call("block", height=str(sent.height + 1))
    header, next_header = block["block"]["header"], after["block"]["header"]
    assert block["block_id"]["hash"] == header_hash(header)  # the header's own hash
    assert after["block_id"]["hash"] == header_hash(next_header)
    txs = [base64.b64decode(t) for t in block["block"]["data"]["txs"]]
    assert hashlib.sha256(txs[0]).hexdigest().upper() == sent.hash
    assert header["data_hash"] == merkle([hashlib.sha256(t).digest() for t in txs]).hex().upper()
    assert next_header["data_hash"] == EMPTY  # no transaction in the next block
    simple_validator = (
        field(1, field(1, public_key)) + b"\x10" + varint(int(validator["voting_power"]))
    )
    assert header["validators_hash"] == merkle([simple_validator]).hex().upper()
    assert header["next_validators_hash"] == header["validators_hash"]
    assert header["consensus_hash"] == COSMOS_DEFAULT_CONSENSUS_HASH
    assert header["evidence_hash"] == EMPTY
    assert header["proposer_address"] == address
    assert header["chain_id"] == on_node.chain_id

    # the next block points back at this one and carries its app hash and its commit
    assert next_header["last_block_id"] == block["block_id"]
    results = await on_node.rpc.call("block_results", height=str(sent.height))
    assert next_header["app_hash"] == base64.b64decode(results["app_hash"]).hex().upper()
    assert next_header["app_hash"] != header["app_hash"]  # the send changed the state
    commit = after["block"]["last_commit"]
    assert commit["height"] == str(sent.height)
    assert commit["block_id"] == block["block_id"]
    [signature] = commit["signatures"]
    assert signature["block_id_flag"] == 2 and signature["validator_address"] == address
    signed = precommit_sign_bytes(
        on_node.chain_id, sent.height, block["block_id"], signature["timestamp"]
    )
    Ed25519PublicKey.from_public_bytes(public_key).verify(
        base64.b64decode(signature["signature"]), signed
    )
    assert len(bytes.fromhex(next_header["last_commit_hash"])) == 32
    assert next_header["last_results_hash"] != EMPTY  # the block before held a result
    first = await on_node.rpc.call("block", height="1")
    assert first["block"]["header"]["last_block_id"] == {
        "hash": "",
        "parts": {"total": 0, "hash": ""},
    }
    assert first["block"]["last_commit"]["signatures"] == []

    # the same commit from `commit`, canonical once a later block exists
    same = await on_node.rpc.call("commit", height=str(sent.height))
    assert same == {
        "signed_header": {"header": header, "commit": same["signed_header"]["commit"]},
        "canonical": True,
    }
    assert (
        same["signed_header"]["commit"]["signatures"][0]["signature"]
        == (await on_node.rpc.call("commit", height=str(sent.height)))["signed_header"]["commit"][
            "signatures"
        ][0]["signature"]
    )


async def test_status_blockchain_validators_genesis_and_abci_info_agree(
    on_node: DevnetClients,
) -> None:
    on_node.devnet.wait_height(25)
    status = await on_node.rpc.call("status")
    height = int(status["sync_info"]["latest_block_height"])
    latest = await on_node.rpc.call("commit", height=str(height))
    assert status["sync_info"]["latest_app_hash"] == latest["signed_header"]["header"]["app_hash"]

    chain = await on_node.rpc.call("blockchain", minHeight=str(height - 4), maxHeight=str(height))
    assert [m["header"]["height"] for m in chain["block_metas"]] == [
        str(h) for h in range(height, height - 5, -1)
    ]
    meta = chain["block_metas"][0]
    assert meta["block_id"] == latest["signed_header"]["commit"]["block_id"]
    assert meta["header"] == latest["signed_header"]["header"]
    assert meta["num_txs"] == "0" or int(meta["num_txs"]) > 0
    assert len((await on_node.rpc.call("blockchain"))["block_metas"]) == 20
    with pytest.raises(RPCError, match="min height 9 can't be greater than max height 3"):
        await on_node.rpc.call("blockchain", minHeight="9", maxHeight="3")

    validators = await on_node.rpc.call("validators", height=str(height))
    assert validators["count"] == validators["total"] == "1"
    [validator] = validators["validators"]
    assert {k: validator[k] for k in status["validator_info"]} == status["validator_info"]

    genesis = (await on_node.rpc.call("genesis"))["genesis"]
    assert genesis["chain_id"] == on_node.chain_id
    assert genesis["validators"][0]["pub_key"] == validator["pub_key"]
    tenant = on_node.devnet.signer("tenant-2").address
    [balances] = [b for b in genesis["app_state"]["bank"]["balances"] if b["address"] == tenant]
    assert balances["coins"] == [
        {"denom": "uact", "amount": "10000000000"},
        {"denom": "uakt", "amount": "10000000000"},
    ]

    info = (await on_node.rpc.call("abci_info"))["response"]
    at = int(info["last_block_height"])
    results = await on_node.rpc.call("block_results", height=str(at))
    assert info["last_block_app_hash"] == results["app_hash"]


# -- abci_query --------------------------------------------------------------------------
async def abci(chain: DevnetClients, path: str, request: bytes, **extra: Any) -> dict[str, Any]:
    answer = await chain.rpc.call("abci_query", path=path, data=request.hex(), **extra)
    return answer["response"]  # type: ignore[no-any-return]


async def test_abci_query_answers_bank_queries_and_cosmos_errors(on_node: DevnetClients) -> None:
    tenant = on_node.devnet.signer("tenant-2").address
    balance = bank_query.QueryBalanceRequest(address=tenant, denom="uact").SerializeToString()
    answer = await abci(on_node, "/cosmos.bank.v1beta1.Query/Balance", balance)
    assert answer["code"] == 0 and int(answer["height"]) > 0
    got = bank_query.QueryBalanceResponse.FromString(base64.b64decode(answer["value"]))
    assert int(got.balance.amount) == await on_node.lcd.balance(tenant, "uact")

    # the GET form: a quoted path, data as 0x-hex
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{on_node.devnet.rpc_url}/abci_query",
            params={"path": '"/cosmos.bank.v1beta1.Query/Balance"', "data": "0x" + balance.hex()},
        ) as response,
    ):
        body = await response.json()
    assert body["result"]["response"]["value"] == answer["value"]

    missing = Signer.generate().address
    account = bank_query.QueryBalanceRequest(
        address=missing
    ).SerializeToString()  # same field 1 as QueryAccountRequest
    not_found = await abci(on_node, "/cosmos.auth.v1beta1.Query/Account", account)
    assert (not_found["code"], not_found["codespace"]) == (38, "sdk")
    assert not_found["log"].startswith(f"rpc error: code = NotFound desc = account {missing}")
    invalid = await abci(
        on_node,
        "/cosmos.bank.v1beta1.Query/AllBalances",
        bank_query.QueryAllBalancesRequest(address="akash1nope").SerializeToString(),
    )
    assert invalid["code"] == 18 and "InvalidArgument" in invalid["log"]
    unknown = await abci(on_node, "/cosmos.staking.v1beta1.Query/Validators", b"")
    assert unknown["code"] == 6 and "unknown query path" in unknown["log"]
    future = await abci(on_node, "/cosmos.bank.v1beta1.Query/Balance", balance, height="99999999")
    assert future["code"] == 26
    with pytest.raises(RPCError, match="not hex"):
        await on_node.rpc.call("abci_query", path="/x", data="zz")


# -- tx_search, tx with proof, broadcasts ---------------------------------------------------
async def search(chain: DevnetClients, query: str, **extra: Any) -> dict[str, Any]:
    return await chain.rpc.call("tx_search", query=query, **extra)  # type: ignore[no-any-return]


async def test_tx_search_finds_transactions_by_hash_height_and_events(
    on_node: DevnetClients,
) -> None:
    wallet = on_node.wallet("tenant-3")
    recipient = Signer.generate().address
    sent = [
        await wallet.send(msgs.send(wallet.address, recipient, [Coin(denom="uakt", amount=n)]))
        for n in (1, 2, 3)
    ]
    hashes = [s.hash for s in sent]
    by_recipient = await search(on_node, f"transfer.recipient='{recipient}'")
    assert [t["hash"] for t in by_recipient["txs"]] == hashes
    assert by_recipient["total_count"] == "3"
    first_page = await search(
        on_node, f"message.sender='{wallet.address}' AND transfer.recipient='{recipient}'",
        per_page="2", page="1", order_by="desc",
    )  # fmt: skip
    second_page = await search(
        on_node, f"transfer.recipient='{recipient}'", per_page="2", page="2", order_by="desc"
    )
    assert [t["hash"] for t in first_page["txs"] + second_page["txs"]] == hashes[::-1]
    assert (await search(on_node, f"tx.hash='{hashes[1]}'"))["txs"][0]["height"] == str(
        sent[1].height
    )
    window = await search(
        on_node,
        f"tx.height>={sent[1].height} AND tx.height<={sent[2].height} "
        f"AND transfer.recipient='{recipient}'",
    )
    assert [t["hash"] for t in window["txs"]] == hashes[1:]
    amounts = await search(
        on_node, f"transfer.recipient='{recipient}' AND transfer.amount CONTAINS '2uakt'"
    )
    assert [t["hash"] for t in amounts["txs"]] == [hashes[1]]
    assert (await search(on_node, f"tx.height={sent[0].height} AND tx.fee EXISTS"))[
        "total_count"
    ] == "1"
    assert (await search(on_node, "transfer.recipient='akash1nobody'"))["total_count"] == "0"

    with pytest.raises(RPCError, match="page should be within"):
        await search(on_node, f"transfer.recipient='{recipient}'", page="3", per_page="2")
    with pytest.raises(RPCError, match="failed to parse query"):
        await search(on_node, "transfer.recipient=")

    # a proof leads from the transaction to its block's data hash
    proven = (await search(on_node, f"tx.hash='{hashes[0]}'", prove=True))["txs"][0]
    proof = proven["proof"]
    block = await on_node.rpc.call("block", height=proven["height"])
    assert proof["root_hash"] == block["block"]["header"]["data_hash"]
    node_hash = hashlib.sha256(
        b"\0" + hashlib.sha256(base64.b64decode(proof["data"])).digest()
    ).digest()
    assert base64.b64decode(proof["proof"]["leaf_hash"]) == node_hash
    index, total = int(proof["proof"]["index"]), int(proof["proof"]["total"])
    aunts = [base64.b64decode(a) for a in proof["proof"]["aunts"]]
    assert compute_root(node_hash, index, total, aunts).hex().upper() == proof["root_hash"]


def compute_root(leaf: bytes, index: int, total: int, aunts: list[bytes]) -> bytes:
    """CometBFT's ``computeHashFromAunts``."""
    if total == 1:
        return leaf
    k = 1
    while k * 2 < total:
        k *= 2
    if index < k:
        left = compute_root(leaf, index, k, aunts[:-1])
        return hashlib.sha256(b"\1" + left + aunts[-1]).digest()
    right = compute_root(leaf, index - k, total - k, aunts[:-1])
    return hashlib.sha256(b"\1" + aunts[-1] + right).digest()


async def signed_send(chain: DevnetClients, sender: str) -> tuple[Wallet, bytes]:
    wallet = chain.wallet(sender)
    await wallet.refresh()
    message = msgs.send(wallet.address, Signer.generate().address, [Coin(denom="uakt", amount=3)])
    return wallet, wallet.sign([message])


async def test_broadcast_tx_commit_waits_for_the_block_and_async_does_not(
    on_node: DevnetClients,
) -> None:
    _, raw = await signed_send(on_node, "faucet")
    committed = await on_node.rpc.call("broadcast_tx_commit", tx=base64.b64encode(raw).decode())
    assert committed["check_tx"]["code"] == 0
    assert committed["tx_result"]["code"] == 0 and int(committed["height"]) > 0
    found = await on_node.rpc.tx(committed["hash"])
    assert found.height == int(committed["height"])

    again = await on_node.rpc.call("broadcast_tx_commit", tx=base64.b64encode(raw).decode())
    assert again["check_tx"]["code"] != 0 and again["height"] == "0"  # the same sequence again

    _, raw = await signed_send(on_node, "faucet")
    queued = await on_node.rpc.call("broadcast_tx_async", tx=base64.b64encode(raw).decode())
    assert queued["code"] == 0
    assert (await on_node.rpc.wait_tx(queued["hash"], timeout=20)).ok


# -- the Cosmos REST transaction service -------------------------------------------------------
async def lcd(chain: DevnetClients, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One REST call; a ``str`` body is sent as it is, anything else as JSON."""
    data = {"data": body} if isinstance(body, str) else {"json": body}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, chain.devnet.lcd_url + path, **data) as response,
    ):
        return response.status, await response.json()


async def test_the_rest_transaction_service_broadcasts_finds_and_simulates(
    on_node: DevnetClients,
) -> None:
    wallet, raw = await signed_send(on_node, "competitor")
    status, answer = await lcd(
        on_node,
        "POST",
        "/cosmos/tx/v1beta1/txs",
        {"tx_bytes": base64.b64encode(raw).decode(), "mode": "BROADCAST_MODE_SYNC"},
    )
    assert status == 200 and answer["tx_response"]["code"] == 0, answer
    tx_hash = answer["tx_response"]["txhash"]
    committed = await on_node.rpc.wait_tx(tx_hash, timeout=20)

    status, found = await lcd(on_node, "GET", f"/cosmos/tx/v1beta1/txs/{tx_hash}")
    assert status == 200
    response = found["tx_response"]
    assert (int(response["height"]), response["gas_used"]) == (
        committed.height,
        str(committed.gas_used),
    )
    [message] = found["tx"]["body"]["messages"]
    assert message["@type"] == "/cosmos.bank.v1beta1.MsgSend"
    assert message["from_address"] == wallet.address
    assert found["tx"]["signatures"] == [
        base64.b64encode(tx_pb2.TxRaw.FromString(raw).signatures[0]).decode()
    ]

    status, listed = await lcd(
        on_node, "GET", f"/cosmos/tx/v1beta1/txs?query=message.sender%3D%27{wallet.address}%27"
    )
    assert status == 200 and tx_hash in [r["txhash"] for r in listed["tx_responses"]]

    # an unsigned copy, as clients send it to be simulated, needs at least the gas it used
    signed = tx_pb2.TxRaw.FromString(raw)
    auth = tx_pb2.AuthInfo.FromString(signed.auth_info_bytes)
    auth.signer_infos[0].mode_info.single.mode = tx_pb2.SIGN_MODE_UNSPECIFIED
    del auth.fee.amount[:]
    auth.fee.gas_limit = 0
    unsigned = tx_pb2.TxRaw(
        body_bytes=signed.body_bytes, auth_info_bytes=auth.SerializeToString(), signatures=[b""]
    )
    auth.signer_infos[0].sequence += 1  # the account's next sequence
    unsigned.auth_info_bytes = auth.SerializeToString()
    status, simulated = await lcd(
        on_node,
        "POST",
        "/cosmos/tx/v1beta1/simulate",
        {"tx_bytes": base64.b64encode(unsigned.SerializeToString()).decode()},
    )
    assert status == 200, simulated
    assert int(simulated["gas_info"]["gas_used"]) >= committed.gas_used
    assert simulated["result"]["msg_responses"] == [
        {"@type": "/cosmos.bank.v1beta1.MsgSendResponse"}
    ]

    stranger = Signer.generate()
    auth.signer_infos[0].public_key.CopyFrom(pack(keys_pb2.PubKey(key=stranger.public_key)))
    unsigned.auth_info_bytes = auth.SerializeToString()
    status, refused = await lcd(
        on_node,
        "POST",
        "/cosmos/tx/v1beta1/simulate",
        {"tx_bytes": base64.b64encode(unsigned.SerializeToString()).decode()},
    )
    assert status == 400 and "pubKey does not match signer address" in refused["message"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "said"),
    [
        ("POST", "/cosmos/tx/v1beta1/txs", {"tx_bytes": "***"}, 400, "not base64"),
        ("POST", "/cosmos/tx/v1beta1/txs", {"mode": "BROADCAST_MODE_SYNC"}, 400, "tx_bytes"),
        (
            "POST",
            "/cosmos/tx/v1beta1/txs",
            {"tx_bytes": "AA==", "mode": "BROADCAST_MODE_BLOCK"},
            400,
            "SYNC",
        ),
        (
            "POST",
            "/cosmos/tx/v1beta1/txs",
            {"tx_bytes": "AA==", "mode": "FAST"},
            400,
            "broadcast mode",
        ),
        ("POST", "/cosmos/tx/v1beta1/txs", [1], 400, "JSON object"),
        ("POST", "/cosmos/tx/v1beta1/txs", "[" * 20_000, 400, "nested too deeply"),
        ("POST", "/cosmos/tx/v1beta1/simulate", '{"a":' * 20_000, 400, "nested too deeply"),
        ("POST", "/cosmos/tx/v1beta1/simulate", "{x", 400, "not JSON"),
        ("POST", "/cosmos/tx/v1beta1/simulate", {"tx_bytes": "AA=="}, 400, "tx parse error"),
        ("GET", "/cosmos/tx/v1beta1/txs/" + "AB" * 32, None, 404, "tx not found"),
        ("GET", "/cosmos/tx/v1beta1/txs/xyz", None, 400, "64 hex digits"),
        ("GET", "/cosmos/tx/v1beta1/txs", None, 400, "query cannot be empty"),
        ("GET", "/cosmos/tx/v1beta1/txs?query=tx.height%3D", None, 400, "invalid query"),
        ("PUT", "/cosmos/tx/v1beta1/txs", None, 405, "GET and POST"),
        ("GET", "/cosmos/tx/v1beta1/simulate", None, 405, "serves POST"),
    ],
)
async def test_the_rest_transaction_service_refuses_bad_input_with_4xx(
    on_node: DevnetClients, method: str, path: str, body: Any, status: int, said: str
) -> None:
    got, answer = await lcd(on_node, method, path, body)
    assert got == status, answer
    assert said in answer["message"]


# -- gRPC ----------------------------------------------------------------------------------
async def test_grpc_answers_the_same_bytes_as_abci_query_and_grpc_statuses(
    on_node: DevnetClients,
) -> None:
    tenant = on_node.devnet.signer("tenant-2").address
    balance = bank_query.QueryBalanceRequest(address=tenant, denom="uakt").SerializeToString()
    target = on_node.devnet.grpc_url.removeprefix("http://")
    async with grpc.aio.insecure_channel(target) as channel:

        async def call(path: str, request: bytes) -> bytes:
            method = channel.unary_unary(path)
            return await method(request, timeout=10)  # type: ignore[no-any-return]

        over_grpc = await call("/cosmos.bank.v1beta1.Query/Balance", balance)
        over_abci = await abci(on_node, "/cosmos.bank.v1beta1.Query/Balance", balance)
        assert over_grpc == base64.b64decode(over_abci["value"])

        missing = bank_query.QueryBalanceRequest(address=Signer.generate().address)
        expected = [
            ("/cosmos.auth.v1beta1.Query/Account", missing.SerializeToString(), "NOT_FOUND"),
            ("/cosmos.bank.v1beta1.Query/Balance", b"\x0a\x03abc", "INVALID_ARGUMENT"),
            ("/cosmos.bank.v1beta1.Query/Balance", b"\xff\xff", "INVALID_ARGUMENT"),
            ("/cosmos.staking.v1beta1.Query/Validators", b"", "UNIMPLEMENTED"),
            ("/cosmos.tx.v1beta1.Service/Simulate", b"\x12\x01\x00", "UNKNOWN"),
        ]
        for path, request, status in expected:
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await call(path, request)
            assert failed.value.code().name == status, (path, failed.value.details())
            assert failed.value.details()
    assert on_node.devnet.height() > 0  # still serving
