"""The certificate renewal's pure rules: when it is due, when one may start, its steps."""

from __future__ import annotations

import datetime as dt

from akgateway.domain import renewal as steps
from akgateway.domain.certificates import make_server_certificate, read_provider_pem
from aktypes.testing import address

OWNER = address(3)
NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
DAY = 86_400.0


def certificate(days: float) -> steps.ProviderCertificate:
    cert, key = make_server_certificate(OWNER, ["p.example.com", "10.0.0.1"], days=days, now=NOW)
    return read_provider_pem(cert + key, OWNER, "test")


def test_due_within_the_window_before_expiry_and_never_when_the_window_is_zero() -> None:
    cert = certificate(40).cert
    assert steps.days_left(cert, NOW) == 40
    assert not steps.due(cert, NOW, 30 * DAY)
    assert steps.due(cert, NOW + dt.timedelta(days=10), 30 * DAY)
    assert steps.due(cert, NOW + dt.timedelta(days=50), 30 * DAY)  # expired: still renewed
    assert not steps.due(cert, NOW + dt.timedelta(days=50), 0)


def test_the_successor_keeps_the_host_names() -> None:
    assert steps.host_names(certificate(1).cert) == ["p.example.com", "10.0.0.1"]


def test_a_renewal_starts_when_none_is_under_way_or_a_failed_one_waited_enough() -> None:
    old, new = certificate(1), certificate(365)
    record = steps.start(old, (new.pem, new.key_pem), "5-0")
    assert (record.phase, record.old_serial, record.results_after) == (
        "publishing",
        old.serial,
        "5-0",
    )
    assert record.publish_key == f"create-certificate/{new.serial}"
    assert record.revoke_key == f"revoke-certificate/{old.serial}"
    assert record.certificate(OWNER) == new
    assert steps.may_start(None, 0)
    assert not steps.may_start(record, 0)
    serving = steps.published(record, now=100, overlap_s=50)
    assert (serving.phase, serving.revoke_at, serving.published) == ("serving", 150, True)
    assert not steps.may_start(serving, 1e12)
    done = steps.revoked(steps.revoking(serving, "9-0"))
    assert (done.phase, done.published) == ("done", True)
    assert steps.may_start(done, 0)
    failed = steps.refused(record, "sdk 5: no funds", now=100, retry_s=60)
    assert not failed.published
    assert not steps.may_start(failed, 159)
    assert steps.may_start(failed, 160)


def test_the_newer_certificate_is_the_one_that_expires_last() -> None:
    short, long = certificate(1), certificate(2)
    assert steps.newer([short, long]) is long
    assert steps.newer([long, short]) is long
