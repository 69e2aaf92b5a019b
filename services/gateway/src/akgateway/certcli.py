"""``python -m akgateway cert generate|publish``: the provider's own TLS certificate.

``generate`` writes ``<AP_GATEWAY_TLS_DIR>/<address>.pem`` (certificate + P-256 key, mode
0600): self-signed, common name = the provider's address, subject alternative names from
the arguments, ``AP_CLUSTER_PUBLIC_HOSTNAME``, the host of the provider's on-chain host URI,
``localhost`` and ``127.0.0.1`` — what ``provider-services tx cert generate server`` makes.

``publish`` puts it on chain through the chain relay, which signs with the provider's key:
``BroadcastTx{key="create-certificate/<serial>", msgs=[CreateCertificate]}`` on
``akash.provider.chain.tx``, then waits for ``TxCommitted``/``TxFailed`` with that key on
``akash.provider.chain.results``. A certificate already on chain, or already committed by an
earlier run, is reported as such; the key makes a repeated command harmless.

The address is ``AP_PROVIDER_ADDRESS``, else the one the chain relay's status names.
Exit codes: 0 done, 1 failed (one line says why), 2 bad settings or arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import NoReturn
from urllib.parse import urlsplit

from cryptography import x509

from akbus import Bus, ConnectionLost, RedisSettings
from akchain.errors import ChainError
from akchain.lcd import LCDClient
from akgateway.adapters.chain import CertificateLookup, provider_host
from akgateway.adapters.files import write_private
from akgateway.domain.certificates import (
    SERVER_CERT_DAYS,
    chain_pubkey_pem,
    make_server_certificate,
    read_provider_pem,
)
from akgateway.errors import CertificateFileError, ChainUnavailable, CommandFailed
from akgateway.settings import GatewaySettings
from akservice.chaintx import NoAnswer, broadcast_once, relay_address
from akservice.settings import SettingsError, load_config, runtime_settings
from aktypes.events import CreateCertificate, TxFailed

PROG = "python -m akgateway cert"
ADDRESS_WAIT_S = 10.0


def _say(message: str, *, err: bool = False) -> None:
    print(message, file=sys.stderr if err else sys.stdout)


async def provider_address(settings: GatewaySettings, bus: Bus) -> str:
    if settings.provider_address:
        return settings.provider_address
    try:
        address = await relay_address(bus, wait_s=ADDRESS_WAIT_S)
    except ConnectionLost as exc:
        raise CommandFailed(f"Redis is unreachable ({exc}); or set AP_PROVIDER_ADDRESS") from None
    if address is None:
        raise CommandFailed(
            "no provider address: set AP_PROVIDER_ADDRESS, or start the chain relay "
            "(python -m akchainsvc), whose status names it"
        )
    return address


async def generate(
    settings: GatewaySettings, bus: Bus, hosts: Sequence[str], *, force: bool, days: int
) -> None:
    address = await provider_address(settings, bus)
    path = settings.certificate_path(address)
    if path.exists() and not force:
        raise CommandFailed(f"{path} exists; --force replaces it (then publish the new one)")
    names = [*hosts]
    if settings.cluster_public_hostname:
        names.append(settings.cluster_public_hostname)
    async with LCDClient(settings.api) as lcd:
        try:
            uri = await provider_host(lcd, address)
        except ChainUnavailable as exc:
            _say(f"note: the provider's host URI is not known ({exc})", err=True)
            uri = None
    if uri and (host := urlsplit(uri).hostname):
        names.append(host)
    names += ["localhost", "127.0.0.1"]
    cert_pem, key_pem = make_server_certificate(address, names, days=days)
    write_private(path, cert_pem + key_pem)
    serial = x509.load_pem_x509_certificate(cert_pem).serial_number
    _say(f"{path} (serial {serial}, hosts {', '.join(dict.fromkeys(n.lower() for n in names))})")


async def publish(settings: GatewaySettings, bus: Bus, *, timeout: float) -> None:
    address = await provider_address(settings, bus)
    path = settings.certificate_path(address)
    try:
        own = read_provider_pem(path.read_bytes(), address, str(path))
    except FileNotFoundError:
        raise CommandFailed(f"no certificate at {path}: run `{PROG} generate` first") from None
    async with LCDClient(settings.api) as lcd:
        try:
            found = await CertificateLookup(lcd, 0).find(address, own.serial)
        except ChainUnavailable as exc:
            _say(f"note: cannot see whether it is on chain already ({exc})", err=True)
            found = []
    if any(c.der == own.der and c.state == "valid" for c in found):
        _say(f"certificate {own.serial} of {address} is on chain already")
        return
    if found:
        raise CommandFailed(
            f"certificate {own.serial} is on chain but {found[0].state}: `{PROG} generate --force`"
        )
    key = f"create-certificate/{own.serial}"
    pem = own.pem.decode()
    message = CreateCertificate(cert_pem=pem, pubkey_pem=chain_pubkey_pem(own.cert).decode())
    try:
        outcome = await broadcast_once(bus, key, [message], timeout=timeout)
    except NoAnswer as exc:
        raise CommandFailed(str(exc)) from None
    result = outcome.result
    if isinstance(result, TxFailed) and outcome.earlier:
        raise CommandFailed(
            f"{key} failed earlier ({result.codespace or 'sdk'} {result.code}: {result.log}); "
            f"make a new certificate with `{PROG} generate --force` and publish that"
        )
    if isinstance(result, TxFailed):
        raise CommandFailed(
            f"the chain refused the certificate ({result.codespace or 'sdk'} {result.code}): "
            f"{result.log}"
        )
    _say(
        f"certificate {own.serial} of {address} published "
        f"(tx {result.tx_hash}, height {result.height})"
    )


def parser() -> argparse.ArgumentParser:
    argp = argparse.ArgumentParser(prog=PROG, description="the provider's TLS certificate")
    commands = argp.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="write <AP_GATEWAY_TLS_DIR>/<address>.pem")
    gen.add_argument("hosts", nargs="*", help="more host names or IPs for the certificate")
    gen.add_argument("--force", action="store_true", help="replace an existing certificate")
    gen.add_argument(
        "--valid-days", type=int, default=SERVER_CERT_DAYS, help="validity (default: %(default)s)"
    )
    pub = commands.add_parser("publish", help="put the certificate on chain via the chain relay")
    pub.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait (default: %(default)s)"
    )
    return argp


async def _run(args: argparse.Namespace, settings: GatewaySettings, redis: RedisSettings) -> None:
    bus = Bus.connect(redis, producer=f"gateway-cert-{os.getpid()}")
    try:
        if args.command == "generate":
            await generate(settings, bus, args.hosts, force=args.force, days=args.valid_days)
        else:
            await publish(settings, bus, timeout=args.timeout)
    finally:
        await bus.close()


def main(argv: Sequence[str]) -> NoReturn:
    args = parser().parse_args(argv)
    if args.command == "generate" and args.valid_days < 1:
        _say(f"{PROG}: --valid-days must be at least 1", err=True)
        sys.exit(2)
    try:
        config = load_config(GatewaySettings, runtime_settings("gateway", "0.0.0.0:8095"))
    except SettingsError as exc:
        for problem in exc.problems:
            _say(f"{PROG}: {problem}", err=True)
        sys.exit(2)
    try:
        asyncio.run(_run(args, config.service, config.redis))
    except (CommandFailed, CertificateFileError, ConnectionLost, ChainError, OSError) as exc:
        _say(f"{PROG} {args.command}: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(1)
    sys.exit(0)
