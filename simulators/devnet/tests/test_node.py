"""The devnet process: restarts keep height and state; RPC and LCD answer like a node."""

from __future__ import annotations

import asyncio
import base64
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest

from akchain import msgs
from akchain.errors import NotFound
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient, RPCError
from akdevnet.testing import DevnetClients, DevnetProcess
from aktypes.coin import Coin
from aktypes.ids import DeploymentID
from aktypes.sdl import SDL


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
async def test_a_restart_continues_at_the_same_height_with_the_same_state(
    devnet: DevnetProcess, corpus: Callable[[str], SDL], sig: int
) -> None:
    async with devnet.clients() as chain:
        deployment = await chain.tenant().deploy(corpus("tetris.yaml"))
    height = devnet.height()
    devnet.restart(sig)
    assert devnet.height() >= height
    async with devnet.clients() as chain:
        assert (await chain.lcd.deployment(deployment)).state == "active"
        assert (await chain.rpc.block_results(height))["height"] == str(height)
        # the chain keeps going and still takes transactions from the same account
        second = await chain.tenant().deploy(corpus("tetris.yaml"), dseq=deployment.dseq + 1)
        assert (await chain.lcd.deployment(second)).state == "active"


async def test_lists_page_through_every_item(
    chain: DevnetClients, corpus: Callable[[str], SDL]
) -> None:
    tenant = chain.tenant()
    created = [await tenant.deploy(corpus("tetris.yaml"), dseq=100 + i) for i in range(5)]
    async with LCDClient(chain.devnet.lcd_url, page_size=2) as small_pages:
        listed = await small_pages.deployments(owner=tenant.address)
        assert [d.id for d in listed] == created
        orders = await small_pages.orders(owner=tenant.address, state="open")
        assert len(orders) == 5
    body = await chain.lcd.get(
        "/akash/deployment/v1beta4/deployments/list",
        {"pagination.limit": 2, "filters.owner": tenant.address},
    )
    assert body["pagination"]["next_key"]
    assert len(body["deployments"]) == 2


async def test_errors_look_like_a_cosmos_node(chain: DevnetClients) -> None:
    with pytest.raises(NotFound):
        await chain.lcd.deployment(
            DeploymentID(owner=chain.devnet.signer("tenant-1").address, dseq=999_999)
        )
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{chain.devnet.lcd_url}/akash/market/v1beta5/orders/info",
            params={"id.owner": "x", "id.dseq": "abc"},
        ) as response,
    ):
        assert response.status == 400
        body = await response.json()
        assert body["code"] == 3
        assert "id.dseq" in body["message"]
    with pytest.raises(RPCError) as too_high:
        await chain.rpc.block_results(10**9)
    assert "must be less than or equal to the current blockchain height" in too_high.value.data


async def test_the_websocket_pushes_every_new_block_header(chain: DevnetClients) -> None:
    heights: list[int] = []
    async with RPCClient(chain.devnet.rpc_url) as rpc:

        async def collect() -> None:
            async for height in rpc.new_block_heights():
                heights.append(height)
                if len(heights) == 5:
                    return

        await asyncio.wait_for(collect(), timeout=10)
    assert heights == list(range(heights[0], heights[0] + 5))


def test_the_cli_reports_a_bad_sdl_and_a_wrong_passphrase_without_a_traceback(
    devnet: DevnetProcess, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: '2.0'\nservices: {}\n")
    common = ["--home", str(devnet.home), "--node", devnet.rpc_url, "--lcd", devnet.lcd_url]
    run = subprocess.run(
        [sys.executable, "-m", "akdevnet", "tenant", "deploy", str(bad), *common],
        capture_output=True,
        text=True,
        env={"AKDEVNET_KEY_PASSPHRASE": "devnet", "PATH": ""},
        check=False,
    )
    assert run.returncode == 1
    assert "is not a valid SDL" in run.stderr
    assert "Traceback" not in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "akdevnet", "tenant", "bids", "1", *common],
        capture_output=True,
        text=True,
        env={"AKDEVNET_KEY_PASSPHRASE": "wrong", "PATH": ""},
        check=False,
    )
    assert run.returncode == 1
    assert "wrong passphrase for key file" in run.stderr
    assert "Traceback" not in run.stderr


async def test_transactions_are_found_by_hash_in_both_rpc_forms(chain: DevnetClients) -> None:
    wallet = chain.wallet("tenant-1")
    committed = await wallet.send(
        msgs.send(
            wallet.address, chain.devnet.signer("tenant-2").address, [Coin(denom="uakt", amount=5)]
        )
    )
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{chain.devnet.rpc_url}/tx", params={"hash": f"0x{committed.hash}"}
        ) as response,
    ):
        body = await response.json()
    assert body["result"]["hash"] == committed.hash
    assert body["result"]["height"] == str(committed.height)
    # JSON-RPC carries bytes as base64, even base64 that happens to start with "0x"
    unknown = base64.b64encode(base64.b64decode("0x" + "A" * 41 + "=")).decode()
    assert unknown.startswith("0x")
    with pytest.raises(RPCError, match="not found"):
        await chain.rpc.call("tx", hash=unknown)
