"""The renewal of the provider's on-chain certificate, without I/O: when it is due, and each
step of it as a pure transition of one record shared by every gateway replica.

A renewal goes ``publishing`` (a new certificate made, ``MsgCreateCertificate`` asked of the
chain relay) → ``serving`` (committed: every replica serves the new certificate; the old one
stays valid on chain for the overlap) → ``revoking`` (``MsgRevokeCertificate`` of the old one
asked) → ``done``. A refused publication ends in ``failed``, tried again with another new
certificate at ``retry_at``. The record keeps the new certificate and its key, so a replica
that restarts, or one that did not make it, serves the same certificate, and a restart in
the middle carries on from the step the record names instead of making a second one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Literal

from cryptography import x509
from pydantic import BaseModel, ConfigDict

from akgateway.domain.certificates import ProviderCertificate, read_provider_pem

Phase = Literal["publishing", "serving", "revoking", "done", "failed"]
DAY_S = 86_400.0


def days_left(cert: x509.Certificate, now: dt.datetime) -> float:
    """Days until ``cert`` expires (negative once it has)."""
    return (cert.not_valid_after_utc - now).total_seconds() / DAY_S


def due(cert: x509.Certificate, now: dt.datetime, before_s: float) -> bool:
    """Whether ``cert`` is within ``before_s`` seconds of its expiry (0: never renewed)."""
    return before_s > 0 and (cert.not_valid_after_utc - now).total_seconds() <= before_s


def host_names(cert: x509.Certificate) -> list[str]:
    """The host names and addresses ``cert`` is for: what its successor is made for."""
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [
        *names.get_values_for_type(x509.DNSName),
        *(str(ip) for ip in names.get_values_for_type(x509.IPAddress)),
    ]


class Renewal(BaseModel):
    """One renewal of the provider's certificate (the record, JSON in Redis)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    phase: Phase
    old_serial: str
    new_cert: str  # PEM certificate
    new_key: str  # PEM private key (PKCS #8)
    results_after: str = "0"  # where in the chain results the step's answer is looked for
    revoke_at: float = 0.0  # unix time: the old certificate is revoked from then on
    retry_at: float = 0.0  # failed: a new renewal may start from then on
    error: str = ""

    def certificate(self, address: str) -> ProviderCertificate:
        data = (self.new_cert + self.new_key).encode()
        return read_provider_pem(data, address, "the certificate renewal's record")

    @property
    def new_serial(self) -> str:
        return str(x509.load_pem_x509_certificate(self.new_cert.encode()).serial_number)

    @property
    def publish_key(self) -> str:
        """The relay's key of the publication: the same as ``cert publish`` uses."""
        return f"create-certificate/{self.new_serial}"

    @property
    def revoke_key(self) -> str:
        return f"revoke-certificate/{self.old_serial}"

    @property
    def published(self) -> bool:
        """The new certificate is on chain (and the one to serve)."""
        return self.phase in ("serving", "revoking", "done")


def may_start(record: Renewal | None, now: float) -> bool:
    """No renewal is under way (none yet, the last one done, or failed and its wait over)."""
    if record is None or record.phase == "done":
        return True
    return record.phase == "failed" and now >= record.retry_at


def start(old: ProviderCertificate, new: tuple[bytes, bytes], results_after: str) -> Renewal:
    cert_pem, key_pem = new
    return Renewal(
        phase="publishing",
        old_serial=old.serial,
        new_cert=cert_pem.decode(),
        new_key=key_pem.decode(),
        results_after=results_after,
    )


def published(record: Renewal, *, now: float, overlap_s: float) -> Renewal:
    return record.model_copy(update={"phase": "serving", "revoke_at": now + overlap_s})


def refused(record: Renewal, reason: str, *, now: float, retry_s: float) -> Renewal:
    return record.model_copy(update={"phase": "failed", "error": reason, "retry_at": now + retry_s})


def revoking(record: Renewal, results_after: str) -> Renewal:
    return record.model_copy(update={"phase": "revoking", "results_after": results_after})


def revoked(record: Renewal, error: str = "") -> Renewal:
    return record.model_copy(update={"phase": "done", "error": error})


def newer(candidates: Sequence[ProviderCertificate]) -> ProviderCertificate:
    """The certificate that expires last (the first of equals)."""
    return max(candidates, key=lambda c: c.cert.not_valid_after_utc)
