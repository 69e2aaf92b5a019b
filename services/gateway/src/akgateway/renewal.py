"""The provider's on-chain certificate renews itself: made, published, served, and the old
one revoked after an overlap, by whichever gateway replica gets there first.

Every ``AP_GATEWAY_CERT_RENEW_INTERVAL`` each replica reads the renewal's record
(``akgateway:cert-renewal:<address>`` in Redis, the steps in
:mod:`akgateway.domain.renewal`) and takes the step it names:

- nothing under way and the served certificate within ``AP_GATEWAY_CERT_RENEW_BEFORE`` of its
  expiry: make a new one (the same host names, ``AP_GATEWAY_CERT_RENEW_VALIDITY``) and write
  the record together with ``BroadcastTx{key="create-certificate/<serial>"}`` on
  ``akash.provider.chain.tx``, in one guarded write: of two replicas starting at once, one
  writes and the other finds its record; the command is sent once, with the record;
- ``publishing``: look for the relay's answer on ``akash.provider.chain.results`` (from the
  position the record keeps). Committed: ``serving``. Refused: ``failed``, a new certificate
  tried after ``AP_GATEWAY_CERT_RENEW_RETRY``. No answer, but the certificate is valid on
  chain (the answer was trimmed from the stream while no gateway ran): ``serving`` too;
- published: every replica loads the new certificate into its live TLS contexts (the REST
  API's and gRPC's: later handshakes get it, connections open keep theirs) and writes it to
  ``<AP_GATEWAY_TLS_DIR>/<address>.pem`` when it can (a read-only folder, as a Kubernetes
  Secret: the record is where a restarted replica finds it);
- ``serving`` for ``AP_GATEWAY_CERT_RENEW_OVERLAP``: ``BroadcastTx{key="revoke-certificate/
  <old serial>"}``, then ``done`` whatever the answer (a refusal is logged: the old
  certificate may have been revoked by hand), or once the chain shows it revoked.

The record holds the new certificate's key: whoever can write the provider's Redis can
already have the chain relay sign anything, so it holds nothing more valuable than that.
"""

from __future__ import annotations

import datetime as dt
import logging
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from akbus import Bus, ConnectionLost
from akbus.records import Change, Records, Snapshot
from akgateway import metrics
from akgateway.adapters.chain import CertificateLookup
from akgateway.adapters.files import write_private
from akgateway.domain import renewal as steps
from akgateway.domain.certificates import (
    ProviderCertificate,
    chain_pubkey_pem,
    make_server_certificate,
)
from akgateway.domain.renewal import Renewal
from akgateway.errors import CertificateFileError, ChainUnavailable
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

log = logging.getLogger("akgateway.renewal")

PREFIX = "akgateway:cert-renewal:"


def load_into(contexts: Sequence[ssl.SSLContext], cert: ProviderCertificate) -> None:
    """Serve ``cert`` from ``contexts`` from the next handshake on. OpenSSL reads a key only
    from a file: it goes through a private temporary one."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "provider.pem"
        write_private(path, cert.pem + cert.key_pem)
        for context in contexts:
            context.load_cert_chain(path)


class CertificateRenewal:
    """The renewal loop of one gateway replica, and the certificate it serves."""

    def __init__(
        self,
        bus: Bus,
        settings: GatewaySettings,
        address: str,
        contexts: Sequence[ssl.SSLContext],
        served: ProviderCertificate,
        *,
        chain: CertificateLookup | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.bus = bus
        self.chain = chain
        self.settings = settings
        self.address = address
        self.contexts = tuple(contexts)
        self.served = served
        self.clock = clock
        self.records = Records(bus, Renewal, PREFIX, log=log, noun="certificate renewal")
        self._cursor: tuple[str, str] = ("", "0")  # (tx key, position read up to)
        self._unwritable = False

    # -- the loop ---------------------------------------------------------------------------
    async def run(self, interval: float, sleep: Callable[[float], Awaitable[bool]]) -> None:
        """A step every ``interval`` until ``sleep`` says the process is stopping."""
        failures = 0
        while await sleep(interval):
            try:
                await self.step()
            except ConnectionLost as exc:
                failures += 1
                if failures in (1, 5) or failures % 100 == 0:
                    log.warning("certificate renewal: Redis unreachable", extra={"error": str(exc)})
                continue
            except (ValidationError, ssl.SSLError) as exc:  # a record no one can use
                failures += 1
                if failures in (1, 5) or failures % 100 == 0:
                    log.error("certificate renewal: %s", exc)
                continue
            failures = 0

    async def step(self) -> None:
        """Read the record, take the step it names, serve what it says is published."""
        snapshot = await self.records.read(self.address)
        record = snapshot.record
        if record is not None and record.published:
            self._serve_newer(record)
        now = self.clock()
        self._gauge(now)
        if steps.may_start(record, now):
            if steps.due(self.served.cert, _utc(now), self.settings.gateway_cert_renew_before):
                await self._start(snapshot, now)
        elif record is not None and record.phase == "publishing":
            await self._on_publication(record)
        elif record is not None and record.phase == "serving" and now >= record.revoke_at:
            await self._revoke(snapshot, record)
        elif record is not None and record.phase == "revoking":
            await self._on_revocation(record)

    # -- the steps --------------------------------------------------------------------------
    async def _start(self, snapshot: Snapshot[Renewal], now: float) -> None:
        settings = self.settings
        made = make_server_certificate(
            self.address,
            steps.host_names(self.served.cert),
            days=settings.gateway_cert_renew_validity / steps.DAY_S,
            now=_utc(now),
        )
        record = steps.start(self.served, made, await self._results_tail())
        command = BroadcastTx(
            key=record.publish_key,
            msgs=[
                CreateCertificate(
                    cert_pem=record.new_cert,
                    pubkey_pem=chain_pubkey_pem(record.certificate(self.address).cert).decode(),
                )
            ],
        )
        if await self.records.commit(snapshot, Change(record, publish=[(CHAIN_TX, command)])):
            metrics.CERT_RENEWALS.labels("started").inc()
            log.info(
                "the provider's certificate %s expires at %s: publishing its successor %s",
                self.served.serial,
                self.served.cert.not_valid_after_utc.isoformat(),
                record.new_serial,
            )

    async def _on_publication(self, record: Renewal) -> None:
        result = await self._result(record.publish_key, record.results_after)
        if result is None and await self._on_chain(record.new_serial) == "valid":
            result = TxCommitted(key=record.publish_key, tx_hash="-", height=0)
        if result is None:
            return
        now = self.clock()
        if isinstance(result, TxCommitted):
            after = steps.published(
                record, now=now, overlap_s=self.settings.gateway_cert_renew_overlap
            )
            outcome = "published"
        else:
            reason = f"{result.codespace or 'sdk'} {result.code}: {result.log}"
            after = steps.refused(
                record, reason, now=now, retry_s=self.settings.gateway_cert_renew_retry
            )
            outcome = "refused"
        if await self._replace(record, after):
            metrics.CERT_RENEWALS.labels(outcome).inc()
            if isinstance(result, TxFailed):
                log.error(
                    "the chain refused the provider's new certificate %s (%s); another will be "
                    "tried in %gs",
                    record.new_serial,
                    after.error,
                    self.settings.gateway_cert_renew_retry,
                )
            else:
                self._serve_newer(after)

    async def _revoke(self, snapshot: Snapshot[Renewal], record: Renewal) -> None:
        after = steps.revoking(record, await self._results_tail())
        command = BroadcastTx(
            key=record.revoke_key, msgs=[RevokeCertificate(serial=record.old_serial)]
        )
        if await self.records.commit(snapshot, Change(after, publish=[(CHAIN_TX, command)])):
            log.info("revoking the provider's previous certificate %s", record.old_serial)

    async def _on_revocation(self, record: Renewal) -> None:
        result = await self._result(record.revoke_key, record.results_after)
        if result is None and await self._on_chain(record.old_serial) == "revoked":
            result = TxCommitted(key=record.revoke_key, tx_hash="-", height=0)
        if result is None:
            return
        error = ""
        if isinstance(result, TxFailed):
            error = f"{result.codespace or 'sdk'} {result.code}: {result.log}"
        if await self._replace(record, steps.revoked(record, error)):
            metrics.CERT_RENEWALS.labels("revoked" if not error else "revoke_refused").inc()
            if error:
                log.warning(
                    "the chain refused to revoke the previous certificate %s (%s)",
                    record.old_serial,
                    error,
                )

    async def _replace(self, record: Renewal, after: Renewal) -> bool:
        """Store ``after`` if the record is still ``record`` (another replica may be faster)."""
        _, written = await self.records.update(
            self.address, lambda found: after if found == record else None
        )
        return written is not None

    # -- serving ----------------------------------------------------------------------------
    def _serve_newer(self, record: Renewal) -> None:
        if record.new_serial == self.served.serial:
            return
        try:
            cert = record.certificate(self.address)
        except CertificateFileError as exc:
            log.error("the certificate renewal's record is unusable: %s", exc)
            return
        if steps.newer([self.served, cert]) is not cert:
            return  # the folder holds a later one (made by hand): it stays
        load_into(self.contexts, cert)
        previous, self.served = self.served, cert
        self._gauge(self.clock())  # the days left of what is served, from its first handshake
        log.info(
            "serving the provider's certificate %s (until %s) instead of %s",
            cert.serial,
            cert.cert.not_valid_after_utc.isoformat(),
            previous.serial,
        )
        path = self.settings.certificate_path(self.address)
        try:
            write_private(path, cert.pem + cert.key_pem)
        except OSError as exc:
            if not self._unwritable:
                log.warning(
                    "cannot write the renewed certificate to %s (%s): it is served from the "
                    "renewal's record in Redis",
                    path,
                    exc.strerror or exc,
                )
            self._unwritable = True

    def _gauge(self, now: float) -> None:
        metrics.CERT_DAYS_LEFT.set(steps.days_left(self.served.cert, _utc(now)))

    async def _on_chain(self, serial: str) -> str | None:
        """The state of the provider's certificate ``serial`` on chain (None: not there, or
        the node does not answer): how a step ends whose answer left the results stream
        (kept ``AKBUS_RETENTION_S``) while no gateway ran."""
        if self.chain is None:
            return None
        try:
            found = await self.chain.find(self.address, serial)
        except ChainUnavailable:
            return None
        return found[0].state if found else None

    # -- the chain relay's answers ------------------------------------------------------------
    async def _results_tail(self) -> str:
        last = await self.bus.backend.entries(CHAIN_RESULTS, reverse=True, count=1)
        return last[0].id if last else "0"

    async def _result(self, key: str, after: str) -> TxCommitted | TxFailed | None:
        """The relay's answer for ``key`` among the results after ``after`` (None: not yet)."""
        if self._cursor[0] == key:
            after = self._cursor[1]
        while True:
            batch = await self.bus.backend.read(CHAIN_RESULTS, after, count=500, block_ms=None)
            for entry in batch:
                after = entry.id
                if entry.fields.get("type") not in ("tx.committed", "tx.failed"):
                    continue
                payload = envelope_from_fields(entry.fields).payload
                if isinstance(payload, TxCommitted | TxFailed) and payload.key == key:
                    self._cursor = ("", "0")
                    return payload
            self._cursor = (key, after)
            if len(batch) < 500:
                return None


def _utc(now: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(now, dt.UTC)
