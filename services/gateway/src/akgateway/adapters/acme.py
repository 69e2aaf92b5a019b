"""The ACME client that keeps the public certificate: it orders one for the public hostnames
when there is none, when it no longer covers them, and at two thirds of its lifetime, then
hands the new pair to :class:`akgateway.adapters.public_tls.PublicTLS`, which serves it from
the next handshake on.

It runs inside the gateway, as a supervised task: the gateway already serves the TLS the
certificate is for, and the challenges' listeners (:mod:`akgateway.adapters.acme_solvers`)
answer from the same process. Its state is files in ``AP_GATEWAY_ACME_DIR`` (mode 0700; each
file 0600, written whole then renamed): ``account.key`` (the account's P-256 key),
``account.json`` (the account's URL at that directory), ``cert.pem`` (the chain) and
``key.pem`` (its key). A restart reads them and resumes: the certificate is served again
and renewed when due; an order cut short by a restart is placed again.

The protocol is the ``acme`` library's (JWS, nonces, orders, polling), which is blocking;
each order runs in a daemon thread of its own, so a stopping gateway never waits for the CA.
A failed order is tried again after ``AP_GATEWAY_ACME_RETRY_INTERVAL``, doubling to an hour,
with one warning each time; the certificate served stays until a new one is in hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import re
import threading
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import josepy as jose
import requests
from acme import client as acme_client
from acme import crypto_util, messages
from acme import errors as acme_errors
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from josepy.jwa import ES256
from josepy.jwk import JWKEC

from akgateway import metrics
from akgateway.adapters.acme_solvers import ALPNChallenges, DNSHook, HTTPChallenges
from akgateway.adapters.public_tls import PublicTLS
from akgateway.domain.public_tls import order_reason, retry_after
from akgateway.errors import AcmeError, PublicCertificateError
from aktypes.duration import format_duration

log = logging.getLogger("akgateway.adapters.acme")

T = TypeVar("T")
NETWORK_TIMEOUT = 30  # seconds for one request to the CA
ORDER_TIMEOUT = 180.0  # seconds for the CA to check the challenges and issue
MOST_ASLEEP = 3600.0  # look again at least this often (a clock that jumps, files replaced)
USER_AGENT = "akash-provider-gateway"


@dataclass(frozen=True)
class AcmeConfig:
    directory: str
    hostnames: tuple[str, ...]
    folder: Path
    challenge: str = "http-01"
    email: str = ""
    ca_file: Path | None = None
    eab_kid: str = ""
    eab_hmac: str = ""
    dns_wait: float = 30.0
    retry: float = 60.0


class Folder:
    """Files only the gateway's user reads: the folder 0700, each file 0600, replaced whole."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, name: str) -> bytes | None:
        try:
            return (self.path / name).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes) -> None:
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(PermissionError):  # a folder made by someone else: theirs
            self.path.chmod(0o700)
        target = self.path / name
        partial = self.path / f".{name}.partial"
        partial.unlink(missing_ok=True)
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, target)

    def remove(self, name: str) -> None:
        (self.path / name).unlink(missing_ok=True)


async def in_thread(work: Callable[[], T]) -> T:
    """``work()`` in a daemon thread: awaiting it can be cancelled, and the process does not
    wait for it to end."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]  # None only with an error

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:  # handed to the awaiting task
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(settle, None, exc)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=run, name="acme", daemon=True).start()
    return await future


def one_line(exc: BaseException) -> str:
    """An ACME library error in one line for the log."""
    if isinstance(exc, acme_errors.ValidationError):
        parts = []
        for authzr in exc.failed_authzrs:
            for challb in authzr.body.challenges:
                if challb.error is not None:
                    why = challb.error.detail or challb.error.typ
                    parts.append(f"{authzr.body.identifier.value}: {challb.chall.typ}: {why}")
        return "the CA could not verify " + "; ".join(parts or ["the hostnames"])
    if isinstance(exc, acme_errors.TimeoutError):
        return f"the CA did not finish the order within {ORDER_TIMEOUT:.0f}s"
    if exc.args and isinstance(exc.args[0], requests.Response):
        return f"HTTP {exc.args[0].status_code}"
    if isinstance(exc, messages.Error):
        return f"the CA refused: {exc.detail or exc.description or exc.typ}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def unexpected(exc: BaseException) -> str:
    """A bug, in one line: the exception and where it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"unexpected {type(exc).__name__}{where}: {one_line(exc)}"


def network_problem(exc: requests.RequestException) -> str:
    """What went wrong talking to the CA, in the operator's words, not urllib3's."""
    text = str(exc)
    if isinstance(exc, requests.exceptions.SSLError):
        if "CERTIFICATE_VERIFY_FAILED" in text:
            return "its TLS certificate is not trusted (AP_GATEWAY_ACME_CA_FILE)"
        return "TLS failed"
    if isinstance(exc, requests.Timeout):
        return f"no answer within {NETWORK_TIMEOUT}s"
    found = re.search(r"\[Errno -?\d+\] ([^\"')(]+)", text)
    if found:
        return found.group(1).strip().lower()
    return one_line(exc)


class AcmeIssuer:
    """Orders the public certificate of ``config.hostnames`` when due and serves it through
    ``public``; the challenge of ``config.challenge`` is answered by its solver."""

    def __init__(
        self,
        config: AcmeConfig,
        public: PublicTLS,
        *,
        http: HTTPChallenges | None = None,
        alpn: ALPNChallenges | None = None,
        dns: DNSHook | None = None,
    ) -> None:
        self.config = config
        self.public = public
        self.folder = Folder(config.folder)
        self.http, self.alpn, self.dns = http, alpn, dns
        self.error: str | None = None  # the last order's failure, None once one succeeds

    # -- the loop (event loop) ---------------------------------------------------------------

    async def run(self, sleep: Callable[[float], Awaitable[bool]]) -> None:
        """Order when due, else sleep until then, until ``sleep`` says the process stops."""
        failures = 0
        while True:
            now = dt.datetime.now(dt.UTC)
            reason = order_reason(self.public.current, self.config.hostnames, now)
            if reason is None and self.public.current is not None:
                due = (self.public.current.renewal_time() - now).total_seconds()
                if not await sleep(min(max(due, 0.0), MOST_ASLEEP)):
                    return
                continue
            log.info(
                "ordering a certificate for %s: %s",
                ", ".join(self.config.hostnames),
                reason,
                extra={"directory": self.config.directory, "challenge": self.config.challenge},
            )
            try:
                await self.renew()
            except Exception as exc:  # an order's failure never stops the gateway
                failures += 1
                self.error = str(exc) if isinstance(exc, AcmeError) else unexpected(exc)
                metrics.ACME_ORDERS.labels("failed").inc()
                delay = retry_after(failures, self.config.retry)
                log.log(
                    logging.WARNING if isinstance(exc, AcmeError) else logging.ERROR,
                    "no certificate from the ACME CA: %s (next try in %s)",
                    self.error,
                    format_duration(delay),
                    extra={"failures": failures},
                )
                if not await sleep(delay):
                    return
                continue
            failures, self.error = 0, None
            metrics.ACME_ORDERS.labels("issued").inc()

    async def renew(self) -> None:
        """One order: the certificate obtained, written and served; :class:`AcmeError`."""
        key_pem, chain_pem = await in_thread(self.obtain)
        # written and loaded with no await between: the file watcher never sees half a pair
        try:
            self.folder.write("key.pem", key_pem)
            self.folder.write("cert.pem", chain_pem)
        except OSError as exc:
            raise AcmeError(f"cannot write to {self.folder.path}: {exc.strerror or exc}") from None
        try:
            self.public.load()
        except PublicCertificateError as exc:
            raise AcmeError(f"the certificate issued cannot be served: {exc}") from None

    # -- one order (the ACME thread) ---------------------------------------------------------

    def obtain(self) -> tuple[bytes, bytes]:
        """Order, prove, finalize: the new key and chain (PEM); :class:`AcmeError`."""
        try:
            return self._obtain()
        except AcmeError:
            raise
        except messages.Error as exc:
            if exc.code == "accountDoesNotExist":
                self.folder.remove("account.json")  # registered again on the next try
            raise AcmeError(one_line(exc)) from None
        except requests.RequestException as exc:
            raise AcmeError(
                f"cannot talk to the ACME directory {self.config.directory}: {network_problem(exc)}"
            ) from None
        except (acme_errors.ValidationError, acme_errors.TimeoutError) as exc:
            raise AcmeError(one_line(exc)) from None
        except (acme_errors.Error, jose.errors.Error, ValueError, KeyError) as exc:
            raise AcmeError(
                f"unexpected answer from the ACME directory {self.config.directory}: "
                f"{one_line(exc)}"
            ) from None
        except OSError as exc:
            raise AcmeError(f"{exc.filename or self.folder.path}: {exc.strerror or exc}") from None

    def _obtain(self) -> tuple[bytes, bytes]:
        account_key = self._account_key()
        client = self._client(account_key)
        key = ec.generate_private_key(ec.SECP256R1())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        order = client.new_order(crypto_util.make_csr(key_pem, list(self.config.hostnames)))
        opened: list[tuple[str, Any, str]] = []  # (domain, challenge, validation)
        try:
            answers = []
            for authzr in order.authorizations:
                if authzr.body.status == messages.STATUS_VALID:
                    continue  # proven recently: the CA reuses it
                domain = authzr.body.identifier.value
                challb = self._pick(authzr, domain)
                response, validation = challb.chall.response_and_validation(account_key)
                self._open(domain, challb.chall, validation)
                opened.append((domain, challb.chall, validation))
                answers.append((challb, response))
            if self.dns is not None and answers and self.config.dns_wait:
                time.sleep(self.config.dns_wait)
            for challb, response in answers:
                client.answer_challenge(challb, response)
            deadline = dt.datetime.now() + dt.timedelta(
                seconds=ORDER_TIMEOUT
            )  # naive: the library's
            order = client.poll_authorizations(order, deadline)
            order = client.finalize_order(order, deadline)
        finally:
            for domain, chall, validation in opened:
                self._close(domain, chall, validation)
        if not order.fullchain_pem:
            raise AcmeError("the CA gave no certificate")
        return key_pem, order.fullchain_pem.encode()

    def _pick(self, authzr: messages.AuthorizationResource, domain: str) -> Any:
        offered = [challb.chall.typ for challb in authzr.body.challenges]
        for challb in authzr.body.challenges:
            if challb.chall.typ == self.config.challenge:
                return challb
        raise AcmeError(
            f"the CA offers no {self.config.challenge} challenge for {domain} "
            f"(it offers {', '.join(offered) or 'none'}): set AP_GATEWAY_ACME_CHALLENGE"
        )

    def _open(self, domain: str, chall: Any, validation: str) -> None:
        if self.config.challenge == "http-01" and self.http is not None:
            self.http.tokens[chall.encode("token")] = validation
        elif self.config.challenge == "tls-alpn-01" and self.alpn is not None:
            self.alpn.add(domain, validation)
        elif self.config.challenge == "dns-01" and self.dns is not None:
            self.dns.run("add", domain, validation)
        else:
            raise AcmeError(f"nothing answers {self.config.challenge} here")

    def _close(self, domain: str, chall: Any, validation: str) -> None:
        if self.config.challenge == "http-01" and self.http is not None:
            self.http.tokens.pop(chall.encode("token"), None)
        elif self.config.challenge == "tls-alpn-01" and self.alpn is not None:
            self.alpn.remove(domain)
        elif self.config.challenge == "dns-01" and self.dns is not None:
            try:
                self.dns.run("remove", domain, validation)
            except AcmeError as exc:
                log.warning("the challenge's DNS record stays: %s", exc)

    # -- the account -------------------------------------------------------------------------

    def _account_key(self) -> JWKEC:
        saved = self.folder.read("account.key")
        if saved is None:
            key = ec.generate_private_key(ec.SECP256R1())
            saved = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            self.folder.write("account.key", saved)
            log.info("made an ACME account key", extra={"file": str(self.folder.path)})
        loaded = serialization.load_pem_private_key(saved, password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise AcmeError(f"{self.folder.path / 'account.key'}: not an EC private key")
        return JWKEC(key=loaded)

    def _client(self, account_key: JWKEC) -> acme_client.ClientV2:
        net = acme_client.ClientNetwork(
            account_key, alg=ES256, user_agent=USER_AGENT, timeout=NETWORK_TIMEOUT
        )
        if self.config.ca_file is not None:
            net.verify_ssl = str(self.config.ca_file)  # type: ignore[assignment]  # requests takes a CA file
        directory = acme_client.ClientV2.get_directory(self.config.directory, net)
        client = acme_client.ClientV2(directory, net)
        saved = self.folder.read("account.json")
        if saved is not None:
            known = json.loads(saved)
            if known.get("directory") == self.config.directory:
                net.account = messages.RegistrationResource.from_json(known["account"])
                return client
        binding = None
        if self.config.eab_kid:
            binding = messages.ExternalAccountBinding.from_data(
                account_key.public_key(), self.config.eab_kid, self.config.eab_hmac, directory
            )
        registration = messages.NewRegistration.from_data(
            email=self.config.email or None,
            terms_of_service_agreed=True,
            external_account_binding=binding,
        )
        try:
            account = client.new_account(registration)
        except acme_errors.ConflictError as exc:  # this key has an account there already
            account = messages.RegistrationResource(uri=exc.location, body=messages.Registration())
            net.account = account
        record = {"directory": self.config.directory, "account": account.to_json()}
        self.folder.write("account.json", json.dumps(record).encode())
        log.info("ACME account ready", extra={"account": account.uri})
        return client
