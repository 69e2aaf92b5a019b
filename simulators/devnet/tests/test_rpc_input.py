"""Malformed input to the RPC (websocket, JSON-RPC POST, URI GET) and the LCD: an error that
says what is wrong, in the shape and with the HTTP status the real node uses, and the
connection stays usable."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from yarl import URL

from akdevnet.testing import DevnetProcess

PARSE, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
HEALTH = {"jsonrpc": "2.0", "id": "ok", "method": "health"}

# (frame, JSON-RPC error code, id of the answer, HTTP status of a POST with it)
BAD_FRAMES: list[tuple[str, int, Any, int]] = [
    ("[]", INVALID_REQUEST, None, 400),
    ('"x"', INVALID_REQUEST, None, 400),
    ("null", INVALID_REQUEST, None, 400),
    ("1", INVALID_REQUEST, None, 400),
    ("not json", PARSE, None, 500),
    ("[" * 100_000, PARSE, None, 500),
    ('{"id": 1, "method": "health", "x": NaN}', PARSE, None, 500),
    ('{"jsonrpc": "2.0", "id": 7, "method": "health", "params": []}', INVALID_PARAMS, 7, 200),
    ('{"jsonrpc": "2.0", "id": "s", "method": "block", "params": "x"}', INVALID_PARAMS, "s", 200),
    ('{"jsonrpc": "2.0", "id": 8, "method": "subscribe", "params": [1]}', INVALID_PARAMS, 8, 200),
    ('{"jsonrpc": "2.0", "id": {}, "method": "health"}', INVALID_REQUEST, None, 200),
    ('{"jsonrpc": "2.0", "id": 1e400, "method": "health"}', INVALID_REQUEST, None, 200),
    ('{"jsonrpc": "2.0", "id": 10, "method": 5}', INVALID_REQUEST, 10, 200),
    (
        '{"jsonrpc": "2.0", "id": 11, "method": "broadcast_tx_sync", "params": {"tx": 5}}',
        INVALID_PARAMS,
        11,
        200,
    ),
    (
        '{"jsonrpc": "2.0", "id": 12, "method": "broadcast_tx_sync", "params": {"tx": "*"}}',
        INVALID_PARAMS,
        12,
        200,
    ),
]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevnetProcess]:
    with DevnetProcess(Path(tmp_path_factory.mktemp("rpc-input")) / "devnet") as process:
        yield process


def assert_error(answer: Any, code: int, request_id: Any) -> None:
    assert isinstance(answer, dict), answer
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] == request_id
    assert answer["error"]["code"] == code
    assert answer["error"]["data"]


async def test_the_websocket_answers_every_bad_frame_and_stays_usable(node: DevnetProcess) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{node.rpc_url}/websocket") as ws,
    ):
        for frame, code, request_id, _ in BAD_FRAMES:
            await ws.send_str(frame)
            assert_error(await ws.receive_json(timeout=5), code, request_id)
        await ws.send_json(
            {"jsonrpc": "2.0", "id": 9, "method": "subscribe", "params": {"query": 5}}
        )
        assert_error(await ws.receive_json(timeout=5), INVALID_PARAMS, 9)
        await ws.send_str(json.dumps([HEALTH]))
        assert_error(await ws.receive_json(timeout=5), INVALID_REQUEST, None)
        await ws.send_bytes(b"\xff\x00")
        assert_error(await ws.receive_json(timeout=5), PARSE, None)
        await ws.send_bytes(json.dumps(HEALTH).encode())
        assert await ws.receive_json(timeout=5) == {"jsonrpc": "2.0", "id": "ok", "result": {}}
        subscribe = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "subscribe",
            "params": {"query": "tm.event='NewBlockHeader'"},
        }
        await ws.send_json(subscribe)
        assert (await ws.receive_json(timeout=5))["result"] == {}
        pushed = await ws.receive_json(timeout=5)
        assert int(pushed["result"]["data"]["value"]["header"]["height"]) > 0
        assert not ws.closed


async def test_json_rpc_posts_get_errors_with_cometbft_statuses(node: DevnetProcess) -> None:
    async with aiohttp.ClientSession() as session:
        for frame, code, request_id, status in BAD_FRAMES:
            async with session.post(f"{node.rpc_url}/", data=frame.encode()) as response:
                assert_error(await response.json(), code, request_id)
                assert response.status == status, frame
        # a batch is fine over HTTP (one answer per request), not on the websocket
        async with session.post(f"{node.rpc_url}/", json=[HEALTH]) as response:
            assert response.status == 200
            assert await response.json() == [{"jsonrpc": "2.0", "id": "ok", "result": {}}]
        batch = [HEALTH, 3, {"jsonrpc": "2.0", "id": 4, "method": "block", "params": []}]
        async with session.post(f"{node.rpc_url}/", json=batch) as response:
            assert response.status == 200
            answers = await response.json()
        assert answers[0]["result"] == {}
        assert_error(answers[1], INVALID_REQUEST, None)
        assert_error(answers[2], INVALID_PARAMS, 4)
        async with session.post(f"{node.rpc_url}/", data=io.BytesIO(b" " * 1_100_000)) as response:
            assert response.status == 400
            assert_error(await response.json(), INVALID_REQUEST, None)
            assert "1000000" in (await response.json())["error"]["data"]


@pytest.mark.parametrize(
    ("path", "status", "code", "said"),
    [
        ("/block?height=0x10", 500, INVALID_PARAMS, "'0x10'"),
        ("/block?height=abc", 500, INVALID_PARAMS, "height 'abc'"),
        ("/block_results?height=1.5", 500, INVALID_PARAMS, "height '1.5'"),
        ("/tx?hash=0xzz", 500, INVALID_PARAMS, "hash"),
        ("/tx?hash=%22abc%22", 500, INVALID_PARAMS, "hash"),
        ("/broadcast_tx_sync?tx=0x", 500, INVALID_PARAMS, "tx"),
        ("/subscribe?query=x", 404, -32601, "websocket"),
    ],
)
async def test_uri_requests_with_bad_params_get_json_rpc_errors(
    node: DevnetProcess, path: str, status: int, code: int, said: str
) -> None:
    async with aiohttp.ClientSession() as session, session.get(node.rpc_url + path) as response:
        answer = await response.json()
    assert response.status == status
    assert_error(answer, code, -1)
    assert said in answer["error"]["data"]


LIST = "/akash/market/v1beta5/orders/list"


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"pagination.limit": "²"}, "pagination.limit: '²'"),
        ({"pagination.limit": "١"}, "pagination.limit"),
        ({"pagination.offset": str(2**64)}, "pagination.offset"),
        ({"pagination.key": base64.b64encode(b"-5").decode()}, "pagination key"),
        ({"filters.owner": "x", "filters.dseq": str(2**64)}, "filters.dseq"),
        ({"filters.owner": "x", "filters.dseq": "1", "filters.gseq": "-1"}, "filters.gseq"),
        ({"filters.state": "opne"}, "filters.state"),
    ],
)
async def test_lcd_refuses_bad_numbers_and_keys_with_400(
    node: DevnetProcess, query: dict[str, str], said: str
) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.get(node.lcd_url + LIST, params=query) as response,
    ):
        body = await response.json()
    assert response.status == 400, body
    assert body["code"] == 3
    assert said in body["message"]


async def test_lcd_answers_other_methods_with_a_json_405(node: DevnetProcess) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(node.lcd_url + LIST, data=b"{}") as response,
    ):
        body = await response.json()
    assert response.status == 405
    assert LIST in body["message"]
    assert "GET" in body["message"]


async def test_lcd_path_parameters_may_hold_any_character(node: DevnetProcess) -> None:
    url = URL(node.lcd_url).with_path("/akash/provider/v1beta4/providers/%7Bx%7D", encoded=True)
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        body = await response.json()
    assert response.status == 404, body
    assert body["code"] == 5
    assert "{x}" in body["message"]
