"""The tenant REST API against real processes: TLS and authentication with certificates on
the devnet's chain, every route and status code, the manifest and cluster services played by
stand-ins (:class:`akgateway.testing.StandIns`)."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.metadata
import json
import os
import platform
import ssl
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from akbus import Bus, RedisSettings
from akchain import jwt, msgs
from akchain.keys import Signer
from akgateway.testing import (
    MadeCertificate,
    akash_sdk_certificate,
    client_context,
    make_certificate,
)
from akservice.testing import eventually_sync, http_status
from aktypes.events import (
    BidEngineStatus,
    ChainStatus,
    ClusterStatus,
    ForwardedPort,
    GetLeaseManifest,
    GetLeaseStatus,
    LeasedIPStatus,
    LeaseManifestReport,
    LeaseQueryFailed,
    LeaseStatusReport,
    ManifestRejected,
    ManifestStatus,
    NodeTotals,
    ResourceTotals,
    ServiceStatus,
    SubmitManifest,
)
from aktypes.events.streams import MANIFEST_COMMANDS, status_stream
from aktypes.ids import LeaseID
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
TETRIS = parse_sdl((CORPUS / "tetris.yaml").read_text())
MANIFEST = json.dumps(TETRIS.manifest.go_json()).encode()
GROUP = TETRIS.manifest.groups[0]
HASH = "ab" * 32
Pems = tuple[bytes, bytes]


async def publish(stack: Any, name: str, made: MadeCertificate) -> None:
    async with stack.devnet.clients() as chain:
        wallet = chain.wallet(name)
        await wallet.send(msgs.create_certificate(wallet.address, made.cert_pem, made.pubkey_pem))


def pems(made: MadeCertificate) -> Pems:
    return made.cert_pem, made.key_pem


@pytest.fixture(scope="module")
def tenant(stack: Any) -> tuple[str, Pems, MadeCertificate]:
    """tenant-1: its address and client certificate, published and trusted by the gateway."""
    address = stack.devnet.signer("tenant-1").address
    made = make_certificate(address)
    asyncio.run(publish(stack, "tenant-1", made))
    stack.wait_trusted(pems(made))
    return address, pems(made), made


@pytest.fixture(autouse=True)
def fresh_services(stack: Any) -> None:
    stack.services.reset()


def refused_in_handshake(stack: Any, cert: Pems) -> bool:
    """The TLS layer drops the connection (TLS 1.3: the alert arrives on the first read)."""
    try:
        stack.call("GET", "/version", cert=cert)
    except (ssl.SSLError, ConnectionError):
        return True
    return False


# -- the provider's certificate and TLS ---------------------------------------------------


def test_the_provider_certificate_is_made_published_and_served(stack: Any) -> None:
    pem = stack.tmp / "tls" / f"{stack.provider}.pem"
    assert pem.stat().st_mode & 0o777 == 0o600
    own = x509.load_pem_x509_certificate(pem.read_bytes())
    assert own.subject.rfc4514_string() == f"CN={stack.provider}"
    sans = own.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    url = f"{stack.devnet.lcd_url}/akash/cert/v1/certificates/list?filter.owner={stack.provider}"
    with urllib.request.urlopen(url) as response:  # noqa: S310 - the devnet's LCD
        on_chain = json.load(response)["certificates"]
    assert [(c["serial"], c["certificate"]["state"]) for c in on_chain] == [
        (str(own.serial_number), "valid")
    ]
    served = ssl.get_server_certificate(("127.0.0.1", stack.port))
    assert x509.load_pem_x509_certificate(served.encode()) == own

    again = stack.gateway.cert("publish")
    assert again.returncode == 0, again.stderr
    assert "on chain already" in again.stdout
    refused = stack.gateway.cert("generate")
    assert refused.returncode == 1
    assert "--force" in refused.stderr


def test_only_tls_1_3_is_spoken(stack: Any) -> None:
    with pytest.raises(ssl.SSLError):
        stack.call("GET", "/version", context=client_context(maximum=ssl.TLSVersion.TLSv1_2))
    assert stack.call("GET", "/version").status == 200


# -- public routes ------------------------------------------------------------------------


def test_public_routes_answer_without_a_client_certificate(stack: Any) -> None:
    version = stack.call("GET", "/version")
    assert version.status == 200
    assert set(version.body) == {"akash", "kube"}
    akash = version.body["akash"]
    assert set(akash) == {  # Akash's version.Info
        "name",
        "server_name",
        "version",
        "commit",
        "build_tags",
        "go",
        "build_deps",
        "cosmos_sdk_version",
    }
    assert akash["version"] == importlib.metadata.version("akgateway")
    assert akash["go"].startswith(f"{platform.python_implementation()} {platform.python_version()}")
    deps = {d["Path"]: d["Version"] for d in akash["build_deps"]}
    assert deps["fastapi"] == importlib.metadata.version("fastapi")
    assert set(akash["build_deps"][0]) == {"Path", "Version", "Sum", "Replace"}
    head = subprocess.run(  # the tests run from a checkout: the commit is its HEAD
        ["git", "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent,
    )
    assert akash["commit"] == head.stdout.strip()
    assert stack.call("GET", "/address").body == {"address": stack.provider}
    assert stack.call("GET", "/status").status == 200
    openapi = stack.call("GET", "/openapi.json")
    assert openapi.status == 200
    assert {
        "/version", "/address", "/status", "/deployment/{dseq}/manifest",
        "/lease/{dseq}/{gseq}/{oseq}/status", "/lease/{dseq}/{gseq}/{oseq}/manifest",
        "/lease/{dseq}/{gseq}/{oseq}/service/{service}/status",
    } <= set(openapi.body["paths"])  # fmt: skip
    assert stack.call("GET", "/docs").status == 200


def test_unknown_routes_and_methods_answer_json(stack: Any) -> None:
    missing = stack.call("GET", "/nothing/here")
    assert (missing.status, missing.message) == (404, "Not Found")
    wrong = stack.call("DELETE", "/version")
    assert (wrong.status, wrong.message) == (405, "Method Not Allowed")


# -- authentication -----------------------------------------------------------------------


def test_tenant_routes_need_a_client_certificate(stack: Any) -> None:
    for method, path in [
        ("PUT", "/deployment/7/manifest"),
        ("GET", "/lease/7/1/1/status"),
        ("GET", "/lease/7/1/1/service/web/status"),
        ("GET", "/lease/7/1/1/manifest"),
    ]:
        answer = stack.call(method, path, body=MANIFEST if method == "PUT" else None)
        assert answer.status == 401, (path, answer.raw)
        assert "client certificate" in answer.message
    assert stack.services.seen == []


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_token_authenticates_its_issuer(stack: Any, tenant: Any) -> None:
    owner, _, _ = tenant
    token = jwt.mint(stack.devnet.signer("tenant-1"), {"access": "full"})
    answer = stack.call("PUT", "/deployment/44/manifest", body=MANIFEST, headers=bearer(token))
    assert (answer.status, answer.raw) == (200, b"")
    [command] = stack.services.seen
    assert str(command.deployment_id) == f"{owner}/44"


def test_bad_or_ambiguous_credentials_are_refused(stack: Any, tenant: Any) -> None:
    _, cert, _ = tenant
    signer = stack.devnet.signer("tenant-1")
    token = jwt.mint(signer, {"access": "full"})
    path = "/lease/7/1/1/status"
    both = stack.call("GET", path, cert=cert, headers=bearer(token))
    assert (both.status, "ambiguous" in both.message) == (400, True)
    basic = stack.call("GET", path, headers={"Authorization": "Basic eA=="})
    assert (basic.status, "expected 'Bearer <token>'" in basic.message) == (400, True)
    garbage = stack.call("GET", path, headers=bearer("abc.def.ghi"))
    assert (garbage.status, "not a JWT" in garbage.message) == (401, True)
    # an account the chain has no key of (it never signed a transaction)
    stranger = jwt.mint(Signer.generate(), {"access": "full"})
    unknown = stack.call("GET", path, headers=bearer(stranger))
    assert (unknown.status, "knows no public key" in unknown.message) == (401, True)
    # a token claiming tenant-1 but signed by another key
    header, payload, _ = token.split(".")
    _, _, other_signature = jwt.mint(Signer.generate(), {"access": "full"}).split(".")
    forged = stack.call("GET", path, headers=bearer(f"{header}.{payload}.{other_signature}"))
    assert (forged.status, "Signature verification failed" in forged.message) == (401, True)
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    expired = stack.call(
        "GET", path, headers=bearer(jwt.mint(signer, {"access": "full"}, now=past))
    )
    assert (expired.status, "expired" in expired.message) == (401, True)
    assert stack.services.seen == []


def test_a_token_allows_only_its_scope(stack: Any, tenant: Any) -> None:
    signer = stack.devnet.signer("tenant-1")
    status_only = jwt.mint(signer, {"access": "scoped", "scope": ["status"]})
    refused = stack.call(
        "PUT", "/deployment/45/manifest", body=MANIFEST, headers=bearer(status_only)
    )
    assert (refused.status, refused.message) == (403, "the token's scope lacks send-manifest")
    assert stack.services.seen == []
    stack.services.cluster = lambda c: LeaseStatusReport(lease_id=c.lease_id)
    assert stack.call("GET", "/lease/45/1/1/status", headers=bearer(status_only)).status == 200
    granular = {
        "access": "granular",
        "permissions": [
            {
                "provider": stack.provider,
                "access": "granular",
                "deployments": [{"dseq": 46, "scope": ["status"], "services": ["web"]}],
            }
        ],
    }
    token = jwt.mint(signer, granular)
    assert stack.call("GET", "/lease/46/1/1/status", headers=bearer(token)).status == 200
    other = stack.call("GET", "/lease/47/1/1/status", headers=bearer(token))
    assert (other.status, "deployment 47" in other.message) == (403, True)
    service = stack.call("GET", "/lease/46/1/1/service/db/status", headers=bearer(token))
    assert (service.status, "['db']" in service.message) == (403, True)
    elsewhere = dict(
        granular, permissions=[dict(granular["permissions"][0], provider=signer.address)]
    )
    foreign = stack.call("GET", "/lease/46/1/1/status", headers=bearer(jwt.mint(signer, elsewhere)))
    assert (foreign.status, "grants nothing at provider" in foreign.message) == (403, True)


def test_a_valid_certificate_authenticates_its_owner(stack: Any, tenant: Any) -> None:
    owner, cert, _ = tenant
    answer = stack.call("PUT", "/deployment/42/manifest", cert=cert, body=MANIFEST)
    assert (answer.status, answer.raw) == (200, b"")
    [command] = stack.services.seen
    assert isinstance(command, SubmitManifest)
    assert str(command.deployment_id) == f"{owner}/42"
    assert command.manifest == TETRIS.manifest


async def test_a_revoked_certificate_is_refused(stack: Any) -> None:
    address = stack.devnet.signer("tenant-2").address
    made = make_certificate(address)
    await publish(stack, "tenant-2", made)
    assert stack.wait_trusted(pems(made)).status == 404  # the stand-in's "no such lease"
    async with stack.devnet.clients() as chain:
        await chain.wallet("tenant-2").send(msgs.revoke_certificate(address, made.serial))

    def refused() -> str | None:
        answer = stack.call("GET", "/lease/1/1/1/status", cert=pems(made))
        return answer.message if answer.status == 401 else None

    message = eventually_sync(refused, timeout_s=10, what="a 401 for the revoked certificate")
    assert f"{made.serial} of {address} is revoked" in message


async def test_an_expired_certificate_is_refused(stack: Any) -> None:
    address = stack.devnet.signer("tenant-3").address
    now = dt.datetime.now(dt.UTC)
    made = make_certificate(
        address, valid_from=now - dt.timedelta(days=10), valid_until=now - dt.timedelta(days=1)
    )
    await publish(stack, "tenant-3", made)
    answer = stack.wait_trusted(pems(made))
    assert answer.status == 401
    assert "expired" in answer.message


async def test_a_certificate_made_as_akash_sdks_make_it_authenticates_its_owner(
    stack: Any,
) -> None:
    """keyUsage without digitalSignature, CA:TRUE, a timestamp serial, CRLF PEM: accepted
    for what Go checks (on chain, valid, within its dates, extended key usage clientAuth)."""
    address = stack.devnet.signer("tenant-1").address  # a second certificate of tenant-1
    made = akash_sdk_certificate(address)
    usage = made.cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert (usage.digital_signature, usage.key_encipherment, usage.data_encipherment) == (
        False,
        True,
        True,
    )
    assert b"\r\n" in made.cert_pem
    assert b"\r\n" in made.pubkey_pem
    await publish(stack, "tenant-1", made)
    answer = stack.wait_trusted(pems(made))
    assert answer.status == 404  # the stand-in's "no such lease": authenticated
    put = stack.call("PUT", "/deployment/43/manifest", cert=pems(made), body=MANIFEST)
    assert (put.status, put.raw) == (200, b"")
    [command] = [c for c in stack.services.seen if isinstance(c, SubmitManifest)]
    assert str(command.deployment_id) == f"{address}/43"


def test_a_certificate_not_on_chain_fails_the_handshake(stack: Any, tenant: Any) -> None:
    """With a TLS alert to the client and one line in the gateway's log saying why."""
    owner, _, _ = tenant
    before = stack.gateway.log().count("TLS handshake refused")
    with pytest.raises(ssl.SSLError, match="ALERT_UNKNOWN_CA"):
        stack.call("GET", "/version", cert=pems(make_certificate(owner)))

    def logged() -> list[str] | None:
        lines = [line for line in stack.gateway.log().splitlines() if "handshake refused" in line]
        return lines if len(lines) > before else None

    lines = eventually_sync(logged, timeout_s=5, what="the refused handshake in the log")
    assert len(lines) == before + 1
    entry = json.loads(lines[-1])
    assert "not a certificate published on chain" in entry["event"]
    assert entry["reason"] == "client_certificate"
    assert entry["peer"].startswith("127.0.0.1:")


async def test_a_certificate_minted_by_another_tenant_is_refused(stack: Any, tenant: Any) -> None:
    """A tenant whose on-chain certificate may sign certificates (a CA) mints one with the
    victim's name and serial: the TLS layer accepts the chain, the gateway does not."""
    victim, _, real = tenant
    mallory = stack.devnet.signer("faucet").address
    authority = make_certificate(mallory, ca=True)
    await publish(stack, "faucet", authority)
    forged = make_certificate(victim, serial=real.cert.serial_number, issuer=authority)
    answer = stack.wait_trusted(pems(forged))
    assert answer.status == 401
    assert "is not issued by" in answer.message
    assert stack.services.seen == []


# -- the manifest -------------------------------------------------------------------------


def test_each_rejection_code_has_its_status(stack: Any, tenant: Any) -> None:
    _, cert, _ = tenant
    expected = {
        "invalid": 422, "version_mismatch": 422, "cross_validation": 422,
        "hostname_not_allowed": 422, "services_changed": 422,
        "no_lease": 404, "deployment_not_found": 404,
        "chain_unavailable": 503, "cluster_unavailable": 503,
        "something_new": 500,
    }  # fmt: skip
    for code, status in expected.items():
        stack.services.manifest = lambda c, code=code: ManifestRejected(
            deployment_id=c.deployment_id, code=code, reason=f"because {code}"
        )
        answer = stack.call("PUT", "/deployment/43/manifest", cert=cert, body=MANIFEST)
        assert answer.status == status, (code, answer.raw)
        assert f"because {code}" in answer.message


def test_a_silent_manifest_service_is_a_503(stack: Any, tenant: Any) -> None:
    _, cert, _ = tenant
    stack.services.manifest = lambda c: None
    answer = stack.call("PUT", "/deployment/44/manifest", cert=cert, body=MANIFEST)
    assert answer.status == 503
    assert "manifest service did not answer" in answer.message


def test_bad_bodies_are_400s_that_say_where(stack: Any, tenant: Any) -> None:
    _, cert, _ = tenant

    def put(body: bytes, path: str = "/deployment/45/manifest") -> Any:
        return stack.call("PUT", path, cert=cert, body=body)

    broken = put(b'[{"name": "dcloud",\n  "services": [}]')
    assert broken.status == 400
    assert "line 2, column 16" in broken.message
    shape = put(b'[{"name": 7, "services": []}]')
    assert shape.status == 400
    assert "[0].name" in shape.message
    assert put(b'{"not": "a list"}').status == 400
    assert put(b"").status == 400
    assert put(b"\xff\xfe").status == 400
    assert put(b"[" + b" " * (4 * 1024 * 1024) + b"]").status == 413
    dseq = put(MANIFEST, "/deployment/abc/manifest")
    assert dseq.status == 400
    assert dseq.message.startswith("dseq:")
    assert put(MANIFEST, "/deployment/0/manifest").status == 400
    assert put(MANIFEST, f"/deployment/{2**64}/manifest").status == 400
    assert stack.services.seen == []


def _hostile(mutate: Any) -> bytes:
    data = json.loads(MANIFEST)
    mutate(data[0]["services"][0])
    return json.dumps(data).encode()


def _commands_on_the_bus(stack: Any) -> int:
    async def length() -> int:
        bus = Bus.connect(RedisSettings(url=stack.redis_url), producer="test")
        try:
            return await bus.backend.length(MANIFEST_COMMANDS)
        finally:
            await bus.close()

    return asyncio.run(length())


def _set_first_expose(key: str, value: Any) -> Any:
    return lambda service: service["expose"][0].__setitem__(key, value)


def _set_http_option(key: str, value: Any) -> Any:
    return lambda service: service["expose"][0]["httpOptions"].__setitem__(key, value)


HOSTILE = [
    (b"[" * 5000 + b"]" * 5000, 400, "nested far too deep"),
    (b'[{"name": "g", "services": [{"count": ' + b"9" * 4400 + b"}]}]", 400, "4400 digits"),
    (
        _hostile(_set_http_option("nextCases", ["timeout;}\n location /x {return 200;}\n#"])),
        422,
        "unknown next case 'timeout;}",
    ),
    (_hostile(_set_first_expose("externalPort", 70000)), 422, "external port 70000"),
    (_hostile(lambda s: s.__setitem__("name", "tetris\n")), 422, "service name"),
    (_hostile(lambda s: s.__setitem__("image", "a b")), 422, "blanks or control characters"),
    (_hostile(lambda s: s.__setitem__("count", 10**6)), 422, "count 1000000 is above 50"),
]


@pytest.mark.parametrize(("body", "status", "fragment"), HOSTILE)
def test_hostile_manifests_are_refused_before_the_bus(
    stack: Any, tenant: Any, body: bytes, status: int, fragment: str
) -> None:
    """Deep nesting, huge integers and values Kubernetes or ingress-nginx would refuse or
    interpret: a 4xx naming the problem, one log line, nothing published."""
    _, cert, _ = tenant
    before, log = _commands_on_the_bus(stack), len(stack.gateway.log())
    answer = stack.call("PUT", "/deployment/46/manifest", cert=cert, body=body)
    assert (answer.status, fragment in answer.message) == (status, True), answer.raw[:500]
    assert stack.services.seen == []
    assert _commands_on_the_bus(stack) == before
    written = stack.gateway.log()[log:]
    assert "Traceback" not in written
    assert written.count("\n") <= 1, written[:2000]


FUZZ_EXAMPLES = int(os.environ.get("AKP_FUZZ_EXAMPLES", "15"))
"""Examples of the manifest fuzz; a larger run: ``AKP_FUZZ_EXAMPLES=2000 pytest -k fuzz``."""

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([2**32, 2**64, 10**25, -1, 0, 65536, 70000])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from(["", "timeout;}", "a\nb", "{", '"', "²", "\x00", "..", "/", "http_502"])
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


PATHS = _paths(json.loads(MANIFEST))[1:]


@st.composite
def _near_manifests(draw: st.DrawFn) -> bytes:
    """The valid manifest with a few values replaced, or raw bytes around it."""
    data = json.loads(MANIFEST)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(PATHS))
        target = data
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = draw(_values)
        except (KeyError, IndexError, TypeError):  # an earlier change removed the place
            continue
    body = json.dumps(data).encode()
    shape = draw(st.sampled_from(["json", "deep", "bigint", "cut"]))
    if shape == "deep":
        depth = draw(st.integers(min_value=30, max_value=6000))
        return b"[" * depth + body + b"]" * depth
    if shape == "bigint":
        return body.replace(b"80", b"8" * draw(st.integers(min_value=15, max_value=5000)), 1)
    if shape == "cut":
        return body[: draw(st.integers(min_value=0, max_value=len(body)))]
    return body


@settings(
    max_examples=FUZZ_EXAMPLES,
    derandomize=FUZZ_EXAMPLES <= 100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=_near_manifests())
def test_fuzzed_manifests_never_get_a_5xx(stack: Any, tenant: Any, body: bytes) -> None:
    _, cert, _ = tenant
    answer = stack.call("PUT", "/deployment/47/manifest", cert=cert, body=body)
    assert answer.status in (200, 400, 422), (answer.status, answer.raw[:500], body[:300])
    assert "Traceback" not in stack.gateway.log()[-20000:]


# -- lease queries ------------------------------------------------------------------------


def _report(lease_id: LeaseID) -> LeaseStatusReport:
    return LeaseStatusReport(
        lease_id=lease_id,
        services={"web": ServiceStatus(name="web", available=1, total=1, uris=["a.example"])},
        forwarded_ports={
            "web": [ForwardedPort(port=80, external_port=31000, proto="TCP", name="web")]
        },
        ips={"web": [LeasedIPStatus(port=80, external_port=80, protocol="TCP", ip="1.2.3.4")]},
    )


def test_lease_status_answers_with_go_names(stack: Any, tenant: Any) -> None:
    owner, cert, _ = tenant
    stack.services.cluster = lambda c: _report(c.lease_id)
    answer = stack.call("GET", "/lease/50/2/3/status", cert=cert)
    assert answer.status == 200, answer.raw
    assert answer.body == {
        "services": {
            "web": {
                "name": "web", "available": 1, "total": 1, "uris": ["a.example"],
                "observed_generation": 0, "replicas": 0, "updated_replicas": 0,
                "ready_replicas": 0, "available_replicas": 0,
                "restarts": 0, "last_termination": None,
            }
        },
        "forwarded_ports": {
            "web": [{"port": 80, "externalPort": 31000, "proto": "TCP", "name": "web"}]
        },
        "ips": {"web": [{"Port": 80, "ExternalPort": 80, "Protocol": "TCP", "IP": "1.2.3.4"}]},
    }  # fmt: skip
    [command] = stack.services.seen
    assert isinstance(command, GetLeaseStatus)
    assert str(command.lease_id) == f"{owner}/50/2/3/{stack.provider}"
    assert command.service == ""


def test_service_status_is_the_one_service(stack: Any, tenant: Any) -> None:
    _, cert, _ = tenant
    stack.services.cluster = lambda c: _report(c.lease_id)
    answer = stack.call("GET", "/lease/51/1/1/service/web/status", cert=cert)
    assert (answer.status, answer.body["name"], answer.body["uris"]) == (200, "web", ["a.example"])
    assert stack.services.seen[0].service == "web"
    missing = stack.call("GET", "/lease/51/1/1/service/db/status", cert=cert)
    assert missing.status == 404
    assert "db" in missing.message


def test_lease_manifest_is_the_group(stack: Any, tenant: Any) -> None:
    _, cert, _ = tenant
    stack.services.cluster = lambda c: LeaseManifestReport(
        lease_id=c.lease_id, version=HASH, group=GROUP
    )
    answer = stack.call("GET", "/lease/52/1/1/manifest", cert=cert)
    assert answer.status == 200
    assert answer.body == GROUP.go_dict()
    assert isinstance(stack.services.seen[0], GetLeaseManifest)


def test_lease_query_failures_have_their_status(stack: Any, tenant: Any) -> None:
    _, cert, _ = tenant
    for code, status in [("not_found", 404), ("unavailable", 503), ("internal", 500)]:
        stack.services.cluster = lambda c, code=code: LeaseQueryFailed(
            lease_id=c.lease_id, code=code, message=f"it is {code}"
        )
        for path in ("status", "manifest", "service/web/status"):
            answer = stack.call("GET", f"/lease/53/1/1/{path}", cert=cert)
            assert (answer.status, answer.message) == (status, f"it is {code}"), path
    stack.services.cluster = lambda c: None
    silent = stack.call("GET", "/lease/53/1/1/status", cert=cert)
    assert silent.status == 503
    assert "cluster service did not answer" in silent.message
    bad = stack.call("GET", "/lease/53/0/1/status", cert=cert)
    assert (bad.status, bad.message.startswith("gseq:")) == (400, True)


# -- status, version, metrics -------------------------------------------------------------


async def test_status_aggregates_the_retained_statuses(stack: Any) -> None:
    bus = Bus.connect(RedisSettings(url=stack.redis_url), producer="test")
    try:
        node = ResourceTotals(cpu=4000, gpu=1, memory=8 << 30, storage_ephemeral=100 << 30)
        cluster = ClusterStatus(
            leases=2,
            nodes=[NodeTotals(name="node-1", allocatable=node, available=node)],
            storage={"beta2": 1 << 40},
            active=[ResourceTotals(cpu=500, memory=1 << 30, storage={"beta2": 1 << 30})],
            pending=[ResourceTotals(cpu=100)],
            public_hostname="ingress.example.com",
            kube_version={"major": "1", "minor": "31", "gitVersion": "v1.31.0"},
        )
        await bus.publish_status("cluster", cluster)
        await bus.publish_status("bidengine", BidEngineStatus(orders=3))
        await bus.publish_status("chain", ChainStatus(height=5, node_height=5, provider="x"))
        old = bus.envelope(ManifestStatus(deployments=9))
        stale = old.model_copy(update={"time": old.time - dt.timedelta(minutes=5)})
        await bus.backend.xadd(status_stream("manifest"), stale.to_fields())

        def latest() -> Any:  # the gateway follows the status streams: soon, not at once
            return stack.call("GET", "/status").body

        body = eventually_sync(
            latest, what="the new statuses", until=lambda b: b["bidengine"] == {"orders": 3}
        )
        metric = {"cpu": 4000, "gpu": 1, "memory": 8 << 30, "storage_ephemeral": 100 << 30}
        assert body == {
            "cluster": {
                "leases": 2,
                "inventory": {
                    "active": [
                        {"cpu": 500, "gpu": 0, "memory": 1 << 30, "storage_ephemeral": 0,
                         "storage": {"beta2": 1 << 30}},
                    ],
                    "pending": [{"cpu": 100, "gpu": 0, "memory": 0, "storage_ephemeral": 0}],
                    "available": {
                        "nodes": [{"name": "node-1", "allocatable": metric, "available": metric}],
                        "storage": [{"class": "beta2", "size": 1 << 40}],
                    },
                },
            },
            "bidengine": {"orders": 3},
            "manifest": None,
            "cluster_public_hostname": "ingress.example.com",
            "address": stack.provider,
            "errors": [body["errors"][0]],
        }  # fmt: skip
        assert body["errors"][0].startswith("manifest: last status is 300s old")
        kube = stack.call("GET", "/version").body["kube"]
        assert kube == {"major": "1", "minor": "31", "gitVersion": "v1.31.0"}
    finally:
        await bus.close()


def test_metrics_are_on_the_health_port(stack: Any, tenant: Any) -> None:
    stack.call("GET", "/address")
    status, text = http_status(f"{stack.gateway.health_url}/metrics")
    assert status == 200
    assert isinstance(text, str)
    assert (
        'provider_gateway_http_requests_total{handler="/address",method="GET",status="200"}' in text
    )
    assert "provider_gateway_trusted_certificates " in text
    assert "provider_gateway_status_served_total " in text
    assert 'provider_gateway_auth_total{result="ok"}' in text
    assert stack.call("GET", "/metrics").status == 404  # not on the tenant-facing port
