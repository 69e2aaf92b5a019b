"""The provider's certificate renews itself, against real processes: Redis, the devnet, the
chain relay and two gateway replicas (each with its own copy of the certificate's folder, as
pods mounting one Secret), while a tenant keeps calling both over mTLS.

A certificate made for one day with ``AP_GATEWAY_CERT_RENEW_BEFORE=48h`` is due at once. The
relay is down when the replicas start, so the renewal waits in ``publishing``, and one
replica is restarted then: when the relay comes back, exactly one new certificate is on
chain, both replicas serve it without a restart, and the old one is revoked after the
overlap, still valid on chain while the new one was first served.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import shutil
import ssl
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from akbus import Bus, RedisSettings
from akbus.embedded import EmbeddedRedis
from akchain import msgs
from akchain.versions import LCD_PATHS
from akchainsvc.testing import RelayProcess
from akdevnet.testing import TEST_PASSPHRASE, DevnetProcess
from akgateway.renewal import PREFIX
from akgateway.testing import GatewayProcess, StandIns, client_context, make_certificate
from akservice.testing import eventually_sync
from aktypes.events import BroadcastTx, TxCommitted, envelope_from_fields
from aktypes.events.streams import CHAIN_RESULTS, CHAIN_TX

RENEWAL_ENV = {
    "AP_GATEWAY_CERT_RENEW_BEFORE": "48h",
    "AP_GATEWAY_CERT_RENEW_OVERLAP": "4s",
    "AP_GATEWAY_CERT_RENEW_INTERVAL": "200ms",
}


def provider_certificates(lcd: str, owner: str) -> dict[str, str]:
    """Serial → state of every certificate ``owner`` has on chain."""
    url = f"{lcd}{LCD_PATHS['certificates']}?filter.owner={owner}&pagination.limit=100"
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - the devnet's
        body = json.load(answer)
    return {str(c["serial"]): c["certificate"]["state"] for c in body["certificates"]}


def served_serial(port: int, context: ssl.SSLContext) -> tuple[str, int]:
    """One tenant request over mTLS: the serial of the certificate the gateway served, and
    the answer's status."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=15)
    try:
        conn.request("GET", "/lease/1/1/1/status")
        response = conn.getresponse()
        response.read()
        assert isinstance(conn.sock, ssl.SSLSocket)
        der = conn.sock.getpeercert(binary_form=True)
        assert der is not None
    finally:
        conn.close()
    return str(x509.load_der_x509_certificate(der).serial_number), response.status


@dataclass
class Tenant:
    """A tenant calling the gateways in ``ports`` over and over, from a thread: every
    answer kept (port, served serial, status) and every failure."""

    context: ssl.SSLContext
    ports: list[int] = field(default_factory=list)
    answers: list[tuple[int, str, int]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            for port in list(self.ports):
                try:
                    serial, status = served_serial(port, self.context)
                except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
                    self.failures.append(f"{port}: {exc!r}")
                    continue
                self.answers.append((port, serial, status))

    def serials(self, port: int) -> list[str]:
        return [serial for p, serial, _ in self.answers if p == port]


def read_bus(redis_url: str, key: str) -> tuple[Any, list[BroadcastTx]]:
    """The renewal's record (parsed) and every ``BroadcastTx`` sent to the relay."""

    async def read() -> tuple[Any, list[BroadcastTx]]:
        bus = Bus.connect(RedisSettings(url=redis_url), producer="test-renewal")
        try:
            raw = await bus.backend.get(key)
            commands = [
                envelope_from_fields(e.fields).payload for e in await bus.backend.entries(CHAIN_TX)
            ]
        finally:
            await bus.close()
        return (json.loads(raw) if raw else None), [
            c for c in commands if isinstance(c, BroadcastTx)
        ]

    return asyncio.run(read())


def days_left(gateway: GatewayProcess) -> float:
    with urllib.request.urlopen(f"{gateway.health_url}/metrics", timeout=10) as answer:  # noqa: S310
        text = answer.read().decode()
    [line] = [
        line for line in text.splitlines()
        if line.startswith("provider_gateway_certificate_days_left ")
    ]  # fmt: skip
    return float(line.split()[1])


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[tuple[str, DevnetProcess, RelayProcess]]:
    with EmbeddedRedis(tmp_path / "redis", aof=False) as redis:
        devnet = DevnetProcess(tmp_path / "devnet")
        relay = RelayProcess(
            redis_url=redis.url,
            node=devnet.rpc_url,
            api=devnet.lcd_url,
            key_file=devnet.key_path("provider"),
            passphrase=TEST_PASSPHRASE,
            log_path=tmp_path / "relay.log",
        )
        try:
            devnet.start()
            relay.start()
            yield redis.url, devnet, relay
        finally:
            relay.stop()
            devnet.stop()


def test_the_certificate_is_renewed_once_served_by_every_replica_and_the_old_one_revoked(
    chain: tuple[str, DevnetProcess, RelayProcess], tmp_path: Path
) -> None:
    redis_url, devnet, relay = chain
    provider = devnet.signer("provider").address

    def gateway(name: str) -> GatewayProcess:
        return GatewayProcess(
            redis_url=redis_url,
            api=devnet.lcd_url,
            tls_dir=tmp_path / f"tls-{name}",
            log_path=tmp_path / f"gateway-{name}.log",
            extra_env={**RENEWAL_ENV, "AP_PROVIDER_ADDRESS": provider, "AP_INSTANCE_ID": name},
        )

    first, second = gateway("a"), gateway("b")
    for args in (["generate", "--valid-days", "1"], ["publish"]):
        done = first.cert(*args)
        assert done.returncode == 0, done.stderr
    shutil.copytree(first.tls_dir, second.tls_dir)
    [old] = provider_certificates(devnet.lcd_url, provider)

    made = make_certificate(devnet.signer("tenant-1").address)

    async def publish_tenant() -> None:
        async with devnet.clients() as clients:
            wallet = clients.wallet("tenant-1")
            await wallet.send(
                msgs.create_certificate(wallet.address, made.cert_pem, made.pubkey_pem)
            )

    asyncio.run(publish_tenant())
    services = StandIns(redis_url)
    tenant = Tenant(client_context(made.cert_pem, made.key_pem))
    caller = threading.Thread(target=tenant.run, daemon=True)
    relay.stop()  # the renewal starts while nothing can publish it
    services.start()
    try:
        first.start()
        second.start()
        tenant.ports.append(second.port)
        caller.start()

        key = PREFIX + provider
        record, _ = eventually_sync(
            lambda: read_bus(redis_url, key),
            timeout_s=30,
            what="a renewal under way",
            until=lambda found: found[0] is not None,
        )
        assert record["phase"] == "publishing"
        assert record["old_serial"] == old
        assert days_left(first) < 1.1

        first.restart()  # in the middle of the renewal
        tenant.ports.append(first.port)
        relay.start()

        new = str(x509.load_pem_x509_certificate(record["new_cert"].encode()).serial_number)
        for port in (first.port, second.port):
            eventually_sync(
                lambda port=port: new in tenant.serials(port),
                timeout_s=60,
                what=f"the gateway on {port} serving the new certificate",
            )
        on_chain = provider_certificates(devnet.lcd_url, provider)
        assert on_chain == {old: "valid", new: "valid"}  # both, for the overlap
        assert days_left(first) > 360

        eventually_sync(
            lambda: provider_certificates(devnet.lcd_url, provider)[old] == "revoked",
            timeout_s=60,
            what="the old certificate revoked",
        )
        record, commands = eventually_sync(
            lambda: read_bus(redis_url, key),
            timeout_s=30,
            what="the renewal done",
            until=lambda found: found[0]["phase"] == "done",
        )
        seen = len(tenant.answers)
        eventually_sync(lambda: len(tenant.answers) > seen + 10, what="more tenant requests")
    finally:
        tenant.stop.set()
        if caller.is_alive():
            caller.join(30)
        services.stop()
        codes = first.stop(), second.stop()

    assert codes == (0, 0), first.log()[-2000:] + second.log()[-2000:]
    assert provider_certificates(devnet.lcd_url, provider) == {old: "revoked", new: "valid"}
    assert [c.key for c in commands if c.key.startswith("create-certificate/")] == [
        f"create-certificate/{old}",  # `cert publish`
        f"create-certificate/{new}",  # the renewal, once for both replicas and the restart
    ]
    assert [c.key for c in commands if c.key.startswith("revoke-certificate/")] == [
        f"revoke-certificate/{old}"
    ]
    assert tenant.failures == []
    assert {status for _, _, status in tenant.answers} == {404}  # authenticated: no such lease
    assert set(tenant.serials(first.port)) | set(tenant.serials(second.port)) == {old, new}
    last = {port: tenant.serials(port)[-1] for port in (first.port, second.port)}
    assert last == {first.port: new, second.port: new}
    for folder in (first.tls_dir, second.tls_dir):  # a restart serves it from the folder too
        [pem] = folder.glob("*.pem")
        assert str(x509.load_pem_x509_certificate(pem.read_bytes()).serial_number) == new


def test_a_step_whose_answer_left_the_results_stream_ends_by_what_the_chain_holds(
    chain: tuple[str, DevnetProcess, RelayProcess], tmp_path: Path
) -> None:
    """The relay answers while no gateway runs, and the answer is trimmed away (retention):
    the gateway reads the outcome from the chain, for the publication and the revocation."""
    redis_url, devnet, relay = chain
    provider = devnet.signer("provider").address
    gateway = GatewayProcess(
        redis_url=redis_url,
        api=devnet.lcd_url,
        tls_dir=tmp_path / "tls",
        log_path=tmp_path / "gateway.log",
        extra_env={**RENEWAL_ENV, "AP_PROVIDER_ADDRESS": provider},
    )
    for args in (["generate", "--valid-days", "1"], ["publish"]):
        done = gateway.cert(*args)
        assert done.returncode == 0, done.stderr
    [old] = provider_certificates(devnet.lcd_url, provider)
    key = PREFIX + provider

    def phase() -> str | None:
        record, _ = read_bus(redis_url, key)
        return None if record is None else str(record["phase"])

    def answered_then_trimmed(what: str) -> None:
        """The relay runs alone until it answered, then every answer is trimmed away."""
        relay.start()
        eventually_sync(
            lambda: what in asyncio.run(result_keys(redis_url)),
            timeout_s=60,
            what=f"the relay's answer to {what}",
        )
        relay.stop()
        asyncio.run(drop_results(redis_url))

    relay.stop()
    with gateway:
        eventually_sync(lambda: phase() == "publishing", timeout_s=30, what="the renewal started")
    record, _ = read_bus(redis_url, key)
    new = str(x509.load_pem_x509_certificate(record["new_cert"].encode()).serial_number)
    answered_then_trimmed(f"create-certificate/{new}")
    assert provider_certificates(devnet.lcd_url, provider) == {old: "valid", new: "valid"}

    with gateway:
        eventually_sync(lambda: phase() == "revoking", timeout_s=30, what="the revocation sent")
        assert served_serial(gateway.port, client_context())[0] == new
    answered_then_trimmed(f"revoke-certificate/{old}")
    assert provider_certificates(devnet.lcd_url, provider) == {old: "revoked", new: "valid"}

    with gateway:
        eventually_sync(lambda: phase() == "done", timeout_s=30, what="the renewal done")
        assert served_serial(gateway.port, client_context())[0] == new
    _, commands = read_bus(redis_url, key)
    assert [c.key for c in commands] == [
        f"create-certificate/{old}",
        f"create-certificate/{new}",
        f"revoke-certificate/{old}",
    ]


async def drop_results(redis_url: str) -> None:
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test-renewal")
    try:
        await bus.backend.delete(CHAIN_RESULTS)
    finally:
        await bus.close()


async def result_keys(redis_url: str) -> set[str]:
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test-renewal")
    try:
        entries = await bus.backend.entries(CHAIN_RESULTS)
    finally:
        await bus.close()
    payloads = [envelope_from_fields(e.fields).payload for e in entries]
    return {p.key for p in payloads if isinstance(p, TxCommitted)}
