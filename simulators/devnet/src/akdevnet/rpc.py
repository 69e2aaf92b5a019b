"""The CometBFT RPC that Cosmos clients use: ``status``, ``health``, ``abci_info``,
``abci_query``, ``block``, ``blockchain``, ``block_results``, ``commit``, ``validators``,
``genesis``, ``tx``, ``tx_search`` and ``broadcast_tx_sync``/``_async``/``_commit``
(JSON-RPC POST at ``/``, GET ``/<method>?…``, or a websocket frame), and the ``/websocket``
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
from akdevnet.consensus import Chain, consensus_params
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
from akdevnet.queries import QueryFailure, QueryServices
from akdevnet.store import BlockRecord, Doc
from akdevnet.txindex import (
    DEFAULT_PER_PAGE,
    MAX_PER_PAGE,
    QueryError,
    parse_query,
    rpc_tx,
    search,
)

log = logging.getLogger("akdevnet.rpc")

COMET_VERSION = "0.38.21"
APP_VERSION = "v2.0.0-akdevnet"
NODE_ID = "d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3"
BLOCKCHAIN_LIMIT = 20
BROADCAST_COMMIT_TIMEOUT = 10.0
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
    """A URI query value as its JSON-RPC form: quotes dropped, ``0x…`` hex bytes to base64
    (``abci_query``'s ``data`` is hex in JSON-RPC: ``0x…`` as is, a quoted string as hex)."""
    text = value.strip('"')
    if name == "data":
        if text[:2].lower() == "0x":
            return text[2:]
        return text.encode().hex() if value.startswith('"') else text
    if name in BYTES_PARAMS and text[:2].lower() == "0x":
        try:
            return base64.b64encode(bytes.fromhex(text[2:])).decode()
        except ValueError as exc:
            raise _invalid(f"{name}: {value[:80]!r} is not hex") from exc
    return text


def _int_param(params: dict[str, Any], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise _invalid(f"{name} must be a string or an integer, not {kind(raw)}")
    try:
        return int(raw)
    except ValueError as exc:
        raise _invalid(f"{name} {str(raw)[:80]!r} is not a number") from exc


def _bool_param(params: dict[str, Any], name: str) -> bool:
    raw = params.get(name)
    if raw is None or raw in ("", "false", False):
        return False
    if raw in ("true", True):
        return True
    raise _invalid(f"{name} must be true or false, not {str(raw)[:80]!r}")


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
        self.chain: Chain = app.chain
        self.queries = QueryServices(app)
        self._subscribers: dict[asyncio.Queue[Doc], tuple[Any, str]] = {}
        self._new_block = asyncio.Event()
        self.methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "status": self.status,
            "health": self.health,
            "abci_info": self.abci_info,
            "abci_query": self.abci_query,
            "block": self.block,
            "blockchain": self.blockchain,
            "block_results": self.block_results,
            "commit": self.commit,
            "validators": self.validators,
            "genesis": self.genesis,
            "tx": self.tx,
            "tx_search": self.tx_search,
            "broadcast_tx_sync": self.broadcast_tx_sync,
            "broadcast_tx_async": self.broadcast_tx_async,
            "broadcast_tx_commit": self.broadcast_tx_commit,
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
        latest_app_hash = self.chain.app_hash_after(app.height - 1).hex().upper()
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
                "latest_app_hash": latest_app_hash,
                "latest_block_height": str(app.height),
                "latest_block_time": app.last_time,
                "earliest_block_hash": first[1] if first else "",
                "earliest_app_hash": self.chain.genesis_app_hash().hex().upper(),
                "earliest_block_height": "1" if first else "0",
                "earliest_block_time": first[0] if first else app.last_time,
                "catching_up": False,
            },
            "validator_info": {
                key: value
                for key, value in self.chain.validator.info().items()
                if key != "proposer_priority"
            },
        }

    async def abci_info(self, _: dict[str, Any]) -> Doc:
        return {
            "response": {
                "data": "akash",
                "version": APP_VERSION,
                "app_version": "0",
                "last_block_height": str(self.app.height),
                "last_block_app_hash": base64.b64encode(self.app.app_hash).decode(),
            }
        }

    async def abci_query(self, params: dict[str, Any]) -> Doc:
        path = params.get("path")
        if not isinstance(path, str) or not path:
            raise _invalid("path must be a non-empty string")
        data = params.get("data") or ""
        if not isinstance(data, str):
            raise _invalid(f"data must be a hex string, not {kind(data)}")
        try:
            request = bytes.fromhex(data)
        except ValueError as exc:
            raise _invalid(f"data: {data[:80]!r} is not hex") from exc
        height = _int_param(params, "height", 0)
        _bool_param(params, "prove")
        answer: Doc = {
            "code": 0,
            "log": "",
            "info": "",
            "index": "0",
            "key": None,
            "value": None,
            "proofOps": None,
            "height": str(self.app.height),
            "codespace": "",
        }
        try:
            if height not in (0, self.app.height):
                raise self._past_or_future(height)
            value = self.queries.query(path, request)
        except QueryFailure as failure:
            return {
                "response": answer
                | {"code": failure.code, "codespace": failure.codespace, "log": failure.log}
            }
        return {"response": answer | {"value": base64.b64encode(value).decode()}}

    def _past_or_future(self, height: int) -> QueryFailure:
        """A query at another height than the latest: the devnet keeps no older state."""
        if height > self.app.height:
            return QueryFailure(
                26,
                "cannot query with height in the future; please provide a valid height: "
                "invalid height",
            )
        return QueryFailure(
            18, f"the devnet keeps only its latest state, not height {height}: invalid request"
        )

    def _header(self, height: int, time: str, txs: list[str]) -> Doc:
        return self.chain.header(height, time, txs)

    def _found(self, height: int) -> tuple[str, str, list[str], Doc]:
        found = self.app.db.block(height)
        if found is None:
            raise _internal(f"height {height} is not available")
        return found

    async def block(self, params: dict[str, Any]) -> Doc:
        height = self._height(params)
        time, block_hash, txs, _ = self._found(height)
        return {
            "block_id": self.chain.block_id(block_hash),
            "block": {
                "header": self._header(height, time, txs),
                "data": {"txs": txs},
                "evidence": {"evidence": []},
                "last_commit": self.chain.commit(height - 1),
            },
        }

    async def blockchain(self, params: dict[str, Any]) -> Doc:
        latest = self.app.height
        low = _int_param(params, "minHeight", 0)
        high = _int_param(params, "maxHeight", 0)
        if low < 0 or high < 0:
            raise _internal("heights must be non-negative")
        high = min(latest, high or latest)
        low = max(1, low, high - BLOCKCHAIN_LIMIT + 1)
        if low > high:
            raise _internal(f"min height {low} can't be greater than max height {high}")
        metas = []
        for height in range(high, low - 1, -1):
            time, block_hash, txs, _ = self._found(height)
            metas.append(
                {
                    "block_id": self.chain.block_id(block_hash),
                    "block_size": str(sum(len(base64.b64decode(t)) for t in txs) + 512),
                    "header": self._header(height, time, txs),
                    "num_txs": str(len(txs)),
                }
            )
        return {"last_height": str(latest), "block_metas": metas}

    async def commit(self, params: dict[str, Any]) -> Doc:
        height = self._height(params)
        time, _, txs, _ = self._found(height)
        return {
            "signed_header": {
                "header": self._header(height, time, txs),
                "commit": self.chain.commit(height),
            },
            "canonical": height < self.app.height,
        }

    async def validators(self, params: dict[str, Any]) -> Doc:
        height = self._height(params)
        page = _int_param(params, "page", 1)
        _int_param(params, "per_page", 30)
        if page != 1:
            raise _internal(f"page should be within [1, 1] range, given {page}")
        return {
            "block_height": str(height),
            "validators": [self.chain.validator.info()],
            "count": "1",
            "total": "1",
        }

    async def genesis(self, _: dict[str, Any]) -> Doc:
        app, validator = self.app, self.chain.validator
        genesis = app.genesis
        return {
            "genesis": {
                "genesis_time": genesis.genesis_time,
                "chain_id": app.chain_id,
                "initial_height": "1",
                "consensus_params": consensus_params(),
                "validators": [
                    {
                        "address": validator.info()["address"],
                        "pub_key": validator.pub_key_json(),
                        "power": validator.info()["voting_power"],
                        "name": "akdevnet",
                    }
                ],
                "app_hash": "",
                "app_state": {
                    "auth": {
                        "accounts": [
                            {"@type": "/cosmos.auth.v1beta1.BaseAccount", "address": a.address}
                            for a in genesis.accounts
                        ]
                    },
                    "bank": {
                        "balances": [
                            {
                                "address": a.address,
                                "coins": [
                                    {"denom": d, "amount": str(n)}
                                    for d, n in sorted(a.balances.items())
                                ],
                            }
                            for a in genesis.accounts
                        ]
                    },
                },
            }
        }

    async def block_results(self, params: dict[str, Any]) -> Doc:
        height = self._height(params)
        found = self.app.db.block(height)
        if found is None:
            raise _internal(f"height {height} is not available")
        return found[3]

    async def tx(self, params: dict[str, Any]) -> Doc:
        digest = _bytes_param(params.get("hash"), "hash").hex().upper()
        prove = _bool_param(params, "prove")
        found = self.app.db.txs(tx_hash=digest)
        if not found:
            raise _internal(f"tx ({digest}) not found")
        return rpc_tx(self.app.db, found[0], prove=prove)

    async def tx_search(self, params: dict[str, Any]) -> Doc:
        query = params.get("query")
        if not isinstance(query, str):
            raise _invalid(f"query must be a string, not {kind(query)}")
        try:
            conditions = parse_query(query)
        except QueryError as exc:
            raise _internal(f"failed to parse query: {exc}") from exc
        prove = _bool_param(params, "prove")
        page = _int_param(params, "page", 1)
        per_page = _int_param(params, "per_page", DEFAULT_PER_PAGE)
        per_page = DEFAULT_PER_PAGE if per_page < 1 else min(per_page, MAX_PER_PAGE)
        order = params.get("order_by") or "asc"
        if order not in ("asc", "desc"):
            raise _internal(f"expected order_by to be either `asc` or `desc` or empty, got {order}")
        found = search(self.app.db, conditions)
        if order == "desc":
            found.reverse()
        pages = max(1, -(-len(found) // per_page))
        if not 1 <= page <= pages:
            raise _internal(f"page should be within [1, {pages}] range, given {page}")
        chunk = found[(page - 1) * per_page : page * per_page]
        return {
            "txs": [rpc_tx(self.app.db, row, prove=prove) for row in chunk],
            "total_count": str(len(found)),
        }

    async def broadcast_tx_sync(self, params: dict[str, Any]) -> Doc:
        raw = _bytes_param(params.get("tx"), "tx")
        return self.app.check_tx(raw)

    async def broadcast_tx_async(self, params: dict[str, Any]) -> Doc:
        """Queue without waiting for CheckTx's verdict (the answer is code 0 and the hash)."""
        raw = _bytes_param(params.get("tx"), "tx")
        checked = self.app.check_tx(raw)
        return checked | {"code": 0, "log": "", "codespace": ""}

    async def broadcast_tx_commit(self, params: dict[str, Any]) -> Doc:
        """CheckTx, then wait for the block that includes the transaction."""
        raw = _bytes_param(params.get("tx"), "tx")
        checked = self.app.check_tx(raw)
        digest = checked["hash"]
        check_tx = {k: v for k, v in checked.items() if k != "hash"} | {
            "info": "",
            "gas_wanted": "0",
            "gas_used": "0",
            "events": [],
        }
        if checked["code"] != 0:
            return {"check_tx": check_tx, "tx_result": {}, "hash": digest, "height": "0"}
        deadline = asyncio.get_running_loop().time() + BROADCAST_COMMIT_TIMEOUT
        while True:
            new_block = self._new_block
            found = self.app.db.txs(tx_hash=digest)
            if found:
                row = found[0]
                return {
                    "check_tx": check_tx,
                    "tx_result": row.result,
                    "hash": digest,
                    "height": str(row.height),
                }
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise _internal("timed out waiting for tx to be included in a block")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(new_block.wait(), timeout=remaining)

    # -- websocket ------------------------------------------------------------------------
    def announce(self, block: BlockRecord) -> None:
        """Push a new block's header to every subscriber; wake ``broadcast_tx_commit``s."""
        self._new_block.set()
        self._new_block = asyncio.Event()
        header = self._header(block.height, block.time, block.txs)
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
