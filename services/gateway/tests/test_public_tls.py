"""The public certificate beside the on-chain one, with the gateway as a process on the
devnet: configured files chosen by SNI and swapped when they change, and ACME for real,
against Let's Encrypt's test CA ``pebble`` on loopback (its validation authority resolving
the test hostname to 127.0.0.1 through ``pebble-challtestsrv``'s DNS), with TLS clients that
trust pebble's root and ask for the public hostname.

Pebble issues certificates valid for seconds here, so the renewal at two thirds of the
lifetime comes within the test, while a client keeps calling the gateway.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import json
import os
import shutil
import socket
import ssl
import stat
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from akbus.embedded import EmbeddedRedis
from akchain import msgs
from akdevnet.testing import DevnetProcess
from akgateway.adapters.acme import AcmeConfig, AcmeIssuer
from akgateway.adapters.acme_solvers import HTTPChallenges
from akgateway.adapters.public_tls import PublicTLS
from akgateway.domain.certificates import common_name
from akgateway.errors import AcmeError
from akgateway.testing import (
    GatewayProcess,
    MadeCertificate,
    client_context,
    make_certificate,
)
from akservice.testing import ServiceProcess, eventually_sync, free_port

HOST = "gateway.provider.test"
Pems = tuple[bytes, bytes]
PEBBLE = shutil.which("pebble")
CHALLTESTSRV = shutil.which("pebble-challtestsrv")


def self_signed(name: str) -> tuple[bytes, bytes]:
    """A certificate for ``name`` and 127.0.0.1 (pebble's own HTTPS) and its key, PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@dataclass
class ACME:
    """pebble-challtestsrv (DNS) and pebble, on loopback ports; pebble validates HTTP-01 on
    ``http_port`` and TLS-ALPN-01 on ``tls_port`` of the names it resolves to 127.0.0.1."""

    folder: Path
    http_port: int = field(default_factory=free_port)
    tls_port: int = field(default_factory=free_port)
    dns_port: int = field(default_factory=free_port)
    dns_admin_port: int = field(default_factory=free_port)
    port: int = field(default_factory=free_port)
    admin_port: int = field(default_factory=free_port)
    processes: list[ServiceProcess] = field(default_factory=list)

    @property
    def directory(self) -> str:
        return f"https://127.0.0.1:{self.port}/dir"

    @property
    def ca_file(self) -> Path:
        return self.folder / "pebble-https.pem"

    def start(self, validity_s: int, eab: dict[str, str] | None = None) -> None:
        """Pebble issuing certificates valid ``validity_s``; ``eab``: the external account
        binding keys it then requires (kid → HMAC key, base64url)."""
        assert PEBBLE and CHALLTESTSRV, "pebble is not installed: Debian's package `pebble`"
        self.folder.mkdir(parents=True, exist_ok=True)
        cert, key = self_signed("localhost")
        self.ca_file.write_bytes(cert)
        (self.folder / "pebble-https.key").write_bytes(key)
        config = {
            "pebble": {
                "listenAddress": f"127.0.0.1:{self.port}",
                "managementListenAddress": f"127.0.0.1:{self.admin_port}",
                "certificate": str(self.ca_file),
                "privateKey": str(self.folder / "pebble-https.key"),
                "httpPort": self.http_port,
                "tlsPort": self.tls_port,
                "ocspResponderURL": "",
                "externalAccountBindingRequired": bool(eab),
                "externalAccountMACKeys": eab or {},
                "certificateValidityPeriod": validity_s,
            }
        }
        (self.folder / "pebble.json").write_text(json.dumps(config))
        dns = ServiceProcess(
            [
                str(CHALLTESTSRV),
                "-dns01", f"127.0.0.1:{self.dns_port}",
                "-management", f"127.0.0.1:{self.dns_admin_port}",
                "-http01", "", "-https01", "", "-tlsalpn01", "",
                "-defaultIPv6", "",
            ],
            log_path=self.folder / "challtestsrv.log",
            ready=lambda: self._answers(self.dns_admin_port, tls=False),
            name="pebble-challtestsrv",
        )  # fmt: skip
        pebble = ServiceProcess(
            [
                str(PEBBLE),
                "-config", str(self.folder / "pebble.json"),
                "-dnsserver", f"127.0.0.1:{self.dns_port}",
            ],
            log_path=self.folder / "pebble.log",
            ready=lambda: self._answers(self.port, tls=True),
            env={
                **os.environ,
                "PEBBLE_VA_NOSLEEP": "1",
                "PEBBLE_WFE_NONCEREJECT": "0",
                "PEBBLE_AUTHZREUSE": "0",  # every order proves the names again
            },
            name="pebble",
        )  # fmt: skip
        for process in (dns, pebble):
            process.start(timeout=20)
            self.processes.append(process)

    def _answers(self, port: int, *, tls: bool) -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()

    def _admin(self, path: str) -> bytes:
        context = ssl.create_default_context(cafile=self.ca_file)
        url = f"https://127.0.0.1:{self.admin_port}{path}"
        with urllib.request.urlopen(url, context=context, timeout=10) as answer:
            data: bytes = answer.read()
        return data

    def root(self) -> bytes:
        """Pebble's root certificate (made at its start), from its management interface."""
        return self._admin("/roots/0")

    def client(self) -> ssl.SSLContext:
        """A TLS client trusting pebble's root alone, checking the hostname."""
        return ssl.create_default_context(cadata=self.root().decode())


@dataclass
class Call:
    status: int
    serial: int


def call(
    port: int,
    context: ssl.SSLContext,
    server_name: str | None = HOST,
    path: str = "/version",
    headers: str = "",
) -> Call:
    """``GET path`` on 127.0.0.1:``port`` asking for ``server_name`` (SNI); the status and
    the serial of the certificate the gateway served."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
        assert der is not None
        request = f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"
        tls.sendall(request.encode())
        head = b""
        while b"\r\n" not in head:
            chunk = tls.recv(4096)
            if not chunk:
                break
            head += chunk
    status = int(head.split(b" ", 2)[1])
    return Call(status, x509.load_der_x509_certificate(der).serial_number)


class Caller:
    """A client calling the gateway over and over in a thread while the block runs."""

    def __init__(self, port: int, context: ssl.SSLContext) -> None:
        self.port, self.context = port, context
        self.calls: list[Call] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.calls.append(call(self.port, self.context))
            except (ssl.SSLError, OSError) as exc:
                self.failures.append(repr(exc))

    def serials(self) -> set[int]:
        return {c.serial for c in self.calls}

    def __enter__(self) -> Caller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Stack:
    redis_url: str
    devnet: DevnetProcess
    provider: str
    tmp: Path
    tenant: MadeCertificate  # tenant-1's client certificate, on chain

    def gateway(self, name: str, **env: str) -> GatewayProcess:
        gateway = GatewayProcess(
            redis_url=self.redis_url,
            api=self.devnet.lcd_url,
            tls_dir=self.tmp / name / "tls",
            log_path=self.tmp / name / "gateway.log",
            extra_env={"AP_PROVIDER_ADDRESS": self.provider, **env},
        )
        made = gateway.cert("generate", HOST)
        assert made.returncode == 0, made.stderr
        return gateway


async def publish(devnet: DevnetProcess, made: MadeCertificate) -> None:
    async with devnet.clients() as chain:
        wallet = chain.wallet("tenant-1")
        await wallet.send(msgs.create_certificate(wallet.address, made.cert_pem, made.pubkey_pem))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Redis and the devnet: what the gateway needs to start (it reads the on-chain
    certificates before it serves)."""
    tmp = tmp_path_factory.mktemp("acme", numbered=True)
    with EmbeddedRedis(tmp / "redis", aof=False) as redis:
        devnet = DevnetProcess(tmp / "devnet")
        devnet.start()
        try:
            tenant = make_certificate(devnet.signer("tenant-1").address)
            asyncio.run(publish(devnet, tenant))
            yield Stack(redis.url, devnet, devnet.signer("provider").address, tmp, tenant)
        finally:
            devnet.stop()


@pytest.fixture
def acme(tmp_path: Path) -> Iterator[ACME]:
    found = ACME(tmp_path / "pebble")
    try:
        yield found
    finally:
        found.stop()


def acme_env(acme: ACME, challenge: str = "http-01", **more: str) -> dict[str, str]:
    return {
        "AP_GATEWAY_TLS_HOSTNAMES": HOST,
        "AP_GATEWAY_ACME_DIRECTORY": acme.directory,
        "AP_GATEWAY_ACME_CA_FILE": str(acme.ca_file),
        "AP_GATEWAY_ACME_EMAIL": "operator@provider.test",
        "AP_GATEWAY_ACME_CHALLENGE": challenge,
        "AP_GATEWAY_ACME_HTTP_LISTEN": f"127.0.0.1:{acme.http_port}",
        "AP_GATEWAY_ACME_TLS_LISTEN": f"127.0.0.1:{acme.tls_port}",
        "AP_GATEWAY_ACME_RETRY_INTERVAL": "1s",
        "AP_GATEWAY_TLS_RELOAD_INTERVAL": "200ms",
        **more,
    }


def served_to(port: int, server_name: str | None, cert: Pems | None = None) -> x509.Certificate:
    """The certificate the gateway serves a client asking for ``server_name``."""
    context = client_context(*cert) if cert else client_context()
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def served(gateway: GatewayProcess, context: ssl.SSLContext, timeout: float = 30.0) -> Call:
    """The first answer the gateway gives a client trusting pebble (once it has a
    certificate from it)."""

    def attempt() -> Call | None:
        try:
            return call(gateway.port, context)
        except (ssl.SSLError, OSError):
            return None

    return eventually_sync(attempt, timeout_s=timeout, what="the gateway to serve pebble's cert")


def test_http01_certificate_obtained_served_and_renewed_without_a_failed_request(
    stack: Stack, acme: ACME
) -> None:
    acme.start(validity_s=24)  # renewed after 16 s: an order takes 2-3 s, with room for a slow one
    with stack.gateway("http01", **acme_env(acme)) as gateway:
        client = acme.client()
        first = served(gateway, client)
        assert first.status == 200
        with Caller(gateway.port, client) as caller:
            eventually_sync(
                lambda: len(caller.serials() - {first.serial}) > 0,
                timeout_s=40,
                what="a renewed certificate",
            )
        assert caller.failures == []
        assert {c.status for c in caller.calls} == {200}
        assert caller.calls[-1].serial != first.serial
        assert len(caller.calls) > 20
        for name in (None, "other.provider.test"):  # no name (an IP address), another name
            assert common_name(served_to(gateway.port, name)) == stack.provider

        folder = gateway.tls_dir / "acme"
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        for name in ("account.key", "account.json", "cert.pem", "key.pem"):
            assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
    assert "Traceback" not in gateway.log()


def test_tls_alpn01_with_account_binding_and_a_restart_serves_it_again_without_an_order(
    stack: Stack, acme: ACME
) -> None:
    hmac = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"  # pebble's example
    acme.start(validity_s=3600, eab={"kid-1": hmac})
    env = acme_env(
        acme, "tls-alpn-01", AP_GATEWAY_ACME_EAB_KID="kid-1", AP_GATEWAY_ACME_EAB_HMAC=hmac
    )
    gateway = stack.gateway("alpn", **env)
    with gateway:
        first = served(gateway, acme.client())
    assert gateway.log().count("ordering a certificate") == 1
    with gateway:
        again = call(gateway.port, acme.client())  # at once: read from its files at start
    assert again.serial == first.serial
    assert gateway.log().count("ordering a certificate") == 1
    assert "Traceback" not in gateway.log()


def test_dns01_through_the_operators_hook_after_it_failed_once(
    stack: Stack, acme: ACME, tmp_path: Path
) -> None:
    acme.start(validity_s=3600)
    journal = tmp_path / "hook.log"
    hook = tmp_path / "dns-hook"
    hook.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, urllib.request\n"
        "action, record, value = sys.argv[1:4]\n"
        f"journal = {str(journal)!r}\n"
        "first = not os.path.exists(journal)\n"
        "open(journal, 'a').write(' '.join([action, record, os.environ['ACME_DOMAIN']]) + '\\n')\n"
        "if first:\n"
        "    sys.exit('the zone is not found')\n"
        "assert not any(name.startswith('AP_') for name in os.environ)\n"
        "path = '/set-txt' if action == 'add' else '/clear-txt'\n"
        "body = json.dumps({'host': record + '.', 'value': value}).encode()\n"
        f"urllib.request.urlopen('http://127.0.0.1:{acme.dns_admin_port}' + path, body)\n"
    )
    hook.chmod(0o700)
    env = acme_env(
        acme, "dns-01", AP_GATEWAY_ACME_DNS_HOOK=str(hook), AP_GATEWAY_ACME_DNS_WAIT="0s"
    )
    with stack.gateway("dns", **env) as gateway:
        assert served(gateway, acme.client()).status == 200
    assert journal.read_text().splitlines() == [
        f"add _acme-challenge.{HOST} {HOST}",  # refused: the order fails, tried again
        f"add _acme-challenge.{HOST} {HOST}",
        f"remove _acme-challenge.{HOST} {HOST}",
    ]
    warnings = [
        json.loads(line)["event"]
        for line in gateway.log().splitlines()
        if line.startswith("{") and json.loads(line).get("level") == "warning"
        and "ACME" in line
    ]  # fmt: skip
    assert warnings == [
        f"no certificate from the ACME CA: the DNS hook `{hook} add _acme-challenge.{HOST}` "
        "failed (exit 1): the zone is not found (next try in 1s)"
    ]
    assert "Traceback" not in gateway.log()


# -- configured files -----------------------------------------------------------------------


@dataclass
class Issuer:
    """A CA of the test's own, issuing certificates for the public hostname."""

    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )

    @property
    def cert(self) -> x509.Certificate:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test Public CA")])
        now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(1)
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    def issue(self, *names: str) -> tuple[bytes, bytes, int]:
        """A chain (leaf, CA) for ``names``, its key, and its serial."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        serial = x509.random_serial_number()
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=90))
            .add_extension(
                x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        chain = leaf.public_bytes(serialization.Encoding.PEM) + self.cert.public_bytes(
            serialization.Encoding.PEM
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return chain, key_pem, serial

    def client(self) -> ssl.SSLContext:
        return ssl.create_default_context(
            cadata=self.cert.public_bytes(serialization.Encoding.PEM).decode()
        )


def test_configured_certificate_chosen_by_name_and_replaced_without_a_failed_request(
    stack: Stack, tmp_path: Path
) -> None:
    issuer = Issuer()
    cert_file, key_file = tmp_path / "public.crt", tmp_path / "public.key"
    chain, key, first = issuer.issue(HOST, "*.api.provider.test")
    cert_file.write_bytes(chain)
    key_file.write_bytes(key)
    env = {
        "AP_GATEWAY_TLS_CERT": str(cert_file),
        "AP_GATEWAY_TLS_KEY": str(key_file),
        "AP_GATEWAY_TLS_HOSTNAMES": f"{HOST},*.api.provider.test",
        "AP_GATEWAY_TLS_RELOAD_INTERVAL": "100ms",
    }
    with stack.gateway("files", **env) as gateway:
        client = issuer.client()
        assert call(gateway.port, client) == Call(200, first)
        assert call(gateway.port, client, "eu.api.provider.test") == Call(200, first)
        # no name (an IP address), another name, chain-sdk's name for its mTLS calls
        for name in (None, "other.provider.test", "a.b.api.provider.test", f"mtls.{HOST}"):
            assert common_name(served_to(gateway.port, name)) == stack.provider
        grpc = issuer.client()  # gRPC's listener too, with its ALPN
        grpc.set_alpn_protocols(["h2"])
        with (
            socket.create_connection(("127.0.0.1", gateway.grpc_port)) as raw,
            grpc.wrap_socket(raw, server_hostname=HOST) as tls,
        ):
            assert tls.selected_alpn_protocol() == "h2"
            der = tls.getpeercert(binary_form=True)
            assert der is not None
            assert x509.load_der_x509_certificate(der).serial_number == first

        # an mTLS client asking for the public name keeps its identity: its certificate is
        # requested there too, and reaches authentication (with a token as well: ambiguous)
        tenant = (stack.tenant.cert_pem, stack.tenant.key_pem)
        assert served_to(gateway.port, HOST, tenant).serial_number == first
        mtls = client_context(*tenant)
        bearer = "Authorization: Bearer x\r\n"
        assert call(gateway.port, mtls, HOST, "/lease/1/1/1/status", bearer).status == 400
        assert (
            call(gateway.port, client_context(), HOST, "/lease/1/1/1/status", bearer).status == 401
        )

        with Caller(gateway.port, client) as caller:
            chain, key, second = issuer.issue(HOST, "*.api.provider.test")
            key_file.write_bytes(key)  # as `cp` does it: one file, then the other
            cert_file.write_bytes(chain)
            eventually_sync(lambda: second in caller.serials(), timeout_s=20, what="the swap")
        assert caller.failures == []
        assert {c.status for c in caller.calls} == {200}

        cert_file.write_bytes(b"not a certificate")  # broken: the one served stays
        eventually_sync(
            lambda: "the public certificate was not replaced" in gateway.log(),
            timeout_s=20,
            what="a warning",
        )
        assert call(gateway.port, client) == Call(200, second)
    assert gateway.log().count(f"{cert_file}: no PEM certificate in it") == 1
    assert "Traceback" not in gateway.log()


@pytest.mark.parametrize("missing", ["certificate", "hook"])
def test_what_is_missing_at_start_is_one_line(stack: Stack, tmp_path: Path, missing: str) -> None:
    if missing == "certificate":
        env = {
            "AP_GATEWAY_TLS_CERT": str(tmp_path / "none.crt"),
            "AP_GATEWAY_TLS_KEY": str(tmp_path / "none.key"),
            "AP_GATEWAY_TLS_HOSTNAMES": HOST,
        }
        expected = (
            f"no public certificate at {tmp_path / 'none.crt'} and {tmp_path / 'none.key'} "
            "(AP_GATEWAY_TLS_CERT, AP_GATEWAY_TLS_KEY)"
        )
    else:
        (tmp_path / "hook").write_text("#!/bin/sh\n")  # not executable
        env = {
            "AP_GATEWAY_ACME_DIRECTORY": "https://127.0.0.1:9/dir",
            "AP_GATEWAY_TLS_HOSTNAMES": HOST,
            "AP_GATEWAY_ACME_CHALLENGE": "dns-01",
            "AP_GATEWAY_ACME_DNS_HOOK": str(tmp_path / "hook"),
        }
        expected = f"AP_GATEWAY_ACME_DNS_HOOK={tmp_path / 'hook'}: not an executable file"
    gateway = stack.gateway(f"missing-{missing}", **env)
    gateway.start(wait_ready=False)
    assert gateway.process is not None
    assert gateway.process.wait(60) == 1
    errors = [
        json.loads(line)["event"]
        for line in gateway.log().splitlines()
        if line.startswith("{") and json.loads(line).get("level") == "error"
    ]
    assert errors == [expected]
    assert "Traceback" not in gateway.log()


# -- ACME failures, each one line -----------------------------------------------------------


def test_acme_failures_are_one_line_each(acme: ACME, tmp_path: Path) -> None:
    """A CA that cannot reach the challenge, a directory that refuses connections, a URL
    that is not a directory: :class:`AcmeError` with a sentence, never the library's dump."""
    acme.start(validity_s=3600)
    public = PublicTLS([HOST], tmp_path / "cert.pem", tmp_path / "key.pem")

    def failure(directory: str) -> str:
        config = AcmeConfig(
            directory=directory, hostnames=(HOST,), folder=tmp_path / "acme", ca_file=acme.ca_file
        )
        with pytest.raises(AcmeError) as raised:
            AcmeIssuer(config, public, http=HTTPChallenges()).obtain()  # nothing serves it
        return str(raised.value)

    unverified = failure(acme.directory)
    assert unverified.startswith(f"the CA could not verify {HOST}: http-01: ")
    assert "\n" not in unverified
    assert failure(f"http://127.0.0.1:{free_port()}/dir").endswith(": connection refused")
    assert failure(f"https://127.0.0.1:{acme.admin_port}/nothing") == (
        f"unexpected answer from the ACME directory https://127.0.0.1:{acme.admin_port}"
        "/nothing: HTTP 404"
    )
    untrusted = AcmeConfig(directory=acme.directory, hostnames=(HOST,), folder=tmp_path / "b")
    with pytest.raises(
        AcmeError, match=r"its TLS certificate is not trusted \(AP_GATEWAY_ACME_CA_FILE\)$"
    ):
        AcmeIssuer(untrusted, public, http=HTTPChallenges()).obtain()
