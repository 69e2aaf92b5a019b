"""Property-based fuzzing of one real devnet process: its JSON-RPC over HTTP (GET and POST),
its LCD routes and its websocket, with random methods, parameters, bodies and frames.

What must hold: no 5xx but the deliberate error answers (a JSON-RPC error object, as CometBFT
sends with 500; the LCD's gRPC-gateway ``Not Implemented`` for a path it does not serve), no
dropped connection, no websocket closed by the server, and the process stays up.

``AKDEVNET_FUZZ_EXAMPLES`` sets the examples per surface (default 100); examples are
derandomized, so a run is repeatable. ``AKDEVNET_FUZZ_REPORT`` names a JSON file to write the
request counts and status histograms to.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from yarl import URL

from akchain import msgs
from akchain.versions import LCD_PATHS
from akdevnet.testing import DevnetProcess
from aktypes.coin import Coin, DecCoin
from aktypes.ids import BidID
from aktypes.sdl import parse_sdl

EXAMPLES = int(os.environ.get("AKDEVNET_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
TIMEOUT = aiohttp.ClientTimeout(total=10)

# -- strategies -----------------------------------------------------------------------------


def mostly(usual: st.SearchStrategy[str], odd: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """``usual`` three times in four, ``odd`` otherwise."""
    return st.integers(min_value=0, max_value=3).flatmap(lambda n: odd if n == 0 else usual)


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
odd_numbers = st.sampled_from(
    ["0", "1", "-1", "", "0x10", "1e5", "1.5", "²", "١", " 1", "NaN", str(2**63), str(2**64)]
)
numbers = odd_numbers | st.integers(min_value=-(2**70), max_value=2**70).map(str)
base64_bytes = st.binary(max_size=300).map(lambda b: base64.b64encode(b).decode())
hex_bytes = st.binary(max_size=64).map(lambda b: "0x" + b.hex())
words = numbers | base64_bytes | hex_bytes | st.text(max_size=40)

RPC_METHODS = [
    "status",
    "health",
    "abci_info",
    "abci_query",
    "block",
    "blockchain",
    "block_results",
    "commit",
    "validators",
    "genesis",
    "tx",
    "tx_search",
    "broadcast_tx_sync",
    "broadcast_tx_async",
    "broadcast_tx_commit",
    "subscribe",
    "unsubscribe",
    "unsubscribe_all",
]
RPC_PARAMS = [
    *("height", "hash", "tx", "query", "prove", "path", "data"),
    *("page", "per_page", "order_by", "minHeight", "maxHeight"),
]
rpc_params = st.dictionaries(
    mostly(st.sampled_from(RPC_PARAMS), st.text(max_size=8)),
    words | json_values | st.just("tm.event='NewBlockHeader'"),
    max_size=4,
)
requests = st.fixed_dictionaries(
    {"method": st.sampled_from(RPC_METHODS) | json_values},
    optional={
        "jsonrpc": st.just("2.0") | json_values,
        "id": st.integers(min_value=-(2**40), max_value=2**40) | json_values,
        "params": rpc_params | json_values,
    },
)
TRICKY = [
    "NaN",
    "-Infinity",
    '{"jsonrpc": "2.0", "id": NaN, "method": "health"}',
    '{"jsonrpc": "2.0", "id": 1e400, "method": "health"}',
    '{"jsonrpc": "2.0", "id": 1, "method": "block", "params": {"height": 1e400}}',
    '{"jsonrpc": "2.0", "id": 1, "method": "block", "params": {"height": ' + "9" * 5000 + "}}",
    '{"jsonrpc": "2.0", "id": "\\ud800", "method": "\\udfff"}',
    "[" * 20_000,
    '{"a":' * 20_000,
    '{"jsonrpc": "2.0", "id": 1, "method": "tx", "params": {"hash": "' + "A" * 60_000 + '"}}',
]
bodies: st.SearchStrategy[str | bytes] = st.one_of(
    st.sampled_from(TRICKY),
    requests.map(json.dumps),
    st.lists(requests, max_size=5).map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=200),
    st.binary(max_size=200),
)

LCD_QUERY = [
    *(f"pagination.{k}" for k in ("key", "offset", "limit", "count_total", "reverse")),
    *(f"filters.{k}" for k in ("owner", "dseq", "gseq", "oseq", "provider", "state")),
    *(f"id.{k}" for k in ("owner", "dseq", "gseq", "oseq", "provider")),
    *(f"filter.{k}" for k in ("owner", "serial", "state")),
    "xid",
    "state",
]
OTHER_METHODS = ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]

# -- the target -----------------------------------------------------------------------------


class Target:
    """One devnet with some state on it, an HTTP session, and what was sent and answered."""

    def __init__(self, devnet: DevnetProcess) -> None:
        self.devnet = devnet
        self.runner = asyncio.Runner()
        self.session = self.runner.run(self._open())
        self.requests: Counter[str] = Counter()
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.addresses = [devnet.signer(n).address for n in ("tenant-1", "provider", "auditor")]

    @staticmethod
    async def _open() -> aiohttp.ClientSession:
        return aiohttp.ClientSession(timeout=TIMEOUT)

    def close(self) -> None:
        self.runner.run(self.session.close())
        self.runner.close()

    def count(self, surface: str, outcome: str, requests: int = 1) -> None:
        """``requests`` sent to ``surface`` ended in ``outcome`` (an HTTP status, …)."""
        self.requests[surface] += requests
        self.outcomes[(surface, outcome)] += 1

    def http(
        self, surface: str, method: str, url: URL, body: str | bytes | None
    ) -> tuple[int, bytes]:
        async def send() -> tuple[int, bytes]:
            async with self.session.request(method, url, data=body) as response:
                return response.status, await response.read()

        status, answer = self.runner.run(send())
        self.count(surface, str(status))
        assert self.devnet.process is not None and self.devnet.process.poll() is None
        return status, answer


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(answer: bytes) -> Any:
    """``answer`` parsed as standard JSON (no NaN or Infinity)."""
    return json.loads(answer, parse_constant=_no_constant)


def json_rpc_error(answer: bytes) -> bool:
    try:
        body = strict_json(answer)
    except ValueError:
        return False
    return (
        isinstance(body, dict)
        and body.get("jsonrpc") == "2.0"
        and isinstance(body.get("error"), dict)
        and isinstance(body["error"].get("code"), int)
        and bool(body["error"].get("data"))
    )


def json_rpc_answer(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and body.get("jsonrpc") == "2.0"
        and ("result" in body) != ("error" in body)
        and "id" in body
    )


async def populate(devnet: DevnetProcess) -> None:
    """Deployments, a bid and a lease, so that lists have pages and lookups find things."""
    sdl = parse_sdl((CORPUS / "tetris.yaml").read_text())
    async with devnet.clients() as chain:
        tenant = chain.tenant()
        created = [await tenant.deploy(sdl, dseq=100 + i) for i in range(3)]
        provider = chain.wallet("provider")
        for deployment in created[:2]:
            bid = BidID(
                owner=deployment.owner,
                dseq=deployment.dseq,
                gseq=1,
                oseq=1,
                provider=provider.address,
            )
            price = DecCoin(denom="uact", amount=sdl.groups[0].price().amount.quo(2))
            await provider.send(msgs.create_bid(bid, price, Coin(denom="uakt", amount=500_000)))
        await tenant.wait_for_bids(created[0].dseq)
        await tenant.accept_cheapest(created[0].dseq)
        await tenant.close(created[2].dseq)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with DevnetProcess(Path(tmp_path_factory.mktemp("fuzz")) / "devnet") as devnet:
        asyncio.run(populate(devnet))
        fuzzing = Target(devnet)
        try:
            yield fuzzing
        finally:
            fuzzing.close()
            if report := os.environ.get("AKDEVNET_FUZZ_REPORT"):
                write_report(Path(report), fuzzing)


def write_report(path: Path, fuzzing: Target) -> None:
    outcomes: dict[str, dict[str, int]] = {}
    for (surface, outcome), n in sorted(fuzzing.outcomes.items()):
        outcomes.setdefault(surface, {})[outcome] = n
    report = {
        "examples_per_surface": EXAMPLES,
        "requests": dict(sorted(fuzzing.requests.items())),
        "total_requests": sum(fuzzing.requests.values()),
        "outcomes": outcomes,
    }
    path.write_text(json.dumps(report, indent=2) + "\n")


# -- the properties -------------------------------------------------------------------------


@FUZZ
@given(method=mostly(st.sampled_from(RPC_METHODS), st.text(max_size=20)), query=rpc_params)
def test_rpc_uri_requests(target: Target, method: str, query: dict[str, Any]) -> None:
    params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in query.items()}
    url = URL(target.devnet.rpc_url).with_path("/" + quote(method, safe=""), encoded=True)
    status, answer = target.http("rpc GET", "GET", url.with_query(params), None)
    if status >= 500:
        assert json_rpc_error(answer), (status, answer[:300])


@FUZZ
@given(body=bodies)
def test_rpc_json_posts(target: Target, body: str | bytes) -> None:
    status, answer = target.http("rpc POST", "POST", URL(target.devnet.rpc_url + "/"), body)
    assert status in (200, 400, 500), (status, answer[:300])
    if status != 200:
        assert json_rpc_error(answer), (status, answer[:300])
        return
    replies = strict_json(answer)
    for reply in replies if isinstance(replies, list) else [replies]:
        assert json_rpc_answer(reply), reply


@FUZZ
@given(
    route=st.sampled_from(sorted(LCD_PATHS.values())),
    segment=st.data(),
    query=st.dictionaries(
        mostly(st.sampled_from(LCD_QUERY), st.text(max_size=10)),
        mostly(odd_numbers | numbers, words),
        max_size=5,
    ),
    method=mostly(st.just("GET"), st.sampled_from(OTHER_METHODS)),
    body=st.none() | bodies,
)
def test_lcd_routes(
    target: Target,
    *,
    route: str,
    segment: st.DataObject,
    query: dict[str, str],
    method: str,
    body: str | bytes | None,
) -> None:
    path = route
    while "{" in path:
        start, end = path.index("{"), path.index("}")
        value = segment.draw(st.sampled_from(target.addresses) | st.text(min_size=1, max_size=50))
        path = path[:start] + quote(value, safe="") + path[end + 1 :]
    url = URL(target.devnet.lcd_url).with_path(path, encoded=True).with_query(query)
    status, answer = target.http("lcd", method, url, None if method == "GET" else body)
    if method == "HEAD":  # no body to look at
        assert status < 500 or status == 501, status
    elif status >= 500:
        assert status == 501, (status, answer[:300])
        error = strict_json(answer)
        assert error["code"] == 12 and error["message"].startswith("Not Implemented"), error
    elif status >= 400 and method != "HEAD":
        error = strict_json(answer)
        assert error["message"], error
    elif method == "GET":
        assert isinstance(strict_json(answer), dict)


TX_BODIES = st.one_of(
    bodies,
    st.fixed_dictionaries(
        {"tx_bytes": base64_bytes | words | json_values},
        optional={"mode": st.sampled_from(["BROADCAST_MODE_SYNC", "BROADCAST_MODE_ASYNC"]) | words},
    ).map(json.dumps),
)
TX_QUERY = ["query", "events", "page", "limit", "order_by"]


@FUZZ
@given(
    path=st.sampled_from(["/cosmos/tx/v1beta1/txs", "/cosmos/tx/v1beta1/simulate"]),
    segment=mostly(st.none(), st.text(min_size=1, max_size=70) | hex_bytes.map(lambda h: h[2:])),
    query=st.dictionaries(
        mostly(st.sampled_from(TX_QUERY), st.text(max_size=10)),
        words | st.just("tm.event='Tx'") | st.just("message.sender='akash1x'"),
        max_size=3,
    ),
    method=mostly(st.sampled_from(["GET", "POST"]), st.just("PUT")),
    body=TX_BODIES,
)
def test_lcd_transaction_service(
    target: Target,
    *,
    path: str,
    segment: str | None,
    query: dict[str, str],
    method: str,
    body: str | bytes,
) -> None:
    if segment is not None:
        path += "/" + quote(segment, safe="")
    url = URL(target.devnet.lcd_url).with_path(path, encoded=True).with_query(query)
    status, answer = target.http("lcd tx", method, url, None if method == "GET" else body)
    assert status < 500 or status == 501, (status, answer[:300])
    if status >= 400:
        error = strict_json(answer)
        assert error["message"], error
    else:
        assert isinstance(strict_json(answer), dict)


@FUZZ
@given(frames=st.lists(bodies, min_size=1, max_size=4))
def test_websocket_frames(target: Target, frames: list[str | bytes]) -> None:
    async def session() -> None:
        async with target.session.ws_connect(target.devnet.rpc_url + "/websocket") as ws:
            for index, frame in enumerate(frames):
                if isinstance(frame, bytes):
                    await ws.send_bytes(frame)
                else:
                    await ws.send_str(frame)
                probe = f"probe-{index}"
                await ws.send_json({"jsonrpc": "2.0", "id": probe, "method": "health"})
                target.count("websocket", "answered frame + health probe", requests=2)
                while True:
                    message = await ws.receive(timeout=10)
                    assert message.type == aiohttp.WSMsgType.TEXT, (message, ws.close_code)
                    reply = strict_json(message.data.encode())
                    assert json_rpc_answer(reply), reply
                    if reply["id"] == probe:
                        break
            assert not ws.closed
            await ws.close()
            target.count("websocket", f"closed by the client, code {ws.close_code}", requests=0)

    target.runner.run(session())
    assert target.devnet.process is not None and target.devnet.process.poll() is None


def test_the_devnet_survived_and_still_makes_blocks(target: Target) -> None:
    height = target.devnet.height()
    assert target.devnet.wait_height(height + 2, timeout=10) >= height + 2
