"""The CometBFT RPC subset: ``status``, ``health``, ``block``, ``block_results``, ``tx``,
``broadcast_tx_sync`` (JSON-RPC POST at ``/`` or GET ``/<method>?…``) and the ``/websocket``
subscription to ``tm.event='NewBlockHeader'``.

Answers have CometBFT 0.38's shapes (heights as strings, base64 transactions), so the same
client code runs against this devnet and a real Akash node. Errors come with CometBFT's HTTP
statuses: a POST body that is not JSON gets 500 (-32700); one that is neither a request nor
a batch gets 400 (-32600); a GET with bad parameters gets 500 (-32602) and an unknown GET
method 404; errors inside a well-formed POST come with 200. The websocket answers every
frame, text or binary, and stays open.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSMsgType, web

from akdevnet.app import App
from akdevnet.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_BATCH,
    MAX_BODY,
    METHOD_NOT_FOUND,
    Request,
    RPCFailure,
    answer,
    kind,
    parse,
    read_request,
)
from akdevnet.store import BlockRecord, Doc

log = logging.getLogger("akdevnet.rpc")

COMET_VERSION = "0.38.21"
NODE_ID = "d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3"
BYTES_PARAMS = frozenset({"hash", "tx"})
WEBSOCKET_ONLY = frozenset({"subscribe", "unsubscribe", "unsubscribe_all"})


def _internal(data: str) -> RPCFailure:
    return RPCFailure(INTERNAL_ERROR, data)


def _invalid(data: str) -> RPCFailure:
    return RPCFailure(INVALID_PARAMS, data)


def _bytes_param(value: Any, name: str) -> bytes:
    """A bytes parameter, base64 as in JSON-RPC bodies."""
    if value is None or value == "":
        raise _invalid(f"missing {name}")
    if not isinstance(value, str):
        raise _invalid(f"{name} must be a base64 string, not {kind(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise _invalid(f"{name}: {value[:80]!r} is not base64 ({exc})") from exc


def _uri_param(name: str, value: str) -> str:
    """A URI query value as its JSON-RPC form: quotes dropped, ``0x…`` hex bytes to base64."""
    text = value.strip('"')
    if name in BYTES_PARAMS and text[:2].lower() == "0x":
        try:
            return base64.b64encode(bytes.fromhex(text[2:])).decode()
        except ValueError as exc:
            raise _invalid(f"{name}: {value[:80]!r} is not hex") from exc
    return text


def _offer(queue: asyncio.Queue[Doc], item: Doc) -> None:
    """Queue ``item``; a slow subscriber loses its oldest headers, the chain goes on."""
    if queue.full():
        with contextlib.suppress(asyncio.QueueEmpty):
            queue.get_nowait()
    queue.put_nowait(item)


class RPCServer:
    """JSON-RPC over HTTP and websocket for one :class:`App`."""

    def __init__(self, app: App, *, node_address: str = "") -> None:
        self.app = app
        self.node_address = node_address
        self._subscribers: dict[asyncio.Queue[Doc], tuple[Any, str]] = {}
        self.methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "status": self.status,
            "health": self.health,
            "block": self.block,
            "block_results": self.block_results,
            "tx": self.tx,
            "broadcast_tx_sync": self.broadcast_tx_sync,
        }

    def routes(self) -> web.Application:
        http = web.Application(client_max_size=MAX_BODY)
        http.router.add_post("/", self._post)
        http.router.add_get("/websocket", self._websocket)
        http.router.add_get("/{method}", self._get)
        return http

    # -- transport ------------------------------------------------------------------------
    async def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        handler = self.methods.get(method)
        if handler is None:
            where = " over HTTP; use the websocket" if method in WEBSOCKET_ONLY else ""
            raise RPCFailure(METHOD_NOT_FOUND, f"method {method[:80]!r} is not served{where}")
        return await handler(params)

    async def _call(self, message: Any) -> Doc:
        """The answer to one parsed request (an error answer when it is not one)."""
        request = read_request(message)
        return request if not isinstance(request, Request) else await self._run(request)

    async def _run(self, request: Request) -> Doc:
        try:
            return answer(request.id, await self._dispatch(request.method, request.params))
        except RPCFailure as failure:
            return answer(request.id, error=failure)

    async def _post(self, request: web.Request) -> web.Response:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            too_large = RPCFailure(INVALID_REQUEST, f"request body larger than {MAX_BODY} bytes")
            return web.json_response(answer(None, error=too_large), status=400)
        try:
            message = parse(body)
        except RPCFailure as failure:
            return web.json_response(answer(None, error=failure), status=500)
        if isinstance(message, list):
            if not message or len(message) > MAX_BATCH:
                size = f"{len(message)} requests, at most {MAX_BATCH}" if message else "empty"
                refused = RPCFailure(INVALID_REQUEST, f"batch is {size}")
                return web.json_response(answer(None, error=refused), status=400)
            return web.json_response([await self._call(item) for item in message])
        status = 200 if isinstance(message, dict) else 400
        return web.json_response(await self._call(message), status=status)

    async def _get(self, request: web.Request) -> web.Response:
        try:
            params = {k: _uri_param(k, v) for k, v in request.query.items()}
            result = await self._dispatch(request.match_info["method"], params)
        except RPCFailure as failure:
            status = 404 if failure.code == METHOD_NOT_FOUND else 500
            return web.json_response(answer(-1, error=failure), status=status)
        return web.json_response(answer(-1, result))

    # -- methods --------------------------------------------------------------------------
    def _height(self, params: dict[str, Any]) -> int:
        raw = params.get("height")
        if raw is None or str(raw) in ("", "0"):
            return self.app.height
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise _invalid(f"height must be a string or an integer, not {kind(raw)}")
        try:
            height = int(raw)
        except ValueError as exc:
            raise _invalid(f"height {str(raw)[:80]!r} is not a number") from exc
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
            _offer(queue, header)

    async def close_subscriptions(self) -> None:
        for queue in list(self._subscribers):
            _offer(queue, {})

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=MAX_BODY)
        await ws.prepare(request)
        queue: asyncio.Queue[Doc] = asyncio.Queue(maxsize=1000)
        pusher = asyncio.create_task(self._push(ws, queue))
        try:
            async for frame in ws:
                if frame.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                    break
                reply = await self._websocket_call(frame.data, queue)
                try:
                    await ws.send_json(reply)
                except ConnectionResetError:
                    break
        finally:
            self._subscribers.pop(queue, None)
            pusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pusher
        return ws

    async def _websocket_call(self, data: str | bytes, queue: asyncio.Queue[Doc]) -> Doc:
        """The answer to one frame; (un)subscribing acts on this connection's ``queue``."""
        try:
            message = parse(data)
        except RPCFailure as failure:
            return answer(None, error=failure)
        if isinstance(message, list):
            batch = RPCFailure(INVALID_REQUEST, "got a batch; send one request per frame")
            return answer(None, error=batch)
        request = read_request(message)
        if not isinstance(request, Request):
            return request
        if request.method == "subscribe":
            query = request.params.get("query", "")
            if not isinstance(query, str):
                return answer(
                    request.id, error=_invalid(f"query must be a string, not {kind(query)}")
                )
            if "NewBlockHeader" not in query and "NewBlock" not in query:
                return answer(request.id, error=_invalid(f"unsupported query {query[:200]!r}"))
            self._subscribers[queue] = (request.id, query)
            return answer(request.id, {})
        if request.method in ("unsubscribe", "unsubscribe_all"):
            self._subscribers.pop(queue, None)
            return answer(request.id, {})
        return await self._run(request)

    async def _push(self, ws: web.WebSocketResponse, queue: asyncio.Queue[Doc]) -> None:
        """Send this connection's subscribed headers as they come; close on shutdown."""
        while True:
            header = await queue.get()
            if not header:
                await ws.close()
                return
            subscription = self._subscribers.get(queue)
            if subscription is None:
                continue
            request_id, query = subscription
            event = {
                "query": query,
                "data": {"type": "tendermint/event/NewBlockHeader", "value": {"header": header}},
                "events": {"tm.event": ["NewBlockHeader"]},
            }
            try:
                await ws.send_json(answer(request_id, event))
            except ConnectionResetError:
                return
