"""The certificate renewal's steps on a real Redis, the chain relay's answers written by the
test: a refused certificate is tried again (with another) only after the retry wait, two
replicas starting at once send one command, a published certificate is what the next TLS
handshake gets, and a restarted replica takes the renewed certificate from the record."""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509

from akbus import Bus, RedisSettings
from akgateway.adapters.tls import server_context
from akgateway.domain import renewal as steps
from akgateway.domain.certificates import make_server_certificate, read_provider_pem
from akgateway.renewal import CertificateRenewal
from akgateway.settings import GatewaySettings
from aktypes.events import (
    BroadcastTx,
    CreateCertificate,
    RevokeCertificate,
    TxCommitted,
    TxFailed,
    envelope_from_fields,
)
from aktypes.events.streams import CHAIN_RESULTS, CHAIN_TX
from aktypes.testing import address

PROVIDER = address(9)
NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW.timestamp()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def bus(redis_url: str) -> AsyncIterator[Bus]:
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test-relay")
    await bus.backend.delete(f"akgateway:cert-renewal:{PROVIDER}", CHAIN_TX, CHAIN_RESULTS)
    yield bus
    await bus.close()


def replica(bus: Bus, folder: Path, clock: Clock) -> CertificateRenewal:
    """A gateway replica's renewal over the certificate in ``folder`` (made if missing)."""
    settings = GatewaySettings(
        gateway_tls_dir=folder,
        gateway_cert_renew_before=48 * HOUR,
        gateway_cert_renew_overlap=HOUR,
        gateway_cert_renew_retry=HOUR,
    )
    path = settings.certificate_path(PROVIDER)
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        cert, key = make_server_certificate(PROVIDER, ["provider.example.com"], days=1, now=NOW)
        path.write_bytes(cert + key)
    own = read_provider_pem(path.read_bytes(), PROVIDER, str(path))
    return CertificateRenewal(bus, settings, PROVIDER, [server_context(path)], own, clock=clock)


async def commands(bus: Bus) -> list[BroadcastTx]:
    found = [envelope_from_fields(e.fields).payload for e in await bus.backend.entries(CHAIN_TX)]
    return [c for c in found if isinstance(c, BroadcastTx)]


def handshake(context: ssl.SSLContext) -> x509.Certificate:
    """The certificate a TLS client gets from ``context`` (in memory, no socket)."""
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    tls_client = client.wrap_bio(c_in, c_out)
    tls_server = context.wrap_bio(s_in, s_out, server_side=True)
    done = set()
    for _ in range(10):
        for side, out, peer_in in ((tls_client, c_out, s_in), (tls_server, s_out, c_in)):
            try:
                side.do_handshake()
                done.add(id(side))
            except ssl.SSLWantReadError:
                pass
            peer_in.write(out.read())
        if id(tls_client) in done:
            der = tls_client.getpeercert(binary_form=True)
            assert der is not None
            return x509.load_der_x509_certificate(der)
    raise AssertionError("no handshake")


async def test_a_refused_certificate_is_replaced_by_another_after_the_retry_wait(
    bus: Bus, tmp_path: Path
) -> None:
    clock = Clock()
    one = replica(bus, tmp_path, clock)
    await one.step()
    [create] = await commands(bus)
    assert isinstance(create.msgs[0], CreateCertificate)
    await bus.publish(CHAIN_RESULTS, TxFailed(key=create.key, code=5, log="insufficient funds"))
    await one.step()
    record = await one.records.get(PROVIDER)
    assert record is not None
    assert (record.phase, record.error) == ("failed", "sdk 5: insufficient funds")
    clock.now += HOUR - 1
    await one.step()
    assert len(await commands(bus)) == 1  # still waiting
    clock.now += 1
    await one.step()
    first, second = await commands(bus)
    assert first.key != second.key  # another certificate: the refused key stays refused
    assert handshake(one.contexts[0]).serial_number == one.served.cert.serial_number


async def test_two_replicas_starting_together_send_one_command_and_both_serve_its_certificate(
    bus: Bus, tmp_path: Path
) -> None:
    clock = Clock()
    one = replica(bus, tmp_path / "a", clock)
    original = (tmp_path / "a" / f"{PROVIDER}.pem").read_bytes()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / f"{PROVIDER}.pem").write_bytes(original)
    two = replica(bus, tmp_path / "b", clock)
    old = one.served.serial
    await one.step()
    await two.step()
    [create] = await commands(bus)
    await bus.publish(CHAIN_RESULTS, TxCommitted(key=create.key, tx_hash="AB", height=7))
    await two.step()
    await one.step()
    new = create.key.removeprefix("create-certificate/")
    for gateway in (one, two):
        assert gateway.served.serial == new
        assert str(handshake(gateway.contexts[0]).serial_number) == new
        assert steps.host_names(gateway.served.cert) == ["provider.example.com"]
    record = await one.records.get(PROVIDER)
    assert record is not None
    assert (record.phase, record.revoke_at) == ("serving", clock.now + HOUR)

    clock.now += HOUR  # the overlap is over
    await two.step()
    await one.step()
    revoke = (await commands(bus))[-1]
    assert revoke.key == f"revoke-certificate/{old}"
    assert revoke.msgs == [RevokeCertificate(serial=old)]
    await bus.publish(CHAIN_RESULTS, TxCommitted(key=revoke.key, tx_hash="CD", height=8))
    await one.step()
    await two.step()
    record = await one.records.get(PROVIDER)
    assert record is not None
    assert record.phase == "done"
    assert len(await commands(bus)) == 2
    await one.step()  # the new certificate is far from its expiry: nothing more
    assert len(await commands(bus)) == 2

    # a replica started later from the old certificate (a Secret not updated) serves the new
    # one from the record
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / f"{PROVIDER}.pem").write_bytes(original)
    three = replica(bus, folder, clock)
    assert three.served.serial == old
    await three.step()
    assert three.served.serial == new
    assert str(handshake(three.contexts[0]).serial_number) == new
    assert len(await commands(bus)) == 2
