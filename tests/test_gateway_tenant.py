"""The rest of a tenant's gateway, across real processes: migrations between two leases,
who may call which route (certificates and tokens, every route), logs, events and a shell.

One provider for the whole module (devnet, Redis, relay, kubesim, every service, gateway):
each test uses deployments of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import quote

import kubernetes
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from akchain import msgs
from akcli.testing import Provider, certified, leased, running, sdl, sdl_text, whole_suite
from akdevnet.tenant import ClientCertificate, Tenant
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.ids import DeploymentID, LeaseID
from aktypes.ingress import ingress_host
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


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with whole_suite(
        tmp_path_factory.mktemp("suite"),
        cluster_env={"AP_CLUSTER_PUBLIC_HOSTNAME": "provider.test", "AP_CLUSTER_LEASED_IPS": "8"},
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
    assert names_of(suite, first) == {
        "ingress": sorted([HOST, made_first]),
        "providerhosts": sorted([HOST, made_first]),
        "leasedips": [ip_key],
    }
    assert names_of(suite, second) == {
        "ingress": [made_second],
        "providerhosts": [made_second],
        "leasedips": [],
    }
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
    moved_away = names_of(suite, first)
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
) -> AsyncIterator[ClientConnection]:
    """A websocket to the gateway as ``tenant`` (certificate, bearer token, or neither).
    Leaving it waits until the TLS connection is closed, so nothing outlives the test."""
    context = await tenant.gateway_context(certificate, None) or ssl_any()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        socket = await connect(
            quote(url, safe=":/?&=%"),  # the query as given, spaces and all, escaped
            ssl=context,
            additional_headers=headers,
            ping_interval=None,
            max_size=None,
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
