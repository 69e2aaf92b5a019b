"""The CometBFT RPC: node status, blocks and their results, transactions, new-block pushes.

Calls are JSON-RPC 2.0 POSTs to the node's RPC root (port 26657 on a real node); the
websocket at ``/websocket`` pushes ``NewBlockHeader`` events. Heights and counts arrive as
strings, as CometBFT sends them.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from akchain.errors import BadResponse, ChainError, NodeUnavailable, NotFound, describe
from akchain.models import NodeStatus, TxResult
from akchain.transport import HTTPClient

NEW_BLOCK_HEADER_QUERY = "tm.event='NewBlockHeader'"


class RPCError(ChainError):
    """The node answered a JSON-RPC error (bad height, unknown transaction…)."""

    def __init__(self, method: str, code: int, message: str, data: str) -> None:
        self.method, self.code, self.message, self.data = method, code, message, data
        super().__init__(f"{method}: {message} ({data})" if data else f"{method}: {message}")


class RPCClient(HTTPClient):
    """One node's CometBFT RPC endpoint. Use as an async context manager or call :meth:`close`."""

    def __init__(
        self, base_url: str, *, session: aiohttp.ClientSession | None = None, timeout: float = 10.0
    ) -> None:
        super().__init__(base_url, session=session, timeout=timeout)
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> Any:
        """One JSON-RPC call; its ``result``."""
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        try:
            async with self._client().post(self.base_url + "/", json=request) as response:
                text = await response.text()
                status = response.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise NodeUnavailable(f"RPC {self.base_url} {method}: {describe(exc)}") from exc
        try:
            body = json.loads(text)
        except ValueError as exc:
            if status >= 500:
                raise NodeUnavailable(f"RPC {method} answered HTTP {status}") from exc
            raise BadResponse(
                f"RPC {method} answered HTTP {status} with non-JSON: {text[:200]!r}"
            ) from exc
        if not isinstance(body, dict):
            raise BadResponse(f"RPC {method}: expected a JSON-RPC object")
        error = body.get("error")
        if error:
            raise RPCError(
                method,
                int(error.get("code", 0)),
                error.get("message", ""),
                str(error.get("data", "")),
            )
        if "result" not in body:
            raise BadResponse(f"RPC {method}: no result in the answer")
        return body["result"]

    async def status(self) -> NodeStatus:
        return NodeStatus.from_json(await self.call("status"))

    async def block(self, height: int) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("block", height=str(height))
        return result

    async def block_results(self, height: int) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("block_results", height=str(height))
        return result

    async def broadcast_tx_sync(self, raw: bytes) -> TxResult:
        """Submit a signed ``TxRaw``; its CheckTx result (code 0: accepted into the mempool)."""
        return TxResult.from_json(
            await self.call("broadcast_tx_sync", tx=base64.b64encode(raw).decode())
        )

    async def tx(self, tx_hash: str) -> TxResult:
        """A committed transaction by hash; ``NotFound`` while it is not in a block."""
        try:
            result = await self.call("tx", hash=base64.b64encode(bytes.fromhex(tx_hash)).decode())
        except RPCError as exc:
            if "not found" in f"{exc.message} {exc.data}":
                raise NotFound(f"transaction {tx_hash} not found") from exc
            raise
        return TxResult.from_json(result)

    async def wait_tx(self, tx_hash: str, *, timeout: float = 30.0, poll: float = 0.2) -> TxResult:
        """Poll until the transaction is in a block; ``TimeoutError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await self.tx(tx_hash)
            except NotFound:
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"transaction {tx_hash} not committed after {timeout:.0f}s"
                    ) from None
            await asyncio.sleep(poll)

    async def new_block_heights(self) -> AsyncIterator[int]:
        """Heights of new blocks as the node pushes them; ``NodeUnavailable`` on disconnect."""
        url = self.base_url + "/websocket"
        subscribe = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "subscribe",
            "params": {"query": NEW_BLOCK_HEADER_QUERY},
        }
        try:
            async with self._client().ws_connect(
                url, heartbeat=30.0, timeout=aiohttp.ClientWSTimeout(ws_close=1.0)
            ) as ws:
                await ws.send_json(subscribe)
                async for frame in ws:
                    if frame.type != aiohttp.WSMsgType.TEXT:
                        break
                    height = _header_height(json.loads(frame.data))
                    if height is not None:
                        yield height
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise NodeUnavailable(f"RPC websocket {url}: {describe(exc)}") from exc
        raise NodeUnavailable(f"RPC websocket {url} closed")


def _header_height(message: Any) -> int | None:
    if not isinstance(message, dict):
        return None
    if message.get("error"):
        raise NodeUnavailable(f"websocket subscription refused: {message['error']}")
    value = ((message.get("result") or {}).get("data") or {}).get("value") or {}
    header = value.get("header")
    return int(header["height"]) if isinstance(header, dict) and "height" in header else None
