"""The CometBFT RPC subset: ``status``, ``health``, ``block``, ``block_results``, ``tx``,
``broadcast_tx_sync`` (JSON-RPC POST at ``/`` or GET ``/<method>?…``) and the ``/websocket``
subscription to ``tm.event='NewBlockHeader'``.

Answers have CometBFT 0.38's shapes (heights as strings, base64 transactions), so the same
client code runs against this devnet and a real Akash node.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSMsgType, web

from akdevnet.app import App
from akdevnet.store import BlockRecord, Doc

log = logging.getLogger("akdevnet.rpc")

COMET_VERSION = "0.38.21"
NODE_ID = "d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3"


class RPCFailure(Exception):
    def __init__(self, code: int, message: str, data: str) -> None:
        self.code, self.message, self.data = code, message, data
        super().__init__(data)


def _internal(data: str) -> RPCFailure:
    return RPCFailure(-32603, "Internal error", data)


def _invalid(data: str) -> RPCFailure:
    return RPCFailure(-32602, "Invalid params", data)


def _bytes_param(value: Any, name: str) -> bytes:
    """A bytes parameter, base64 as in JSON-RPC bodies."""
    if not isinstance(value, str) or not value:
        raise _invalid(f"missing {name}")
    try:
        return base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise _invalid(f"{name}: {exc}") from exc


def _uri_param(value: str) -> str:
    """A URI query value as its JSON-RPC form: quotes dropped, ``0x…`` hex bytes to base64."""
    text = value.strip('"')
    if text[:2].lower() == "0x":
        try:
            return base64.b64encode(bytes.fromhex(text[2:])).decode()
        except ValueError as exc:
            raise _invalid(f"{value!r} is not hex") from exc
    return text


class RPCServer:
    """JSON-RPC over HTTP and websocket for one :class:`App`."""

    def __init__(self, app: App, *, node_address: str = "") -> None:
        self.app = app
        self.node_address = node_address
        self._subscribers: set[asyncio.Queue[Doc]] = set()
        self.methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "status": self.status,
            "health": self.health,
            "block": self.block,
            "block_results": self.block_results,
            "tx": self.tx,
            "broadcast_tx_sync": self.broadcast_tx_sync,
        }

    def routes(self) -> web.Application:
        http = web.Application()
        http.router.add_post("/", self._post)
        http.router.add_get("/websocket", self._websocket)
        http.router.add_get("/{method}", self._get)
        return http

    # -- transport ------------------------------------------------------------------------
    async def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        handler = self.methods.get(method)
        if handler is None:
            raise RPCFailure(-32601, "Method not found", method)
        return await handler(params)

    @staticmethod
    def _answer(request_id: Any, result: Any = None, error: RPCFailure | None = None) -> Doc:
        if error is not None:
            failure = {"code": error.code, "message": error.message, "data": error.data}
            return {"jsonrpc": "2.0", "id": request_id, "error": failure}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _post(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response(
                self._answer(None, error=RPCFailure(-32700, "Parse error", "not JSON"))
            )
        if not isinstance(body, dict):
            return web.json_response(
                self._answer(None, error=RPCFailure(-32600, "Invalid Request", "not an object"))
            )
        request_id = body.get("id", -1)
        params = body.get("params") or {}
        if not isinstance(params, dict):
            return web.json_response(
                self._answer(request_id, error=_invalid("params must be an object"))
            )
        try:
            result = await self._dispatch(str(body.get("method", "")), params)
        except RPCFailure as failure:
            return web.json_response(self._answer(request_id, error=failure))
        return web.json_response(self._answer(request_id, result))

    async def _get(self, request: web.Request) -> web.Response:
        try:
            params = {k: _uri_param(v) for k, v in request.query.items()}
            result = await self._dispatch(request.match_info["method"], params)
        except RPCFailure as failure:
            status = 404 if failure.code == -32601 else 500
            return web.json_response(self._answer(-1, error=failure), status=status)
        return web.json_response(self._answer(-1, result))

    # -- methods --------------------------------------------------------------------------
    def _height(self, params: dict[str, Any]) -> int:
        raw = params.get("height")
        if raw in (None, "", "0"):
            return self.app.height
        try:
            height = int(str(raw))
        except ValueError as exc:
            raise _invalid(f"height {raw!r} is not a number") from exc
        if height > self.app.height:
            raise _internal(
                f"height {height} must be less than or equal to the current blockchain "
                f"height {self.app.height}"
            )
        if height < 1:
            raise _internal(f"height {height} is not available, lowest height is 1")
        return height

    async def health(self, _: dict[str, Any]) -> Doc:
        return {}

    async def status(self, _: dict[str, Any]) -> Doc:
        app = self.app
        first = app.db.block(1)
        return {
            "node_info": {
                "protocol_version": {"p2p": "8", "block": "11", "app": "0"},
                "id": NODE_ID,
                "listen_addr": self.node_address,
                "network": app.chain_id,
                "version": COMET_VERSION,
                "channels": "40202122233038606100",
                "moniker": "akdevnet",
                "other": {"tx_index": "on", "rpc_address": self.node_address},
            },
            "sync_info": {
                "latest_block_hash": app.last_hash,
                "latest_app_hash": "",
                "latest_block_height": str(app.height),
                "latest_block_time": app.last_time,
                "earliest_block_hash": first[1] if first else "",
                "earliest_app_hash": "",
                "earliest_block_height": "1" if first else "0",
                "earliest_block_time": first[0] if first else app.last_time,
                "catching_up": False,
            },
            "validator_info": {
                "address": NODE_ID[:40].upper(),
                "pub_key": None,
                "voting_power": "10",
            },
        }

    def _header(self, height: int, time: str, block_hash: str, txs: int) -> Doc:
        return {
            "version": {"block": "11", "app": "0"},
            "chain_id": self.app.chain_id,
            "height": str(height),
            "time": time,
            "last_block_id": {"hash": "", "parts": {"total": 0, "hash": ""}},
            "num_txs": str(txs),
            "proposer_address": NODE_ID[:40].upper(),
            "data_hash": block_hash,
        }

    async def block(self, params: dict[str, Any]) -> Doc:
        height = self._height(params)
        found = self.app.db.block(height)
        if found is None:
            raise _internal(f"height {height} is not available")
        time, block_hash, txs, _ = found
        return {
            "block_id": {"hash": block_hash, "parts": {"total": 1, "hash": block_hash}},
            "block": {
                "header": self._header(height, time, block_hash, len(txs)),
                "data": {"txs": txs},
                "evidence": {"evidence": []},
                "last_commit": None,
            },
        }

    async def block_results(self, params: dict[str, Any]) -> Doc:
        height = self._height(params)
        found = self.app.db.block(height)
        if found is None:
            raise _internal(f"height {height} is not available")
        return found[3]

    async def tx(self, params: dict[str, Any]) -> Doc:
        digest = _bytes_param(params.get("hash"), "hash").hex().upper()
        found = self.app.db.tx(digest)
        if found is None:
            raise _internal(f"tx ({digest}) not found")
        height, index, raw, result = found
        return {
            "hash": digest,
            "height": str(height),
            "index": index,
            "tx_result": result,
            "tx": raw,
        }

    async def broadcast_tx_sync(self, params: dict[str, Any]) -> Doc:
        raw = _bytes_param(params.get("tx"), "tx")
        return self.app.check_tx(raw)

    # -- websocket ------------------------------------------------------------------------
    def announce(self, block: BlockRecord) -> None:
        """Push a new block's header to every subscriber."""
        header = self._header(block.height, block.time, block.hash, len(block.txs))
        for queue in list(self._subscribers):
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()  # a slow subscriber loses old headers; the chain goes on
            queue.put_nowait(header)

    async def close_subscriptions(self) -> None:
        for queue in list(self._subscribers):
            queue.put_nowait({})

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=30.0)
        await ws.prepare(request)
        queue: asyncio.Queue[Doc] = asyncio.Queue(maxsize=1000)
        subscription: tuple[Any, str] | None = None
        pusher: asyncio.Task[None] | None = None

        async def push() -> None:
            while True:
                header = await queue.get()
                if not header or subscription is None:
                    await ws.close()
                    return
                request_id, query = subscription
                event = {
                    "query": query,
                    "data": {
                        "type": "tendermint/event/NewBlockHeader",
                        "value": {"header": header},
                    },
                    "events": {"tm.event": ["NewBlockHeader"]},
                }
                await ws.send_json(self._answer(request_id, event))

        try:
            async for frame in ws:
                if frame.type != WSMsgType.TEXT:
                    break
                try:
                    message = json.loads(frame.data)
                except ValueError:
                    await ws.send_json(
                        self._answer(None, error=RPCFailure(-32700, "Parse error", "not JSON"))
                    )
                    continue
                method, request_id = message.get("method"), message.get("id")
                if method == "subscribe":
                    query = str((message.get("params") or {}).get("query", ""))
                    if "NewBlockHeader" not in query and "NewBlock" not in query:
                        await ws.send_json(
                            self._answer(request_id, error=_invalid(f"unsupported query {query!r}"))
                        )
                        continue
                    subscription = (request_id, query)
                    self._subscribers.add(queue)
                    if pusher is None:
                        pusher = asyncio.create_task(push())
                    await ws.send_json(self._answer(request_id, {}))
                elif method in ("unsubscribe", "unsubscribe_all"):
                    self._subscribers.discard(queue)
                    subscription = None
                    await ws.send_json(self._answer(request_id, {}))
                else:
                    try:
                        result = await self._dispatch(str(method), message.get("params") or {})
                    except RPCFailure as failure:
                        await ws.send_json(self._answer(request_id, error=failure))
                    else:
                        await ws.send_json(self._answer(request_id, result))
        finally:
            self._subscribers.discard(queue)
            if pusher is not None:
                pusher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pusher
        return ws
