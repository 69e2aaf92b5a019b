"""The gateway's pure parts: certificates, body parsing, reply mapping, status aggregation."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from akchain._pb.akash.market.v1 import market_pb2
from akdevnet.modules import cert as chain_cert
from akgateway._pb.akash.manifest.v2beta3 import manifest_pb2 as mpb
from akgateway.domain.answers import REJECTION_ERRORS, parse_manifest, rejection_error
from akgateway.domain.certificates import (
    OnChainCertificate,
    accept,
    chain_pubkey_pem,
    make_server_certificate,
    presented,
    read_provider_pem,
)
from akgateway.domain.lease_rpc import lease_of, manifest_from_pb, manifest_pb
from akgateway.domain.overview import earnings
from akgateway.domain.status import legacy_status
from akgateway.errors import BadRequest, CertificateFileError, CertificateRefused, NotFound
from akgateway.testing import akash_sdk_certificate, make_certificate
from aktypes.errors import SDLError
from aktypes.events import BalanceStatus, BidEngineStatus, Envelope, ManifestRejected
from aktypes.ids import DeploymentID, LeaseID
from aktypes.sdl import parse_sdl
from aktypes.testing import address

OWNER, OTHER = address(1), address(2)
CORPUS = Path(__file__).parents[4] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


def test_the_server_certificate_is_one_the_chain_accepts() -> None:
    cert_pem, key_pem = make_server_certificate(OWNER, ["Example.com", "10.0.0.1", "example.com"])
    cert = x509.load_pem_x509_certificate(cert_pem)
    parsed = chain_cert.parse(OWNER, cert_pem, chain_pubkey_pem(cert))  # the devnet's chain rules
    assert parsed.serial_number == cert.serial_number
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["example.com"]
    usages = set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    assert usages == {x509.ExtendedKeyUsageOID.SERVER_AUTH, x509.ExtendedKeyUsageOID.CLIENT_AUTH}
    assert read_provider_pem(cert_pem + key_pem, OWNER, "f").serial == str(cert.serial_number)
    with pytest.raises(CertificateFileError, match="not an unencrypted|no unencrypted"):
        read_provider_pem(cert_pem, OWNER, "f")
    with pytest.raises(CertificateFileError, match="is for"):
        read_provider_pem(cert_pem + key_pem, OTHER, "f")
    _, other_key = make_server_certificate(OWNER, [])
    with pytest.raises(CertificateFileError, match="does not belong"):
        read_provider_pem(cert_pem + other_key, OWNER, "f")


def _der(made: object) -> bytes:
    return made.cert.public_bytes(serialization.Encoding.DER)  # type: ignore[attr-defined]


def test_a_client_certificate_must_be_its_owners_published_valid_one() -> None:
    now = dt.datetime.now(dt.UTC)  # read per test: the suite may run long after import
    made = make_certificate(OWNER)
    der = _der(made)
    cert = presented(der, now)
    assert (cert.owner, cert.serial) == (OWNER, made.serial)
    record = OnChainCertificate(OWNER, made.serial, "valid", der)
    accept(cert, [record])
    with pytest.raises(CertificateRefused, match="is not on chain"):
        accept(cert, [])
    with pytest.raises(CertificateRefused, match="is revoked on chain"):
        accept(cert, [OnChainCertificate(OWNER, made.serial, "revoked", der)])
    impostor = presented(_der(make_certificate(OWNER, serial=int(made.serial))), now)
    with pytest.raises(CertificateRefused, match="not the certificate published on chain"):
        accept(impostor, [record])


def test_dates_names_and_usages_of_client_certificates() -> None:
    now = dt.datetime.now(dt.UTC)
    later = make_certificate(OWNER, valid_from=now + dt.timedelta(hours=1))
    with pytest.raises(CertificateRefused, match="not valid before"):
        presented(_der(later), now)
    with pytest.raises(CertificateRefused, match="expired at"):
        presented(_der(make_certificate(OWNER)), now + dt.timedelta(days=31))
    with pytest.raises(CertificateRefused, match="not an akash1 address"):
        presented(_der(make_certificate("alice")), now)
    server_pem, _ = make_server_certificate(OWNER, [])
    server_der = x509.load_pem_x509_certificate(server_pem).public_bytes(serialization.Encoding.DER)
    assert presented(server_der, now).owner == OWNER  # server + client usages: fine
    with pytest.raises(CertificateRefused, match="unreadable"):
        presented(b"junk", now)
    authority = make_certificate(OTHER, ca=True)
    with pytest.raises(CertificateRefused, match="is not issued by"):
        presented(_der(make_certificate(OWNER, issuer=authority)), now)


def test_a_certificate_made_as_akash_sdks_make_it_is_accepted_by_chain_and_gateway() -> None:
    """keyUsage without digitalSignature, CA:TRUE, CRLF PEM: the chain's rules take it, and
    so does the gateway, which checks what Akash's Go provider checks."""
    made = akash_sdk_certificate(OWNER)
    parsed = chain_cert.parse(OWNER, made.cert_pem, made.pubkey_pem)
    assert parsed.serial_number == made.cert.serial_number
    assert made.cert.serial_number % 1000 == 0  # a millisecond timestamp × 1000
    cert = presented(_der(made), dt.datetime.now(dt.UTC))
    accept(cert, [OnChainCertificate(OWNER, cert.serial, "valid", _der(made))])


def test_bodies_that_are_not_manifests_say_where() -> None:
    with pytest.raises(BadRequest, match=r"line 3, column 1: Expecting value"):
        parse_manifest(b"[\n  1,\n]")
    with pytest.raises(BadRequest, match=r"\[0\]\.name: Input should be a valid string"):
        parse_manifest(b'[{"name": 7}]')
    with pytest.raises(BadRequest, match="empty body"):
        parse_manifest(b"  ")
    many = b"[" + b",".join(b'{"name": 1}' for _ in range(20)) + b"]"
    with pytest.raises(BadRequest, match="and 10 more"):
        parse_manifest(many)


def test_every_rejection_code_of_the_contract_is_mapped() -> None:
    documented = ManifestRejected.__doc__ or ""
    for code in REJECTION_ERRORS:
        assert code in documented or code in ("services_changed", "cluster_unavailable")
    dep = DeploymentID(owner=OWNER, dseq=1)
    error = rejection_error(ManifestRejected(deployment_id=dep, code="version_mismatch"))
    assert (error.status, error.message) == (422, "version mismatch")
    assert rejection_error(ManifestRejected(deployment_id=dep, code="new")).status == 500


def test_status_reports_missing_and_stale_services_as_errors() -> None:
    fresh = Envelope.wrap(BidEngineStatus(orders=2), producer="bidengine-0")
    now = fresh.time
    stale = fresh.model_copy(update={"time": now - dt.timedelta(minutes=2)})
    body = legacy_status(
        {"bidengine": fresh, "manifest": None, "cluster": None, "chain": None},
        address=OWNER, public_hostname="", now=now, max_age=30,
    )  # fmt: skip
    assert body["bidengine"] == {"orders": 2}
    assert body["cluster"] is None
    assert "cluster_public_hostname" not in body
    assert [e.split(":")[0] for e in body["errors"]] == ["cluster", "manifest", "chain"]
    old = legacy_status(
        {"bidengine": stale}, address=OWNER, public_hostname="h", now=now, max_age=30
    )
    assert old["bidengine"] is None
    assert old["cluster_public_hostname"] == "h"
    assert any(e.startswith("bidengine: last status is 120s old") for e in old["errors"])


def test_the_dashboard_shows_the_balance_services_figures_line_by_line() -> None:
    status = BalanceStatus(
        leases=3,
        earned={"uact": 1_250_000},
        swept={"uakt": 7_000_000},
        balances={"uakt": 4_000_000, "uact": 250_000},
        below_minimum=["uakt"],
    )
    envelope = Envelope[BalanceStatus](producer="balance", payload=status)
    assert earnings(envelope) == {
        "leases watched": 3,
        "earned uact": 1_250_000,
        "swept uakt": 7_000_000,
        "balance uact": 250_000,
        "balance uakt": 4_000_000,
        "below AP_MINIMUM_BALANCE": "uakt",
    }
    assert earnings(None) is None


def test_a_manifest_over_grpc_has_the_version_of_its_sdl() -> None:
    """Every SDL of the corpus: its manifest as SendManifest carries it (encoded, decoded)
    reads back with the same version hash, unless it uses what alpha.25's protos lack."""
    checked = 0
    for path in sorted(CORPUS.glob("*.y*ml")):
        try:
            manifest = parse_sdl(path.read_text()).manifest
        except SDLError:
            continue
        if any(s.params and s.params.tee for g in manifest.groups for s in g.services or ()):
            continue  # confidential compute: not in alpha.25's ServiceParams
        sent = [mpb.Group.FromString(g.SerializeToString()) for g in manifest_pb(manifest)]
        assert manifest_from_pb(sent).version_hex() == manifest.version_hex(), path.name
        checked += 1
    assert checked > 300


def test_a_grpc_lease_is_the_caller_s_on_this_provider() -> None:
    provider = address(3)
    pb = market_pb2.LeaseID(owner=OWNER, dseq=5, gseq=1, oseq=2, provider=provider)
    assert lease_of(pb, owner=OWNER, provider=provider) == LeaseID(
        owner=OWNER, dseq=5, gseq=1, oseq=2, provider=provider
    )
    bare = market_pb2.LeaseID(dseq=5, gseq=1, oseq=2)  # owner and provider may be left out
    assert lease_of(bare, owner=OWNER, provider=provider).owner == OWNER
    with pytest.raises(NotFound):
        lease_of(pb, owner=OTHER, provider=provider)
    with pytest.raises(NotFound):
        lease_of(pb, owner=OWNER, provider=address(4))
    for broken in (market_pb2.LeaseID(gseq=1, oseq=1), market_pb2.LeaseID(dseq=1, oseq=1)):
        with pytest.raises(BadRequest):
            lease_of(broken, owner=OWNER, provider=provider)
    with pytest.raises(BadRequest, match="at least one group"):
        manifest_from_pb([])
    service = mpb.Service(name="web", count=1)
    service.resources.cpu.units.val = b"lots"  # not a number
    with pytest.raises(BadRequest, match="manifest"):
        manifest_from_pb([mpb.Group(name="g", services=[service])])
