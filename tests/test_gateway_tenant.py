"""The rest of a tenant's gateway, across real processes: migrations between two leases,
who may call which route (certificates and tokens, every route), logs, events and a shell;
a lease's status from the gateway's memory (last: it stops the cluster service for a while).

One provider for the whole module (devnet, Redis, relay, kubesim and its operators, every
service, gateway): each test uses deployments of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import re
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import kubernetes
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from akbus import Bus, RedisSettings
from akchain import msgs
from akcli.testing import Provider, certified, flow, leased, running, sdl, sdl_text, whole_suite
from akdevnet.tenant import ClientCertificate, Tenant
from akdevnet.testing import DevnetClients
from akgateway.domain.streams import event_frame
from akservice.testing import eventually
from aktypes.events import GetLeaseStatus, LeaseQueryFailed, LeaseStatusReport
from aktypes.events.streams import CLUSTER_COMMANDS
from aktypes.ids import DeploymentID, LeaseID
from aktypes.ingress import ingress_host
from aktypes.leaseevents import lease_events_stream, read_entry
from aktypes.namespace import lease_namespace
from aktypes.sdl import SDL, parse_sdl

HOST = "shop.tenant.test"


def with_names(host: str, endpoint: str) -> str:
    """An SDL whose service answers on ``host`` and on the leased-IP ``endpoint``."""
    return TWO_NAMES.replace(HOST, host).replace("myip", endpoint)


TWO_NAMES = f"""
version: "2.0"
endpoints:
  myip:
    kind: ip
services:
  web:
    image: nginx:1.27
    expose:
      - port: 80
        as: 80
        accept: [{HOST}]
        to:
          - global: true
      - port: 5432
        as: 5432
        to:
          - global: true
            ip: myip
profiles:
  compute:
    web:
      resources:
        cpu: {{units: 0.25}}
        memory: {{size: 256Mi}}
        storage: {{size: 512Mi}}
  placement:
    dc:
      attributes: {{host: akash}}
      pricing:
        web: {{denom: uact, amount: 100000}}
deployment:
  web:
    dc: {{profile: web, count: 1}}
"""


# short clocks and small limits, so the tests of the limits (the last part) wait little
LIMITS = {
    "AP_GATEWAY_HEADER_TIMEOUT": "2s",
    "AP_GATEWAY_BODY_TIMEOUT": "2s",
    "AP_GATEWAY_IDLE_TIMEOUT": "3s",
    "AP_GATEWAY_TENANT_MAX_WEBSOCKETS": "10",
    "AP_GATEWAY_TENANT_MAX_SHELLS": "8",
    "AP_GATEWAY_LEASE_STATUS_MAX_AGE": "3s",  # the bound of a status from memory
}
LEASE_STATUS_MAX_AGE = 3.0


# kubesim keeps events 2 s (a real cluster: 1 h), the cluster keeps a lease's last 24 and
# drops them 6 s after its teardown
EVENT_TTL_S, EVENTS_MAXLEN, EVENTS_RETENTION_S = 2, 24, 6


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with whole_suite(
        tmp_path_factory.mktemp("suite"),
        kubesim_args=("--event-ttl", f"{EVENT_TTL_S}s", "--crash-interval", "0.25"),
        cluster_env={
            "AP_CLUSTER_PUBLIC_HOSTNAME": "provider.test",
            "AP_CLUSTER_LEASE_EVENTS_MAXLEN": str(EVENTS_MAXLEN),
            "AP_CLUSTER_LEASE_EVENTS_RETENTION": f"{EVENTS_RETENTION_S}s",
            "AP_CLUSTER_LEASE_STATUS_INTERVAL": "500ms",
        },
        operators=("hostname", "ip"),
        operator_env={"AP_IP_POOL": "203.0.113.30-203.0.113.37"},  # eight leased IPs
        gateway_env=LIMITS,
    ) as provider:
        yield provider


@pytest.fixture
async def chain(suite: Provider) -> AsyncIterator[DevnetClients]:
    async with suite.devnet.clients() as clients:
        yield clients


def custom_objects(provider: Provider) -> Any:
    client = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        str(provider.kubesim.kubeconfig)
    )
    return kubernetes.client.CustomObjectsApi(client), kubernetes.client.NetworkingV1Api(client)


def names_of(provider: Provider, lease: LeaseID) -> dict[str, Any]:
    """Where the lease's names are routed on kubesim: its Ingress hosts, and the dseq of
    each ProviderHost and ProviderLeasedIP."""
    custom, networking = custom_objects(provider)
    ingresses = networking.list_namespaced_ingress(lease_namespace(lease)).items
    hosts = sorted(rule.host for i in ingresses for rule in i.spec.rules or ())

    def of_lease(plural: str) -> list[dict[str, Any]]:
        listed = custom.list_namespaced_custom_object("akash.network", "v2beta2", "lease", plural)[
            "items"
        ]
        return [
            o
            for o in listed
            if o["metadata"]["labels"].get("akash.network/lease.id.dseq") == str(lease.dseq)
        ]

    return {
        "ingress": hosts,
        "providerhosts": sorted(o["spec"]["hostname"] for o in of_lease("providerhosts")),
        "leasedips": sorted(o["spec"]["sharing_key"] for o in of_lease("providerleasedips")),
    }


async def deployed(
    provider: Provider, tenant: Tenant, certificate: ClientCertificate, shape: SDL
) -> LeaseID:
    [lease] = await leased(provider, tenant, shape)
    status, answer = await tenant.send_manifest_answer(
        lease.dseq, shape, provider.gateway.url, certificate=certificate
    )
    assert status == 200, answer
    await available(provider, tenant, certificate, shape, lease)
    return lease


async def available(
    provider: Provider, tenant: Tenant, certificate: ClientCertificate, shape: SDL, lease: LeaseID
) -> None:
    """Wait until every service of the lease is available."""

    async def answer_of() -> tuple[int, Any]:
        return await tenant.lease_status(
            lease.dseq, lease.gseq, lease.oseq, provider.gateway.url, certificate
        )

    await eventually(answer_of, timeout_s=90, what=f"{lease} running", until=running(shape, lease))
    return lease


async def test_hostnames_and_endpoints_move_between_one_owners_leases_only(
    suite: Provider, chain: DevnetClients
) -> None:
    tenant, other = chain.tenant("tenant-1"), chain.tenant("tenant-2")
    certificate = await certified(tenant, suite)
    other_certificate = await certified(other, suite)
    shape = parse_sdl(TWO_NAMES)
    first = await deployed(suite, tenant, certificate, shape)
    second = await deployed(suite, tenant, certificate, shape)
    [ip_key] = names_of(suite, first)["leasedips"]
    # each lease also has its own generated hostname (static ingress hosts), which never moves
    made_first = ingress_host(first, "web", suite.ingress_domain)
    made_second = ingress_host(second, "web", suite.ingress_domain)
    # each lease's ProviderHosts as the cluster declared them, routed by the hostname operator
    first_names = {
        "ingress": sorted([HOST, made_first]),
        "providerhosts": sorted([HOST, made_first]),
        "leasedips": [ip_key],
    }
    second_names = {
        "ingress": [made_second],
        "providerhosts": [made_second],
        "leasedips": [],
    }
    for lease, expected in ((first, first_names), (second, second_names)):
        routed = await eventually(
            lambda lease=lease: _names(suite, lease),
            timeout_s=30,
            what=f"the names of {lease} routed",
            until=expected.__eq__,
        )
        assert routed == expected
    url = suite.gateway.url

    async def migrate(
        kind: str, body: dict[str, Any], cert: ClientCertificate = certificate, who: Tenant = tenant
    ) -> tuple[int, Any]:
        return await who.gateway_request(
            "POST", f"{url}/{kind}/migrate", certificate=cert, body=json.dumps(body)
        )

    to_second = {"destination_dseq": second.dseq, "destination_gseq": 1}
    # another tenant cannot take them: the destination is not theirs
    status, answer = await migrate(
        "hostname",
        {"hostnames_to_migrate": [HOST], **to_second},
        cert=other_certificate,
        who=other,
    )
    assert status == 404, answer
    status, answer = await migrate(
        "endpoint",
        {"endpoints_to_migrate": ["myip"], **to_second},
        cert=other_certificate,
        who=other,
    )
    assert status == 404, answer
    # a name the destination does not declare, and a malformed body
    status, answer = await migrate("hostname", {"hostnames_to_migrate": ["x.test"], **to_second})
    assert (status, "does not declare x.test" in answer["message"]) == (400, True)
    status, answer = await migrate("hostname", {"hostnames_to_migrate": [], **to_second})
    assert (status, "hostnames_to_migrate" in answer["message"]) == (400, True)
    status, answer = await migrate("hostname", {"hostnames_to_migrate": [made_first], **to_second})
    assert (status, f"does not declare {made_first}" in answer["message"]) == (400, True)

    status, answer = await migrate("hostname", {"hostnames_to_migrate": [HOST], **to_second})
    assert (status, answer) == (200, {"transferred": [HOST]})
    await eventually(
        lambda: _names(suite, second),
        timeout_s=60,
        what="the hostname routed to the second lease",
        until=lambda n: n["ingress"] == n["providerhosts"] == sorted([HOST, made_second]),
    )
    moved_away = await eventually(  # the hostname operator removes the first lease's Ingress
        lambda: _names(suite, first),
        timeout_s=30,
        what="the hostname gone from the first lease",
        until=lambda n: n["ingress"] == [made_first],
    )
    assert (moved_away["ingress"], moved_away["providerhosts"]) == ([made_first], [made_first])
    assert moved_away["leasedips"] == [ip_key]  # only what was asked moves

    status, answer = await migrate("endpoint", {"endpoints_to_migrate": ["myip"], **to_second})
    assert (status, answer) == (200, {"transferred": ["myip"]})
    await eventually(
        lambda: _names(suite, first),
        timeout_s=60,
        what="the endpoint gone from the first lease",
        until=lambda n: n["leasedips"] == [],
    )
    assert names_of(suite, second)["leasedips"] == [ip_key]  # same owner, same endpoint: same key


async def _names(provider: Provider, lease: LeaseID) -> dict[str, Any]:
    return names_of(provider, lease)


# -- logs, events, shell ----------------------------------------------------------------------


class Refused(Exception):
    """The gateway answered the upgrade with an HTTP error."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@contextlib.asynccontextmanager
async def websocket(
    tenant: Tenant,
    url: str,
    *,
    certificate: ClientCertificate | None = None,
    token: str | None = None,
    close_timeout: float = 10.0,
) -> AsyncIterator[ClientConnection]:
    """A websocket to the gateway as ``tenant`` (certificate, bearer token, or neither).
    Leaving it waits until the TLS connection is closed, so nothing outlives the test (at
    most ``close_timeout``: then it is cut, as for a close frame stuck behind input the
    gateway holds back)."""
    context = await tenant.gateway_context(certificate, None) or ssl_any()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        socket = await connect(
            quote(url, safe=":/?&=%"),  # the query as given, spaces and all, escaped
            ssl=context,
            additional_headers=headers,
            ping_interval=None,
            max_size=None,
            close_timeout=close_timeout,
        )
    except InvalidStatus as exc:
        raise Refused(exc.response.status_code) from None
    async with socket:
        yield socket


def ssl_any() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def wss(provider: Provider, lease: LeaseID, what: str) -> str:
    base = provider.gateway.url.replace("https://", "wss://")
    return f"{base}/lease/{lease.dseq}/{lease.gseq}/{lease.oseq}/{what}"


async def frames(
    socket: ClientConnection, until: Callable[[list[Any]], bool], timeout: float
) -> tuple[list[Any], int | None]:
    """Messages (JSON text parsed, binary as bytes) until ``until`` holds or the socket
    closes; (messages, close code or None while open)."""
    got: list[Any] = []
    async with asyncio.timeout(timeout):
        while not until(got):
            try:
                message = await socket.recv()
            except ConnectionClosed as closed:
                return got, closed.rcvd.code if closed.rcvd else None
            got.append(json.loads(message) if isinstance(message, str) else message)
    return got, None


_WEB_LEASES: dict[int, tuple[LeaseID, ClientCertificate]] = {}


@pytest.fixture
async def web_lease(suite: Provider, chain: DevnetClients) -> tuple[LeaseID, ClientCertificate]:
    """tenant-1's lease of two ``web`` replicas and its certificate, made once per suite
    (in a test's own event loop: the chain clients belong to it)."""
    if id(suite) not in _WEB_LEASES:
        tenant = chain.tenant("tenant-1")
        certificate = await certified(tenant, suite)
        lease = await deployed(suite, tenant, certificate, sdl(cpu=0.25, count=2))
        _WEB_LEASES[id(suite)] = (lease, certificate)
    return _WEB_LEASES[id(suite)]


async def test_logs_follow_each_pods_output(
    suite: Provider, chain: DevnetClients, web_lease: tuple[LeaseID, ClientCertificate]
) -> None:
    lease, certificate = web_lease
    tenant = chain.tenant("tenant-1")
    url = wss(suite, lease, "logs?follow=true&tail=2&service=web")
    async with websocket(tenant, url, certificate=certificate) as socket:
        got, closed = await frames(
            socket, lambda got: len({f["name"] for f in got if "tick" in f["message"]}) == 2, 20
        )
    assert closed is None
    assert {f["name"].rsplit("-", 2)[0] for f in got} == {"web"}
    assert all(set(f) == {"name", "message"} for f in got)
    # not following: the last lines, then a normal close
    async with websocket(tenant, wss(suite, lease, "logs?tail=1"), certificate=certificate) as s:
        got, closed = await frames(s, lambda _: False, 20)
    assert (len(got), closed) == (2, 1000)  # one line of each of the two pods


async def test_events_arrive_for_a_rollout(
    suite: Provider, chain: DevnetClients, web_lease: tuple[LeaseID, ClientCertificate]
) -> None:
    lease, certificate = web_lease
    tenant = chain.tenant("tenant-1")
    async with websocket(
        tenant, wss(suite, lease, "kubeevents?follow=true"), certificate=certificate
    ) as socket:
        first, _ = await frames(socket, lambda got: len(got) >= 3, 20)
        reasons = {f["reason"] for f in first}
        assert reasons & {"ScalingReplicaSet", "Scheduled", "Started", "SuccessfulCreate"}
        assert set(first[0]) == {
            "type",
            "reportingController",
            "reportingInstance",
            "reason",
            "note",
            "object",
        }
        # a rollout while watching: the new version's events arrive live
        updated = parse_sdl(sdl_text(cpu=0.25, count=2).replace("nginx:1.27", "nginx:1.28"))
        deployment = DeploymentID(owner=tenant.address, dseq=lease.dseq)
        await tenant.wallet.send(msgs.update_deployment(deployment, updated.manifest_version))
        status, answer = await tenant.send_manifest_answer(
            lease.dseq, updated, suite.gateway.url, certificate=certificate
        )
        assert status == 200, answer
        seen = len(first)
        later, closed = await frames(
            socket,
            lambda got: any(f["reason"] == "ScalingReplicaSet" for f in got[seen:]),
            60,
        )
    assert closed is None
    assert any(f["object"]["kind"] == "Deployment" for f in later[seen:])


async def test_events_outlive_the_clusters_ttl_and_go_a_retention_after_the_lease(
    suite: Provider, chain: DevnetClients
) -> None:
    """A pod that crash-looped longer ago than the cluster keeps events: the tenant still
    gets them (history first, oldest first), then new ones live; the history is bounded,
    and gone a retention after the lease closes."""
    tenant = chain.tenant("tenant-2")
    certificate = await certified(tenant, suite)
    lease = await deployed(suite, tenant, certificate, sdl(cpu=0.25))
    namespace, stream = lease_namespace(lease), lease_events_stream(lease)
    crash = {"namespace": namespace, "selector": "akash.network/manifest-service=web"}
    bus = Bus.connect(RedisSettings(url=suite.redis_url), producer="test")
    core = kubernetes.client.CoreV1Api(
        kubernetes.config.new_client_from_config(str(suite.kubesim.kubeconfig))  # type: ignore[no-untyped-call]
    )

    async def kept() -> list[Any]:
        return [read_entry(e.fields) for e in await bus.backend.entries(stream)]

    def reasons_in_cluster() -> set[str]:
        return {e.reason for e in core.list_namespaced_event(namespace).items}

    try:
        suite.kubesim.faults(crashloop=crash)
        history = await eventually(  # more events than the history keeps: it is full
            kept,
            timeout_s=30,
            what="the crash loop's events kept",
            until=lambda got: (
                len(got) == EVENTS_MAXLEN and "BackOff" in {e.event["reason"] for e in got}
            ),
        )
        suite.kubesim.faults(heal=True)
        # the cluster drops them an event TTL after their last write
        await eventually(
            reasons_in_cluster,
            EVENT_TTL_S + 30,
            "kubesim's TTL",
            until=lambda r: "BackOff" not in r,
        )
        history = await kept()
        assert len(history) == EVENTS_MAXLEN  # the bound holds
        expected = [json.loads(event_frame(e.event)) for e in history]
        url = wss(suite, lease, "kubeevents?follow=true")
        async with websocket(tenant, url, certificate=certificate) as socket:
            first, _ = await frames(socket, lambda got: len(got) >= len(expected), 20)
            assert first == expected  # history first, oldest first
            assert {"Warning", "Normal"} <= {f["type"] for f in first}
            backoff = next(f for f in first if f["reason"] == "BackOff")
            assert backoff["object"]["name"].startswith("web-")
            assert backoff["reportingController"] == "kubelet"
            # then live: the pod crashes again
            suite.kubesim.faults(crashloop=crash)
            live, closed = await frames(
                socket, lambda got: any(f["reason"] == "BackOff" for f in got), 20
            )
            assert closed is None
            assert {f["reason"] for f in live} <= {"Pulled", "Created", "Started", "BackOff"}
            suite.kubesim.faults(heal=True)
        assert await bus.backend.length(stream) == EVENTS_MAXLEN

        # the lease closes: its history ends, is still served a while, then goes
        await tenant.close(lease.dseq)
        ended = await eventually(
            kept, 60, "the history ended", until=lambda got: bool(got) and got[-1].closed
        )
        async with websocket(tenant, wss(suite, lease, "kubeevents"), certificate=certificate) as s:
            served, code = await frames(s, lambda _: False, 20)
        assert (len(served), code) == (len(ended) - 1, 1000)
        await eventually(
            lambda: bus.backend.length(stream),
            EVENTS_RETENTION_S + 10,
            "the retention",
            until=(0).__eq__,
        )
        async with websocket(tenant, url, certificate=certificate) as s:
            served, code = await frames(s, lambda _: False, 20)
        assert (served, code) == ([], 4001)
    finally:
        suite.kubesim.faults(heal=True)
        core.api_client.close()  # type: ignore[no-untyped-call]
        await bus.close()


@pytest.mark.usefixtures("exec_sandbox")
async def test_a_shell_runs_commands_with_their_exit_code_and_stdin(
    suite: Provider, chain: DevnetClients, web_lease: tuple[LeaseID, ClientCertificate]
) -> None:
    lease, certificate = web_lease
    tenant = chain.tenant("tenant-1")
    await available(suite, tenant, certificate, sdl(cpu=0.25, count=2), lease)

    async def run(query: str, stdin: bytes = b"") -> tuple[bytes, bytes, dict[str, Any]]:
        url = wss(suite, lease, f"shell?service=web&podIndex=0&{query}")
        async with websocket(tenant, url, certificate=certificate) as socket:
            if stdin:
                await socket.send(bytes([104]) + stdin)
            got, closed = await frames(socket, lambda got: bool(got) and got[-1][0] == 102, 30)
            tail, closed = await frames(socket, lambda _: False, 10)
        assert (tail, closed) == ([], 1000)
        out = b"".join(f[1:] for f in got if f[0] == 100)
        err = b"".join(f[1:] for f in got if f[0] == 101)
        return out, err, json.loads(got[-1][1:])

    assert await run("cmd0=echo&cmd1=hello&tty=0&stdin=0") == (
        b"hello\n",
        b"",
        {"exit_code": 0, "message": ""},
    )
    out, err, result = await run("cmd0=sh&cmd1=-c&cmd2=echo oops >%262; exit 3&tty=0&stdin=0")
    assert (out, err, result["exit_code"]) == (b"", b"oops\n", 3)
    assert "exit code 3" in result["message"]
    out, _, result = await run(
        "cmd0=sh&cmd1=-c&cmd2=read x; echo got $x&tty=0&stdin=1", stdin=b"abc\n"
    )
    assert (out, result["exit_code"]) == (b"got abc\n", 0)
    out, _, result = await run("cmd0=tty&tty=1&stdin=0")
    assert (out.startswith(b"/dev/"), result["exit_code"]) == (True, 0)
    # a bad request is refused before the upgrade
    with pytest.raises(Refused) as refused:
        await run("cmd0=echo&tty=0&stdin=0&podIndex=x")
    assert refused.value.status == 400


@pytest.mark.usefixtures("exec_sandbox")
async def test_a_shell_reaches_nothing_of_the_providers(
    suite: Provider, chain: DevnetClients, web_lease: tuple[LeaseID, ClientCertificate]
) -> None:
    """From the tenant's own shell: no key or state file, no process's environment, no
    Redis socket, no cluster API — kubesim runs it in its sandbox."""
    lease, certificate = web_lease
    tenant = chain.tenant("tenant-1")
    await available(suite, tenant, certificate, sdl(cpu=0.25, count=2), lease)
    redis_socket = suite.redis_url.removeprefix("unix://")
    probe = (
        f"cat {suite.devnet.key_path('provider')} && echo KEY-READ; "
        f"ls {suite.tmp} {suite.devnet.home} && echo STATE-LISTED; "
        "cat /proc/*/environ | grep -a AP_ && echo ENV-READ; env | grep AP_ && echo ENV-READ; "
        f"ls {redis_socket} && echo REDIS-SEEN; "
        f"echo GET | nc -w 2 127.0.0.1 {suite.kubesim.port} && echo KUBE-REACHED; "
        "echo probed"
    )
    url = wss(suite, lease, "shell?service=web&podIndex=0&tty=0&stdin=0&cmd0=sh&cmd1=-c&cmd2=")
    async with websocket(tenant, url + quote(probe, safe=""), certificate=certificate) as socket:
        got, _ = await frames(socket, lambda got: bool(got) and got[-1][0] == 102, 30)
    out = b"".join(f[1:] for f in got if f[0] in {100, 101}).decode()
    assert "probed" in out
    for leak in ("KEY-READ", "STATE-LISTED", "ENV-READ", "REDIS-SEEN", "KUBE-REACHED"):
        assert leak not in out, out
    assert "can't connect" in out  # no network at all, not even to this machine
    log = (suite.tmp / "kubesim" / "kubesim.log").read_text()
    assert "exec: commands run in a bubblewrap sandbox over busybox" in log
    assert probe not in log  # the command line is not logged, only its name


# -- who may call what --------------------------------------------------------------------

ROUTES: list[tuple[str, str, str]] = [
    ("PUT", "/deployment/{dseq}/manifest", "send-manifest"),
    ("GET", "/lease/{lease}/status", "status"),
    ("GET", "/lease/{lease}/service/web/status", "status"),
    ("GET", "/lease/{lease}/manifest", "get-manifest"),
    ("POST", "/hostname/migrate", "hostname-migrate"),
    ("POST", "/endpoint/migrate", "ip-migrate"),
    ("WS", "/lease/{lease}/logs?tail=1", "logs"),
    ("WS", "/lease/{lease}/kubeevents", "events"),
    ("WS", "/lease/{lease}/shell?cmd0=true&service=web&podIndex=0&tty=0&stdin=0", "shell"),
]


async def test_every_route_checks_who_asks_and_what_they_may_do(
    suite: Provider, chain: DevnetClients
) -> None:
    tenant, other = chain.tenant("tenant-1"), chain.tenant("tenant-2")
    certificate = await certified(tenant, suite)
    other_certificate = await certified(other, suite)
    host = "table.tenant.test"
    shape = parse_sdl(with_names(host, "tableip"))
    lease = await deployed(suite, tenant, certificate, shape)
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    bodies = {
        "/deployment/{dseq}/manifest": json.dumps(shape.manifest.go_json()),
        "/hostname/migrate": json.dumps(
            {"hostnames_to_migrate": [host], "destination_dseq": lease.dseq, "destination_gseq": 1}
        ),
        "/endpoint/migrate": json.dumps(
            {
                "endpoints_to_migrate": ["tableip"],
                "destination_dseq": lease.dseq,
                "destination_gseq": 1,
            }
        ),
    }

    def granular(dseq: int, scope: str, services: tuple[str, ...] = ("web",)) -> str:
        grant = {"dseq": dseq, "scope": [scope], "services": list(services)}
        return tenant.token(
            {
                "access": "granular",
                "permissions": [
                    {"provider": lease.provider, "access": "granular", "deployments": [grant]}
                ],
            }
        )

    def credentials(auth: str, scope: str) -> dict[str, Any]:
        return {
            "no auth": {},
            "other owner's certificate": {"certificate": other_certificate},
            "other owner's token": {"token": other.token()},
            "expired token": {"token": tenant.token(now=past)},
            "token without the scope": {
                "token": tenant.token({"access": "scoped", "scope": ["restart"]})
            },
            "granular token for another deployment": {"token": granular(lease.dseq + 1, scope)},
            "granular token for another service": {"token": granular(lease.dseq, scope, ("db",))},
            "certificate and token together": {
                "certificate": certificate,
                "token": tenant.token(),
            },
            "certificate": {"certificate": certificate},
            "token with the scope": {"token": tenant.token({"access": "scoped", "scope": [scope]})},
            "granular token for this deployment": {"token": granular(lease.dseq, scope)},
        }[auth]

    async def outcome(
        method: str, template: str, scope: str, auth: str, gseq: str = str(lease.gseq)
    ) -> str:
        dseq = str(lease.dseq) if gseq == str(lease.gseq) else gseq.replace("1", str(lease.dseq))
        path = template.format(dseq=dseq, lease=f"{lease.dseq}/{gseq}/{lease.oseq}")
        given = credentials(auth, scope)
        if method != "WS":
            status, _ = await tenant.gateway_request(
                method, f"{suite.gateway.url}{path}", body=bodies.get(template), **given
            )
            return str(status)
        url = suite.gateway.url.replace("https://", "wss://") + path
        try:
            async with websocket(tenant, url, **given) as socket:
                got, closed = await frames(socket, bool, 20)
        except Refused as exc:
            return str(exc.status)
        return "streamed" if got else f"closed {closed}"

    expected = {
        "no auth": "401",
        "other owner's certificate": "not found",
        "other owner's token": "not found",
        "expired token": "401",
        "token without the scope": "403",
        "granular token for another deployment": "403",
        # naming no service (the lease's status, manifest, logs, events) needs them all
        "granular token for another service": "403",
        "certificate and token together": "400",
        "certificate": "ok",
        "token with the scope": "ok",
        "granular token for this deployment": "ok",
    }
    table = {}
    for method, template, scope in ROUTES:
        for auth in expected:
            found = await outcome(method, template, scope, auth)
            table[(template, auth)] = {
                "200": "ok",
                "streamed": "ok",
                "404": "not found",
                "closed 4001": "not found",
            }.get(found, found)
    # migrations name no service: their scope is checked on the destination deployment
    assert table == {
        (t, auth): {
            ("/hostname/migrate", "granular token for another service"): "ok",
            ("/endpoint/migrate", "granular token for another service"): "ok",
        }.get((t, auth), want)
        for _, t, _ in ROUTES
        for auth, want in expected.items()
    }

    # every other spelling of a lease's numbers is a 400, checked before any grant
    # (the other spellings are in services/gateway/tests/test_hostile_input.py)
    aliases = ("+1", "01", "%201", "%C2%B9")  # ¹: str.isdigit() says yes, int() says no
    spelled = {}
    for method, template, scope in ROUTES:
        if "{" not in template:
            continue
        for alias in aliases:
            auth = "granular token for this deployment"
            spelled[(template, alias)] = await outcome(method, template, scope, auth, gseq=alias)
    assert spelled == dict.fromkeys(spelled, "400")


# -- what one client may hold: bodies, connections, websockets, shells ----------------------

MIB = 1024 * 1024


def proc_status(pid: int | None, field: str) -> int:
    """A number from ``/proc/<pid>/status`` (VmRSS in KiB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)


def open_files(pid: int | None) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def raw_request(
    port: int, head: str, body: Callable[[], AsyncIterator[bytes]] | None = None
) -> tuple[int, Any, bool, int]:
    """``head`` (a request's line and headers) over TLS, then ``body``'s chunks while the
    gateway reads them; (status, JSON body, whether the gateway then closed within 1 s,
    bytes of the body sent). Status 0: the gateway reset the connection before its answer was read (it
    closed with the client's bytes unread, as it does to stop reading a body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ssl_any())
    writer.write(head.encode())
    sent = 0
    answered = asyncio.Event()

    async def push() -> None:
        nonlocal sent
        if body is not None:
            with contextlib.suppress(OSError, ssl.SSLError):
                async for chunk in body():
                    if answered.is_set() or writer.transport.is_closing():
                        return
                    writer.write(chunk)
                    await writer.drain()
                    sent += len(chunk)
                    await asyncio.sleep(0)  # a turn for the reader (drain may not yield)

    pusher = asyncio.create_task(push())
    status, answer, closed = 0, b"", True
    try:
        async with asyncio.timeout(15):
            status = int((await reader.readline()).split()[1])
            answered.set()
            headers = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            answer = await reader.readexactly(int(headers.get("content-length", "0")))
            try:  # closed at once, or kept open (for the idle clock)
                closed = await asyncio.wait_for(reader.read(1), 1.0) == b""
            except TimeoutError:
                closed = False
    except (ConnectionResetError, ssl.SSLError, asyncio.IncompleteReadError, IndexError):
        pass  # reset (status 0), closed
    finally:
        answered.set()
        pusher.cancel()
        await asyncio.gather(pusher, return_exceptions=True)
        writer.transport.abort()
    return status, json.loads(answer or b"null"), closed, sent


async def fifty_mib() -> AsyncIterator[bytes]:
    """50 MiB of a JSON array's white space, chunked, 64 KiB at a time."""
    chunk = b"[" + b" " * (64 * 1024 - 1)
    for _ in range(50 * 16):
        yield f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"


async def one_mib() -> AsyncIterator[bytes]:
    """1 MiB of white space, 64 KiB at a time (a body of declared length)."""
    for _ in range(16):
        yield b" " * (64 * 1024)


BODY_ROUTES = [
    ("PUT", "/deployment/1/manifest"),
    ("POST", "/hostname/migrate"),
    ("POST", "/endpoint/migrate"),
    ("GET", "/lease/1/1/1/status"),
    ("GET", "/status"),
    ("POST", "/no/such/route"),
]


async def test_a_large_body_is_refused_before_it_is_read(suite: Provider) -> None:
    gateway = suite.gateway
    port = gateway.port

    def head(method: str, path: str, length: str) -> str:
        return f"{method} {path} HTTP/1.1\r\nHost: gateway\r\n{length}\r\n\r\n"

    declared = f"Content-Length: {50 * MIB}"
    await raw_request(port, head("POST", "/hostname/migrate", declared))  # warm the path up
    before = proc_status(gateway.pid, "VmRSS")
    answers = set()
    for method, path in BODY_ROUTES:
        # declared: refused from the headers, before a byte of the body is sent
        status, answer, closed, _ = await raw_request(port, head(method, path, declared))
        assert (status, closed) == (413, True), path
        assert "over the limit of" in answer["message"]
        # chunked, without credentials: refused once past the limit (routes that read
        # their body before authentication) or answered at once, and never read whole
        status, answer, closed, sent = await raw_request(
            port, head(method, path, "Transfer-Encoding: chunked"), fifty_mib
        )
        assert closed, path
        assert sent < 20 * MIB, path
        answers.add(status)
        if status == 413:
            assert "over the limit of" in answer["message"]
    # a route that reads its body is stopped at the limit: 413, or the connection reset
    # under a client still sending (the answer lost with it, as TCP does)
    assert answers & {413, 0}, answers
    assert proc_status(gateway.pid, "VmRSS") - before < 10 * 1024  # KiB
    # the manifest route takes more than the others, its own setting: past the body limit
    # check, to authentication; the body sent whole is read and dropped, so the answer
    # reaches a client that sends its body before it reads, on a connection kept open
    status, _, closed, _ = await raw_request(
        port, head("PUT", "/deployment/1/manifest", f"Content-Length: {MIB}"), one_mib
    )
    assert (status, closed) == (401, False)
    # a client that waits for 100 Continue is refused from the headers alone
    status, _, _, _ = await raw_request(
        port, head("POST", "/hostname/migrate", f"Content-Length: {MIB}\r\nExpect: 100-continue")
    )
    assert status == 413


async def test_idle_and_stalled_connections_are_closed(suite: Provider) -> None:
    gateway = suite.gateway
    baseline = open_files(gateway.pid)
    # what each of 200 clients sends after its TLS handshake, and the clock that closes it
    kinds = [
        (b"", 2.0),  # nothing at all: the headers' clock
        (b"GET /version HTTP/1.1\r\nHost: gateway\r\n\r\n", 3.0),  # then idle
        (b"GET /version HTTP/1.1\r\nHost: gateway\r\n", 2.0),  # headers that never end
        # a body that stalls
        (b"POST /hostname/migrate HTTP/1.1\r\nHost: gateway\r\nContent-Length: 100\r\n\r\n{", 2.0),
    ]
    handshakes = asyncio.Semaphore(8)  # a loaded machine finishes them within their clock
    loop = asyncio.get_running_loop()

    async def client(i: int) -> tuple[float, float]:
        sends, clock = kinds[i % len(kinds)]
        async with handshakes:
            reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port, ssl=ssl_any())
        started = loop.time()
        writer.write(sends)
        try:
            with contextlib.suppress(OSError, ssl.SSLError):
                while await reader.read(64 * 1024):
                    pass  # an answer, then the end
            return loop.time() - started, clock
        finally:
            writer.transport.abort()

    async with asyncio.timeout(60):
        held = await asyncio.gather(*(client(i) for i in range(200)))
    for took, clock in held:  # each closed by its clock (or sooner: the client's loop lags)
        assert took < clock + 5.0, (took, clock)  # slack for a loaded machine
    for kind in range(len(kinds)):  # and by that clock: most are closed no sooner
        times = sorted(took for took, _ in held[kind :: len(kinds)])
        assert times[len(times) // 2] > kinds[kind][1] - 0.5, times
    await eventually(
        lambda: open_files(gateway.pid) <= baseline + 2, what="the gateway's sockets closed"
    )
    url = f"{gateway.health_url}/metrics"
    metrics = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())  # noqa: S310
    for step in ("headers", "body"):
        assert (
            f'provider_gateway_connections_timed_out_total{{listener="tenant API",step="{step}"}}'
            in metrics
        )


@pytest.mark.usefixtures("exec_sandbox")
async def test_one_tenants_shells_neither_slow_another_nor_pass_its_limits(
    suite: Provider, chain: DevnetClients, web_lease: tuple[LeaseID, ClientCertificate]
) -> None:
    lease, certificate = web_lease
    tenant = chain.tenant("tenant-1")
    other = chain.tenant("tenant-3")
    other_certificate = await certified(other, suite)
    other_lease = await deployed(suite, other, other_certificate, sdl(cpu=0.25, count=1))
    commands = ["sleep%2030", "cat", "sleep%2030", "cat", "sleep%2030", "cat", "sleep%2030", "cat"]
    async with contextlib.AsyncExitStack() as stack:
        shells = []
        for command in commands:  # the limit: 8 shells
            argv = "&".join(f"cmd{i}={word}" for i, word in enumerate(command.split("%20")))
            url = wss(suite, lease, f"shell?service=web&podIndex=0&tty=0&stdin=1&{argv}")
            shell = websocket(tenant, url, certificate=certificate, close_timeout=0.5)
            shells.append(await stack.enter_async_context(shell))
        with pytest.raises(Refused) as refused:  # a ninth shell
            await stack.enter_async_context(
                websocket(
                    tenant,
                    wss(suite, lease, "shell?service=web&podIndex=0&tty=0&stdin=0&cmd0=true"),
                    certificate=certificate,
                )
            )
        assert refused.value.status == 429
        for _ in range(2):  # two more websockets: ten, the limit of all kinds
            await stack.enter_async_context(
                websocket(
                    tenant, wss(suite, lease, "kubeevents?follow=true"), certificate=certificate
                )
            )
        with pytest.raises(Refused) as refused:
            await stack.enter_async_context(
                websocket(tenant, wss(suite, lease, "kubeevents"), certificate=certificate)
            )
        assert refused.value.status == 429

        async def push(shell: ClientConnection) -> None:
            with contextlib.suppress(ConnectionClosed):
                while True:
                    await shell.send(bytes([104]) + b"x" * 1024)
                    await asyncio.sleep(0)  # a turn for the others (send may not yield)

        pushers = [asyncio.create_task(push(shell)) for shell in shells]
        try:
            for _ in range(4):  # another tenant's first event, while the input keeps coming
                started = asyncio.get_running_loop().time()
                async with websocket(
                    other, wss(suite, other_lease, "kubeevents"), certificate=other_certificate
                ) as socket:
                    first, _ = await frames(socket, bool, 10)
                assert first
                assert asyncio.get_running_loop().time() - started < 1.0
        finally:
            for pusher in pushers:
                pusher.cancel()
            await asyncio.gather(*pushers, return_exceptions=True)

    # the tenant's slots come back once its websockets are gone: a shell runs again
    async def shell_again() -> bool:
        url = wss(suite, lease, "shell?service=web&podIndex=0&tty=0&stdin=0&cmd0=true")
        try:
            async with websocket(tenant, url, certificate=certificate) as socket:
                got, code = await frames(socket, lambda _: False, 10)  # until it closes
        except Refused as refused:
            assert refused.status == 429  # noqa: PT017 - not yet given back
            return False
        return code == 1000 and bool(got)  # the command's result, then the close

    await eventually(shell_again, what="a new shell after the others closed", timeout_s=15)

    # neither command lines nor query values are in the gateway's log
    log = suite.gateway.log()
    assert "cmd0=sleep" not in log and "cmd0=***" in log


def test_secrets_stay_out_of_logs_and_environments(suite: Provider) -> None:
    for process in [*suite.processes.values(), suite.devnet]:
        assert process.log_path.stat().st_mode & 0o777 == 0o600, process.name
        environment = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
        names = {entry.partition(b"=")[0].decode() for entry in environment if entry}
        assert "AP_KEY_PASSPHRASE" not in names, process.name
        if process is not suite.devnet:  # the devnet's own keys need it
            assert "AKDEVNET_KEY_PASSPHRASE" not in names, process.name
    relay = suite.processes["relay"]
    assert "AP_KEY_PASSPHRASE_FILE" in Path(f"/proc/{relay.pid}/environ").read_text()


# -- a lease's status from memory (last: it stops the cluster service) -----------------------


def served_from_memory(provider: Provider) -> float:
    """The gateway's count of lease statuses it served from memory."""
    url = f"{provider.gateway.health_url}/metrics"
    with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310 - the test's own
        text = answer.read().decode()
    found = re.search(
        r'^provider_gateway_lease_status_served_total\{source="memory"\} (\S+)$', text, re.M
    )
    return float(found[1]) if found else 0.0


async def test_a_lease_status_from_memory_shows_restarts_ages_out_and_leaves_with_the_lease(
    suite: Provider, chain: DevnetClients
) -> None:
    tenant = chain.tenant("tenant-3")
    certificate = await certified(tenant, suite)
    [lease] = (await flow(suite, tenant, certificate, sdl(cpu=0.25), "memory"))["leases"]

    async def status() -> tuple[int, Any]:
        return await tenant.lease_status(
            lease.dseq, lease.gseq, lease.oseq, suite.gateway.url, certificate, timeout=20
        )

    bus = Bus.connect(RedisSettings(url=suite.redis_url), producer="test")
    try:

        async def both() -> tuple[Any, Any]:  # the gateway's memory, the cluster over the bus
            _, body = await status()
            asked = await bus.request(
                CLUSTER_COMMANDS,
                GetLeaseStatus(lease_id=lease),
                (LeaseStatusReport, LeaseQueryFailed),
            )
            assert isinstance(asked, LeaseStatusReport), asked
            services = {name: s.go_dict() for name, s in asked.services.items()}
            return body, {"services": services, "forwarded_ports": {}, "ips": None}

        before = served_from_memory(suite)
        body, _ = await eventually(
            both, timeout_s=20, what="the same answer", until=lambda pair: pair[0] == pair[1]
        )
    finally:
        await bus.close()
    assert served_from_memory(suite) > before
    assert body["services"]["web"]["restarts"] == 0
    assert body["services"]["web"]["last_termination"] is None

    # a crash-looping container's restarts (kubesim: one a second) show within the bound
    namespace = lease_namespace(lease)
    suite.kubesim.faults(crashloop={"namespace": namespace, "selector": "akash.network=true"})
    crashed_at = time.monotonic()

    def restarted(answer: tuple[int, Any]) -> bool:
        return answer[0] == 200 and answer[1]["services"]["web"]["restarts"] >= 2

    _, body = await eventually(status, timeout_s=30, what="restarts shown", until=restarted)
    assert time.monotonic() - crashed_at < 2 + 2 * LEASE_STATUS_MAX_AGE
    ended = body["services"]["web"]["last_termination"]
    assert (ended["reason"], ended["exit_code"]) == ("Error", 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ended["finished_at"])

    # the cluster gone: its last confirmed status is served until the bound, never after,
    # then the answer is the one without a cluster (503: it does not answer)
    cluster = suite.cluster()
    cluster.stop()
    stopped = time.monotonic()
    answers: list[tuple[float, int]] = []
    try:
        while time.monotonic() - stopped < LEASE_STATUS_MAX_AGE + 30:
            code, _ = await status()
            answers.append((round(time.monotonic() - stopped, 2), code))
            if code != 200:
                break
    finally:
        suite.kubesim.faults(heal=True)
        cluster.start()
    assert answers[0][1] == 200, answers  # from memory: nobody answers the bus
    assert all(at < LEASE_STATUS_MAX_AGE + 0.5 for at, code in answers if code == 200), answers
    assert answers[-1][1] == 503, answers

    # the cluster back: the lease's status from memory again; closed, it leaves the memory
    # (a 404 as before, never the last status confirmed again and again)
    await eventually(status, timeout_s=60, what="served again", until=lambda a: a[0] == 200)
    await tenant.close(lease.dseq)
    await eventually(status, timeout_s=60, what="closed", until=lambda a: a[0] == 404)
    assert (await status())[0] == 404
