"""The public certificate from ACME, for real: Let's Encrypt's test CA ``pebble`` on loopback
(its validation authority resolving the test hostname to 127.0.0.1 through
``pebble-challtestsrv``'s DNS), the gateway as a process on the devnet, and TLS clients that
trust pebble's root and ask for the public hostname.

Pebble issues certificates valid a few seconds here, so the renewal at two thirds of the
lifetime comes within the test, while a client keeps calling the gateway.
"""

from __future__ import annotations

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
from akdevnet.testing import DevnetProcess
from akgateway.testing import GatewayProcess
from akservice.testing import ServiceProcess, eventually_sync, free_port

HOST = "gateway.provider.test"
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

    def start(self, validity_s: int) -> None:
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
                "externalAccountBindingRequired": False,
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


def call(port: int, context: ssl.SSLContext, server_name: str | None = HOST) -> Call:
    """``GET /version`` on 127.0.0.1:``port`` asking for ``server_name`` (SNI); the status
    and the serial of the certificate the gateway served."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
        assert der is not None
        tls.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head = b""
        while b"\r\n" not in head:
            chunk = tls.recv(4096)
            if not chunk:
                break
            head += chunk
    status = int(head.split(b" ", 2)[1])
    return Call(status, x509.load_der_x509_certificate(der).serial_number)


@dataclass
class Stack:
    redis_url: str
    devnet: DevnetProcess
    provider: str
    tmp: Path

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


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Redis and the devnet: what the gateway needs to start (it reads the on-chain
    certificates before it serves)."""
    tmp = tmp_path_factory.mktemp("acme", numbered=True)
    with EmbeddedRedis(tmp / "redis", aof=False) as redis:
        devnet = DevnetProcess(tmp / "devnet")
        devnet.start()
        try:
            yield Stack(redis.url, devnet, devnet.signer("provider").address, tmp)
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
    acme.start(validity_s=12)
    with stack.gateway("http01", **acme_env(acme)) as gateway:
        client = acme.client()
        first = served(gateway, client)
        assert first.status == 200

        calls: list[Call] = []
        failures: list[str] = []
        stop = threading.Event()

        def keep_calling() -> None:
            while not stop.is_set():
                try:
                    calls.append(call(gateway.port, client))
                except (ssl.SSLError, OSError) as exc:
                    failures.append(repr(exc))

        caller = threading.Thread(target=keep_calling)
        caller.start()
        try:
            eventually_sync(
                lambda: any(c.serial != first.serial for c in calls),
                timeout_s=40,
                what="a renewed certificate",
            )
        finally:
            stop.set()
            caller.join()
        assert failures == []
        assert {c.status for c in calls} == {200}
        assert calls[-1].serial != first.serial
        assert len(calls) > 20

        # a client asking for no name (an IP address) or another name gets the on-chain one
        anyone = ssl.create_default_context()
        anyone.check_hostname, anyone.verify_mode = False, ssl.CERT_NONE
        for name in (None, "other.provider.test"):
            with (
                socket.create_connection(("127.0.0.1", gateway.port)) as raw,
                anyone.wrap_socket(raw, server_hostname=name) as tls,
            ):
                der = tls.getpeercert(binary_form=True)
            assert der is not None
            subject = x509.load_der_x509_certificate(der).subject
            assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == stack.provider

        folder = gateway.tls_dir / "acme"
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        for name in ("account.key", "account.json", "cert.pem", "key.pem"):
            assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
    assert "Traceback" not in gateway.log()


def test_tls_alpn01_certificate_and_a_restart_serves_it_again_without_an_order(
    stack: Stack, acme: ACME
) -> None:
    acme.start(validity_s=3600)
    gateway = stack.gateway("alpn", **acme_env(acme, "tls-alpn-01"))
    with gateway:
        first = served(gateway, acme.client())
    assert gateway.log().count("ordering a certificate") == 1
    with gateway:
        again = call(gateway.port, acme.client())  # at once: read from its files at start
    assert again.serial == first.serial
    assert gateway.log().count("ordering a certificate") == 1
    assert "Traceback" not in gateway.log()


def test_dns01_through_the_operators_hook(stack: Stack, acme: ACME, tmp_path: Path) -> None:
    acme.start(validity_s=3600)
    journal = tmp_path / "hook.log"
    hook = tmp_path / "dns-hook"
    hook.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, urllib.request\n"
        "action, record, value = sys.argv[1:4]\n"
        f"open({str(journal)!r}, 'a').write(' '.join([action, record, os.environ['ACME_DOMAIN']]) + '\\n')\n"
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
        f"add _acme-challenge.{HOST} {HOST}",
        f"remove _acme-challenge.{HOST} {HOST}",
    ]
