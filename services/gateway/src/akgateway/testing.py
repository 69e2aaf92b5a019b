"""Test helpers: the gateway as a subprocess, stand-ins for the services it asks, a tenant's
HTTPS calls and client certificates made to measure.

    gateway = GatewayProcess(redis_url=..., api=devnet.lcd_url, tls_dir=tmp / "tls",
                             log_path=tmp / "gateway.log")
    gateway.cert("generate"); gateway.cert("publish")   # needs the chain relay running
    with gateway:
        gateway.url                                      # https://127.0.0.1:<port>

Timings are fast: certificates re-read every 200 ms, cached 200 ms, bus requests answered
within 2 s.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import http.client
import json
import ssl
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from akbus import Bus, Message, RedisSettings, Subscriber
from akbus.testing import FAST_SETTINGS
from akgateway import certcli
from akgateway.domain.certificates import SERVER_CERT_DAYS, chain_pubkey_pem
from akgateway.settings import GatewaySettings
from akservice.settings import env_name
from akservice.testing import RuntimeProcess, free_port
from aktypes.events import (
    GetLeaseManifest,
    GetLeaseStatus,
    LeaseQueryFailed,
    ManifestAccepted,
    Payload,
    SubmitManifest,
)
from aktypes.events.streams import CLUSTER_COMMANDS, MANIFEST_COMMANDS


class GatewayProcess(RuntimeProcess):
    def __init__(
        self,
        *,
        redis_url: str,
        api: str,
        tls_dir: Path,
        log_path: Path,
        port: int | None = None,
        extra_env: dict[str, str] | None = None,
        dashboard_port: int | None = None,
        dashboard_token: str = "dashboard-test-token",  # noqa: S107 - a test's
        grpc_port: int | None = None,
    ) -> None:
        self.port = port or free_port()
        self.dashboard_port = dashboard_port or free_port()
        self.grpc_port = grpc_port or free_port()
        self.dashboard_token = dashboard_token
        self.tls_dir = tls_dir
        env = {
            "AP_API": api,
            "AP_GATEWAY_LISTEN": f"127.0.0.1:{self.port}",
            "AP_GATEWAY_DASHBOARD_LISTEN": f"127.0.0.1:{self.dashboard_port}",
            "AP_GATEWAY_DASHBOARD_TOKEN": self.dashboard_token,
            "AP_GATEWAY_GRPC_LISTEN": f"127.0.0.1:{self.grpc_port}",
            "AP_GATEWAY_TLS_DIR": str(tls_dir),
            "AP_GATEWAY_CERT_SYNC_INTERVAL": "200ms",
            "AP_GATEWAY_CERT_CACHE_TTL": "200ms",
            "AP_GATEWAY_REQUEST_TIMEOUT": "2s",
            "AP_GATEWAY_SUBMIT_TIMEOUT": "2s",
            "AKBUS_DRAIN_TIMEOUT_S": "3",
            **(extra_env or {}),
        }
        super().__init__("akgateway", "gateway", redis_url=redis_url, log_path=log_path, env=env)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def server_certificate(self) -> bytes:
        """The provider's certificate (without its key) from the TLS folder, PEM: what a
        client trusts the gateway with."""
        [pem] = self.tls_dir.glob("*.pem")
        text = pem.read_bytes()
        start = text.index(b"-----BEGIN CERTIFICATE-----")
        end = text.index(b"-----END CERTIFICATE-----") + len(b"-----END CERTIFICATE-----")
        return text[start:end] + b"\n"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def certify(self, timeout: float = 60.0) -> None:
        """What ``cert generate`` then ``cert publish`` do, with this gateway's settings, in
        this process (the commands themselves are tested as commands): the provider's
        certificate made and on chain, through the chain relay."""
        names = {field: env_name(GatewaySettings, field) for field in GatewaySettings.model_fields}
        given = {field: self.env[name] for field, name in names.items() if name in self.env}
        settings = GatewaySettings.model_validate(given)  # these values alone, not os.environ

        async def run() -> None:
            bus = Bus.connect(RedisSettings(url=self.env["REDIS_URL"]), producer="test-cert")
            try:
                await certcli.generate(settings, bus, [], force=False, days=SERVER_CERT_DAYS)
                await certcli.publish(settings, bus, timeout=timeout)
            finally:
                await bus.close()

        with concurrent.futures.ThreadPoolExecutor(1) as thread:  # callers may be in a loop
            thread.submit(asyncio.run, run()).result()

    def cert(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """``python -m akgateway cert ARGS`` with this gateway's settings."""
        return subprocess.run(  # noqa: S603 - the test's own command
            [sys.executable, "-m", "akgateway", "cert", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


# -- the manifest and cluster services, played by a test ---------------------------------


def _accept(command: SubmitManifest) -> Payload | None:
    return ManifestAccepted(deployment_id=command.deployment_id, version="ab" * 32)


def _not_found(command: Any) -> Payload | None:
    return LeaseQueryFailed(lease_id=command.lease_id, code="not_found", message="no such lease")


@dataclass
class StandIns:
    """The manifest service's and the cluster service's side of the gateway's requests, in
    a thread of the test process: ``SubmitManifest`` (group ``manifest``) and the lease
    queries (group ``cluster``) are answered with what ``manifest``/``cluster`` return
    (``None``: no answer at all); every command is kept in ``seen``."""

    redis_url: str
    manifest: Callable[[SubmitManifest], Payload | None] = _accept
    cluster: Callable[[Any], Payload | None] = _not_found
    seen: list[Payload] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._subscribers: list[Subscriber] = []
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(15)

    def stop(self) -> None:
        if not self._thread.is_alive():  # never started: only the loop to close
            self._loop.close()
            return
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(15)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def reset(self) -> None:
        self.manifest, self.cluster = _accept, _not_found
        self.seen.clear()

    async def _start(self) -> None:
        self.bus = Bus.connect(RedisSettings(url=self.redis_url), producer="stand-ins")
        manifest = self.bus.subscriber(
            MANIFEST_COMMANDS, group="manifest", consumer="stand-in", settings=FAST_SETTINGS
        )
        manifest.add(SubmitManifest, self._on_manifest)
        cluster = self.bus.subscriber(
            CLUSTER_COMMANDS, group="cluster", consumer="stand-in", settings=FAST_SETTINGS
        )
        cluster.add(GetLeaseStatus, self._on_cluster)
        cluster.add(GetLeaseManifest, self._on_cluster)
        self._subscribers = [manifest, cluster]
        self._tasks = [asyncio.create_task(s.run()) for s in self._subscribers]
        for sub in self._subscribers:
            await asyncio.wait_for(sub.ready.wait(), 10)

    async def _stop(self) -> None:
        for sub in self._subscribers:
            await sub.stop()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.bus.close()

    async def _on_manifest(self, msg: Message[SubmitManifest]) -> None:
        self.seen.append(msg.payload)
        reply = self.manifest(msg.payload)
        if reply is not None:
            await msg.reply(reply)

    async def _on_cluster(self, msg: Message[Any]) -> None:
        self.seen.append(msg.payload)
        reply = self.cluster(msg.payload)
        if reply is not None:
            await msg.reply(reply)


# -- HTTPS as a tenant --------------------------------------------------------------------


def client_context(
    cert_pem: bytes | None = None,
    key_pem: bytes | None = None,
    *,
    maximum: ssl.TLSVersion | None = None,
) -> ssl.SSLContext:
    """A client context that takes any server certificate, with a client certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if maximum is not None:
        context.maximum_version = maximum
    if cert_pem is not None and key_pem is not None:
        with tempfile.TemporaryDirectory() as tmp:
            cert_path, key_path = Path(tmp) / "client.crt", Path(tmp) / "client.key"
            cert_path.write_bytes(cert_pem)
            key_path.write_bytes(key_pem)
            context.load_cert_chain(cert_path, key_path)
    return context


@dataclass
class Answer:
    status: int
    body: Any  # parsed JSON, else text; None when empty
    raw: bytes
    headers: dict[str, str]

    @property
    def message(self) -> str:
        """The ``message`` of an error answer (which must be nothing else)."""
        if not isinstance(self.body, dict) or set(self.body) != {"message"}:
            raise AssertionError(f"not an error answer: {self.status} {self.raw!r}")
        return str(self.body["message"])


def https_call(
    port: int,
    method: str,
    path: str,
    *,
    context: ssl.SSLContext | None = None,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One HTTPS request to 127.0.0.1:``port`` (synchronous: for tests)."""
    conn = http.client.HTTPSConnection(
        "127.0.0.1", port, context=context or client_context(), timeout=15
    )
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
        found = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode(errors="replace")
    return Answer(response.status, parsed, raw, found)


# -- client certificates with chosen properties -----------------------------------------


@dataclass(frozen=True)
class MadeCertificate:
    cert_pem: bytes
    key_pem: bytes
    pubkey_pem: bytes  # EC PUBLIC KEY, as the chain wants it
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def serial(self) -> str:
        return str(self.cert.serial_number)


def make_certificate(
    owner: str,
    *,
    valid_from: dt.datetime | None = None,
    valid_until: dt.datetime | None = None,
    ca: bool = False,
    serial: int | None = None,
    issuer: MadeCertificate | None = None,
) -> MadeCertificate:
    """A client certificate for ``owner``, self-signed unless ``issuer`` signs it, with the
    dates, CA powers or serial a test needs."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, owner)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.cert.subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(serial or x509.random_serial_number())
        .not_valid_before(valid_from or now - dt.timedelta(minutes=5))
        .not_valid_after(valid_until or now + dt.timedelta(days=30))
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    )
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
    cert = builder.sign(issuer.key if issuer else key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return MadeCertificate(
        cert.public_bytes(serialization.Encoding.PEM), key_pem, chain_pubkey_pem(cert), cert, key
    )


def akash_sdk_certificate(owner: str, *, now: dt.datetime | None = None) -> MadeCertificate:
    """A client certificate exactly as Akash's SDKs generate it (chain-sdk's and akashjs's
    ``CertificateManager.generatePEM``, behind Akash Console): P-256, self-signed, common name
    ``owner``, serial = a millisecond timestamp × 1000, ``keyUsage`` (critical) =
    keyEncipherment + dataEncipherment only, ``extKeyUsage`` clientAuth, ``basicConstraints``
    CA:TRUE (critical), valid for a year from now; its PEM blocks (certificate, ``EC PUBLIC
    KEY``) with CRLF line endings."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = (now or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, owner)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(int(start.timestamp() * 1000) * 1000)
        .not_valid_before(start)
        .not_valid_after(start.replace(year=start.year + 1))
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=True,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )

    def crlf(pem: bytes) -> bytes:
        return pem.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")

    return MadeCertificate(
        crlf(cert.public_bytes(serialization.Encoding.PEM)),
        crlf(key_pem),
        crlf(chain_pubkey_pem(cert)),
        cert,
        key,
    )
