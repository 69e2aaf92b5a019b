"""A hostile tenant's input against the real gateway process: tokens built to break the
parser, path and query numbers in every spelling Python would accept, grants that name
services, gRPC errors; then a bounded fuzz run over all of it. Every answer is a 4xx with a
message (never a 5xx), and a refused request writes at most one log line.

The manifest and cluster services are stand-ins (:class:`akgateway.testing.StandIns`); the
gateway has no cluster, so a websocket that passes every check is a 503 saying so.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import os
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import hypothesis
import pytest
from hypothesis import HealthCheck
from hypothesis import strategies as st

from akchain import jwt, msgs
from akchain.errors import BadResponse, NotFound
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akgateway._pb.akash.provider.lease.v1 import lease_pb2, lease_pb2_grpc
from akgateway.api.app import Unexpected
from akgateway.testing import Answer, make_certificate
from akservice.testing import eventually_sync
from aktypes.events import LeaseManifestReport, LeaseStatusReport, ServiceStatus
from aktypes.sdl import parse_sdl

TETRIS = parse_sdl(
    """
version: "2.0"
services:
  tetris:
    image: bsord/tetris
    expose:
      - port: 80
        as: 80
        to:
          - global: true
profiles:
  compute:
    tetris:
      resources:
        cpu: {units: 1.0}
        memory: {size: 512Mi}
        storage: {size: 512Mi}
  placement:
    dc:
      pricing:
        tetris: {denom: uakt, amount: 1000}
deployment:
  tetris:
    dc: {profile: tetris, count: 1}
"""
)
MANIFEST = json.dumps(TETRIS.manifest.go_json()).encode()
GROUP = TETRIS.manifest.groups[0]
HASH = "ab" * 32
# spellings of 1 that Python's int() or pydantic read as 1, and other non-numbers
ALIASES = ["+1", "1.0", "0_1", " 1", "1 ", "01", "²", "١", "1e0", "-1", "0x1", str(2**64)]
NO_CLUSTER = "this gateway has no access to the cluster (AP_CLUSTER_BACKEND)"
EXAMPLES = int(os.environ.get("AKGATEWAY_FUZZ_EXAMPLES", "0")) or 30
FUZZ = hypothesis.settings(
    max_examples=EXAMPLES,
    derandomize="AKGATEWAY_FUZZ_EXAMPLES" not in os.environ,  # CI: the same examples
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(header: Any, payload: Any) -> str:
    """A token of these header and payload (JSON, or text as it is), badly signed."""

    def part(value: Any) -> str:
        return _b64((value if isinstance(value, str) else json.dumps(value)).encode())

    return f"{part(header)}.{part(payload)}.{_b64(bytes(64))}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def grant(provider: str, dseq: int, scopes: list[str], services: list[str], **more: Any) -> Any:
    deployment = {"dseq": dseq, "scope": scopes, "services": services, **more}
    return {
        "access": "granular",
        "permissions": [{"provider": provider, "access": "granular", "deployments": [deployment]}],
    }


@pytest.fixture(scope="module")
def signer(stack: Any) -> Signer:
    """tenant-2, whose key the chain knows (it has published a certificate)."""
    found: Signer = stack.devnet.signer("tenant-2")

    async def publish() -> None:
        made = make_certificate(found.address)
        async with stack.devnet.clients() as chain:
            wallet = chain.wallet("tenant-2")
            await wallet.send(
                msgs.create_certificate(wallet.address, made.cert_pem, made.pubkey_pem)
            )

    asyncio.run(publish())
    return found


@pytest.fixture(autouse=True)
def fresh_services(stack: Any) -> Iterator[None]:
    stack.services.reset()
    yield
    stack.services.reset()


def two_services(command: Any) -> Any:
    """The cluster stand-in for a lease of services ``tetris`` and ``db``."""
    if type(command).__name__ == "GetLeaseManifest":
        return LeaseManifestReport(lease_id=command.lease_id, version=HASH, group=GROUP)
    return LeaseStatusReport(
        lease_id=command.lease_id,
        services={n: ServiceStatus(name=n, available=1, total=1) for n in ("tetris", "db")},
    )


def upgrade(stack: Any, path: str, headers: dict[str, str] | None = None) -> Answer:
    """A websocket upgrade of ``path``: every one here is refused with an HTTP answer."""
    return stack.call(
        "GET",
        path,
        headers={
            "Connection": "Upgrade",
            "Upgrade": "websocket",
            "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
            "Sec-WebSocket-Version": "13",
            **(headers or {}),
        },
    )


# -- tokens -----------------------------------------------------------------------------


def test_hostile_tokens_are_401s_with_a_reason(stack: Any, signer: Signer) -> None:
    now = int(dt.datetime.now(dt.UTC).timestamp())
    claims = {"iss": signer.address, "iat": now, "nbf": now, "exp": now + 60, "version": "v1"}
    claims["leases"] = {"access": "full"}
    header = {"alg": "ES256K", "typ": "JWT"}
    cases = {
        unsigned(header, "[" * 5000 + "]" * 5000): "payload nests deeper",
        unsigned("{" * 5000, claims): "header nests deeper",
        unsigned(header, claims | {"exp": 10**400}): "at exp",
        unsigned(header, claims | {"iss": "../../../../akash/provider/v1beta4/providers/x"}): (
            "at iss"
        ),
        unsigned(header, claims | {"iss": "akash1" + "q" * 38}): "at iss",
        unsigned(header, '{"exp": ' + "9" * 5000 + "}"): "not JSON",
        unsigned(header, claims | {"exp": now - 3600, "iat": now - 3600, "nbf": now - 3600}): (
            "expired"
        ),
    }
    for token, why in cases.items():
        answer = stack.call("GET", "/lease/1/1/1/status", headers=bearer(token))
        assert (answer.status, why in answer.message) == (401, True), (why, answer.raw)
    # an account the chain does not know, in a token refused before its key is looked up:
    # the answer names the refusal, not the missing key
    stranger = Signer.generate().address
    late = claims | {"iss": stranger, "exp": now - 3600, "iat": now - 3600, "nbf": now - 3600}
    answer = stack.call("GET", "/lease/1/1/1/status", headers=bearer(unsigned(header, late)))
    assert (answer.status, answer.message) == (401, "token expired")


async def test_no_input_reaches_another_node_endpoint(stack: Any) -> None:
    async with LCDClient(stack.devnet.lcd_url) as lcd:
        for hostile in ("..", "../../akash/provider/v1beta4/providers", "a?b", "a#b"):
            with pytest.raises((NotFound, BadResponse)):  # the node's answer about no account
                await lcd.account(hostile)


# -- path and query numbers ---------------------------------------------------------------


def test_path_numbers_have_one_spelling_before_any_grant(stack: Any, signer: Signer) -> None:
    stack.services.cluster = two_services
    group_two = jwt.mint(signer, grant(stack.provider, 60, ["status"], ["tetris", "db"], gseq=2))
    full = jwt.mint(signer, {"access": "full"})
    assert stack.call("GET", "/lease/60/2/1/status", headers=bearer(group_two)).status == 200
    assert stack.call("GET", "/lease/60/1/1/status", headers=bearer(group_two)).status == 403
    for alias in ALIASES:  # group 2's grant never reads group 1, however it is spelled
        segment = urllib.parse.quote(alias, safe="")
        answer = stack.call("GET", f"/lease/60/{segment}/1/status", headers=bearer(group_two))
        assert (answer.status, "number" in answer.message) == (400, True), (alias, answer.raw)
    for alias in ("+1", "²", "01", " 1"):  # every route, every number, REST and websockets
        segment = urllib.parse.quote(alias, safe="")
        for path in (
            f"/lease/60/{segment}/1/service/tetris/status",
            f"/lease/60/1/{segment}/service/tetris/status",
            f"/lease/{segment}/2/1/manifest",
        ):
            answer = stack.call("GET", path, headers=bearer(full))
            assert (answer.status, "plain ASCII digits" in answer.message) == (400, True), path
        put = stack.call(
            "PUT", f"/deployment/{segment}/manifest", body=MANIFEST, headers=bearer(full)
        )
        assert put.status == 400, (alias, put.raw)
        for what in ("logs", "kubeevents", "shell?cmd0=ls&service=tetris&podIndex=0&tty=0&stdin=0"):
            ws = upgrade(stack, f"/lease/60/{segment}/1/{what}", bearer(full))
            assert ws.status == 400, (alias, what, ws.raw)
    assert [(c.lease_id.dseq, c.lease_id.gseq) for c in stack.services.seen] == [(60, 2)]


def test_query_numbers_are_ascii_digits(stack: Any, signer: Signer) -> None:
    full = bearer(jwt.mint(signer, {"access": "full"}))
    for value in ("²", "١", "+1", "1.0", "01", "-2", str(2**31), "9" * 5000):
        for what in (
            f"logs?tail={value}",
            f"shell?cmd0=ls&service=t&tty=0&stdin=0&podIndex={value}",
        ):
            answer = upgrade(stack, "/lease/61/1/1/" + urllib.parse.quote(what, safe="?&="), full)
            assert answer.status == 400, (what, answer.raw)
    fine = upgrade(stack, "/lease/61/1/1/logs?tail=-1&service=tetris", full)
    assert (fine.status, fine.message) == (503, NO_CLUSTER)


# -- services ----------------------------------------------------------------------------


def test_naming_no_service_needs_every_service_granted(stack: Any, signer: Signer) -> None:
    stack.services.cluster = two_services
    only_db = {s: jwt.mint(signer, grant(stack.provider, 62, [s], ["db"])) for s in SCOPES}
    both = {s: jwt.mint(signer, grant(stack.provider, 62, [s], ["tetris", "db"])) for s in SCOPES}
    status = stack.call("GET", "/lease/62/1/1/status", headers=bearer(only_db["status"]))
    assert (status.status, "for services ['db', 'tetris']" in status.message) == (403, True)
    assert stack.call("GET", "/lease/62/1/1/status", headers=bearer(both["status"])).status == 200
    one = stack.call("GET", "/lease/62/1/1/service/db/status", headers=bearer(only_db["status"]))
    assert one.status == 200
    manifest = stack.call("GET", "/lease/62/1/1/manifest", headers=bearer(only_db["get-manifest"]))
    assert manifest.status == 403
    ok = stack.call("GET", "/lease/62/1/1/manifest", headers=bearer(both["get-manifest"]))
    assert ok.status == 200
    sent = stack.call(
        "PUT", "/deployment/62/manifest", body=MANIFEST, headers=bearer(only_db["send-manifest"])
    )
    assert (sent.status, "['tetris']" in sent.message) == (403, True)
    for scope, what in (("logs", "logs?tail=1"), ("events", "kubeevents?follow=0")):
        refused = upgrade(stack, f"/lease/62/1/1/{what}", bearer(only_db[scope]))
        assert (refused.status, "['tetris']" in refused.message) == (403, True), what
        named = upgrade(stack, f"/lease/62/1/1/{what}&service=db", bearer(only_db[scope]))
        allowed = upgrade(stack, f"/lease/62/1/1/{what}", bearer(both[scope]))
        if scope == "logs":
            assert (named.status, named.message) == (503, NO_CLUSTER)
            assert (allowed.status, allowed.message) == (503, NO_CLUSTER)
        else:  # events come from Redis, not the cluster: the upgrade is made
            assert (named.status, allowed.status) == (101, 101)
    assert not any(type(c).__name__ == "SubmitManifest" for c in stack.services.seen)


SCOPES = ["status", "get-manifest", "send-manifest", "logs", "events"]


# -- gRPC --------------------------------------------------------------------------------


@pytest.fixture
async def channel(stack: Any) -> AsyncIterator[grpc.aio.Channel]:
    creds = grpc.ssl_channel_credentials(root_certificates=stack.gateway.server_certificate())
    async with grpc.aio.secure_channel(stack.gateway.grpc_target, creds) as channel:
        yield channel


@pytest.fixture
def lease_rpc(channel: grpc.aio.Channel) -> lease_pb2_grpc.LeaseRPCStub:
    return lease_pb2_grpc.LeaseRPCStub(channel)  # type: ignore[no-untyped-call]


async def test_grpc_errors_are_statuses_with_messages(
    stack: Any, signer: Signer, channel: grpc.aio.Channel, lease_rpc: lease_pb2_grpc.LeaseRPCStub
) -> None:
    stack.services.cluster = two_services
    lease = lease_pb2.ServiceStatusRequest()
    lease.lease_id.owner, lease.lease_id.provider = signer.address, stack.provider
    lease.lease_id.dseq, lease.lease_id.gseq, lease.lease_id.oseq = 63, 1, 1
    logs = lease_pb2.ServiceLogsRequest(lease_id=lease.lease_id)
    only_db = jwt.mint(signer, grant(stack.provider, 63, ["status", "logs"], ["db"]))
    deep = unsigned({"alg": "ES256K"}, "[" * 2000 + "]" * 2000)  # within gRPC's 8 KiB
    full = jwt.mint(signer, {"access": "full"})

    async def refusal(call: Any, request: Any, token: str, *more: tuple[str, str]) -> Any:
        metadata = (("authorization", f"Bearer {token}"), *more)

        async def first() -> Any:
            answer = call(request, metadata=metadata)
            return await (answer.read() if hasattr(answer, "read") else answer)

        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await first()
        return caught.value.code(), caught.value.details()

    code, details = await refusal(lease_rpc.ServiceStatus, lease, deep)
    assert (code, "nests deeper" in details) == (grpc.StatusCode.UNAUTHENTICATED, True)
    code, details = await refusal(lease_rpc.ServiceStatus, lease, only_db)
    assert (code, "['db', 'tetris']" in details) == (grpc.StatusCode.PERMISSION_DENIED, True)
    code, details = await refusal(lease_rpc.ServiceLogs, logs, only_db)
    assert (code, "['tetris']" in details) == (grpc.StatusCode.PERMISSION_DENIED, True)
    for interval in ("9" * 5000 + "s", "9" * 30 + "h", "-5s", "1e400s"):
        code, details = await refusal(
            lease_rpc.StreamServiceStatus, lease, full, ("interval", interval)
        )
        assert (code, details.startswith("interval:")) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            True,
        ), interval
    for method in ("ServiceStatus", "StreamServiceLogs"):  # bytes that are no message
        raw = f"/akash.provider.lease.v1.LeaseRPC/{method}"
        call = (channel.unary_stream if method.startswith("Stream") else channel.unary_unary)(
            raw, request_serializer=bytes, response_deserializer=bytes
        )
        code, details = await refusal(call, b"\xff\xff\xff\xff", full)
        assert (code, "not a valid message" in details) == (grpc.StatusCode.INVALID_ARGUMENT, True)
    named = lease_pb2.ServiceStatusRequest(lease_id=lease.lease_id, services=["db"])
    answer = await lease_rpc.ServiceStatus(
        named, metadata=(("authorization", f"Bearer {only_db}"),)
    )
    assert [s.name for s in answer.services] == ["db"]


# -- a bug is one log line -----------------------------------------------------------------


async def test_an_unexpected_exception_is_a_500_and_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise KeyError("surprise")

    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "GET", "path": "/x", "headers": []}
    await Unexpected(broken)(scope, receive, send)
    assert sent[0]["status"] == 500
    assert json.loads(sent[1]["body"]) == {"message": "internal error"}
    [record] = caplog.records
    assert record.exc_info is None and "KeyError" in record.__dict__["error"]
    assert "test_hostile_input.py" in record.__dict__["where"]


# -- fuzz --------------------------------------------------------------------------------

ROUTES = [
    ("GET", "/lease/{a}/{b}/{c}/status"),
    ("GET", "/lease/{a}/{b}/{c}/service/{s}/status"),
    ("GET", "/lease/{a}/{b}/{c}/manifest"),
    ("PUT", "/deployment/{a}/manifest"),
    ("WS", "/lease/{a}/{b}/{c}/logs"),
    ("WS", "/lease/{a}/{b}/{c}/kubeevents"),
    ("WS", "/lease/{a}/{b}/{c}/shell"),
]
numbers = st.one_of(
    st.sampled_from(["1", "2", "60", "", *ALIASES]),
    st.integers(-(2**70), 2**70).map(str),
    st.text(max_size=8),
)
words = st.one_of(
    st.sampled_from(["tetris", "db", "", "tetris,db", ",", "-1"]), st.text(max_size=8)
)
query = st.dictionaries(
    st.sampled_from(["tail", "podIndex", "follow", "service", "cmd0", "cmd1", "tty", "stdin"]),
    st.one_of(numbers, words),
    max_size=6,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


@st.composite
def tokens(draw: st.DrawFn, signer: Signer, provider: str) -> str | None:
    """No token, a valid one, a validly signed one with hostile claims, or anything."""
    now = int(dt.datetime.now(dt.UTC).timestamp())
    kind = draw(st.sampled_from(["none", "valid", "claims", "header", "nested", "text"]))
    if kind == "none":
        return None
    if kind == "valid":
        scope = draw(st.sampled_from(["status", "logs", "events", "shell", "send-manifest"]))
        services = draw(st.sampled_from([["db"], ["tetris"], ["tetris", "db"]]))
        leases = draw(
            st.sampled_from([{"access": "full"}, grant(provider, 60, [scope], services, gseq=2)])
        )
        return jwt.mint(signer, leases)
    claims: dict[str, Any] = {"iss": signer.address, "iat": now, "nbf": now, "exp": now + 60}
    claims |= {"version": "v1", "leases": {"access": "full"}}
    if kind == "claims":
        claims[draw(st.sampled_from([*claims, "jti", "x"]))] = draw(json_values)
        return unsigned({"alg": "ES256K", "typ": "JWT"}, claims)
    if kind == "header":
        return unsigned(draw(json_values), claims)
    if kind == "nested":
        depth = draw(st.integers(1, 3000))
        return unsigned({"alg": "ES256K"}, "[" * depth + "]" * depth)
    return draw(st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=64))


def test_fuzzed_requests_get_no_5xx_and_at_most_one_log_line(stack: Any, signer: Signer) -> None:
    stack.services.cluster = two_services
    sent = 0
    before = len(stack.gateway.log().splitlines())

    @FUZZ
    @hypothesis.given(
        route=st.sampled_from(ROUTES),
        parts=st.tuples(numbers, numbers, numbers, words),
        params=query,
        token=tokens(signer, stack.provider),
    )
    def one(
        route: tuple[str, str], parts: tuple[str, ...], params: dict[str, str], token: str | None
    ) -> None:
        nonlocal sent
        method, template = route
        a, b, c, s = (urllib.parse.quote(p, safe="") for p in parts)
        path = template.format(a=a, b=b, c=c, s=s)
        if params:
            path += "?" + urllib.parse.urlencode(params)
        headers = bearer(token) if token is not None else {}
        if method == "WS":
            answer = upgrade(stack, path, headers)
        else:
            body = MANIFEST if method == "PUT" else None
            answer = stack.call(method, path, body=body, headers=headers)
        sent += 1
        if answer.status >= 500:
            assert (answer.status, answer.message) == (503, NO_CLUSTER), (path, answer.raw)
        elif answer.status >= 400 and not (method == "WS" and answer.status == 403):
            assert answer.message, (path, answer.raw)  # 403 without body: no such websocket

    one()
    # every request is written (or counted as dropped) before this one's line is
    stack.call("GET", "/version?fuzz-done")
    lines = eventually_sync(
        lambda: _new_lines(stack, before, "fuzz-done"), what="the gateway's log of the fuzz"
    )
    requests = [line for line in lines if _access(line)]
    others = [
        line
        for line in lines
        if not (_access(line) or line.get("logger") == "akgateway.adapters.tls")
        or line.get("level") != "info"
        or "exception" in line
    ]
    assert others == []  # no error, no traceback: each request's access line at most
    assert len(requests) <= sent + 1


def _access(line: dict[str, Any]) -> bool:
    """A request's line: uvicorn's access log, or its line about a websocket upgrade."""
    event = str(line.get("event", ""))
    return line.get("logger") == "uvicorn.access" or (
        line.get("logger") == "uvicorn.error" and ' - "WebSocket /' in event
    )


def _new_lines(stack: Any, before: int, mark: str) -> list[dict[str, Any]] | None:
    text = stack.gateway.log().splitlines()[before:]
    if not any(mark in line for line in text):
        return None
    return [json.loads(line) for line in text if line.startswith("{")]
