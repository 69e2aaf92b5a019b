"""What a tenant does, as Akash's own tools do it: certificate, deployment from an SDL, bids,
lease on the cheapest bid (or on a chosen provider's), manifest to the provider, close.

Works against any node speaking the RPC/LCD subset (this devnet by default). Akash prices
and funds deployments in ``uact``; an SDL priced in ``uakt`` is re-denominated at 1:1 by
default (``price_denom``), which leaves the manifest and its hash unchanged.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from akchain import jwt, msgs
from akchain.errors import NotFound
from akchain.lcd import LCDClient
from akchain.models import Bid
from akchain.wallet import Wallet
from aktypes.coin import Coin, DecCoin
from aktypes.groupspec import GroupSpec
from aktypes.ids import DeploymentID, LeaseID
from aktypes.sdl import SDL

DEFAULT_DEPOSIT = Coin(denom="uact", amount=5_000_000)


def with_price_denom(
    groups: tuple[GroupSpec, ...] | list[GroupSpec], denom: str
) -> list[GroupSpec]:
    """The groups with every unit price in ``denom`` (same amounts)."""
    return [
        group.model_copy(
            update={
                "resources": [
                    unit.model_copy(
                        update={"price": DecCoin(denom=denom, amount=unit.price.amount)}
                    )
                    for unit in group.resources
                ]
            }
        )
        for group in groups
    ]


@dataclass(frozen=True)
class ClientCertificate:
    """A tenant's mTLS certificate (published on chain) and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes

    def save(self, directory: Path, name: str) -> tuple[Path, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
        cert_path.write_bytes(self.cert_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(self.key_pem)
        return cert_path, key_path


def make_client_certificate(owner: str, *, days: int = 365) -> tuple[ClientCertificate, bytes]:
    """A self-signed P-256 certificate for ``owner`` and its ``EC PUBLIC KEY`` PEM, as Akash's
    CLI makes a client certificate (``tx cert generate client``): serial = the time in
    nanoseconds, ``keyUsage`` = keyEncipherment + dataEncipherment (no digitalSignature),
    ``extKeyUsage`` clientAuth, ``basicConstraints`` CA:FALSE (critical)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, owner)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(time.time_ns())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(
            x509.KeyUsage(False, False, True, True, False, False, False, False, False),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pubkey_pem = (
        b"-----BEGIN EC PUBLIC KEY-----\n" + _wrap64(der) + b"-----END EC PUBLIC KEY-----\n"
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ClientCertificate(cert.public_bytes(serialization.Encoding.PEM), key_pem), pubkey_pem


def _wrap64(der: bytes) -> bytes:
    import base64  # noqa: PLC0415

    text = base64.b64encode(der)
    return b"".join(text[i : i + 64] + b"\n" for i in range(0, len(text), 64))


class Tenant:
    """One tenant account's deployments."""

    def __init__(self, wallet: Wallet, lcd: LCDClient) -> None:
        self.wallet = wallet
        self.lcd = lcd

    @property
    def address(self) -> str:
        return self.wallet.address

    async def create_certificate(self) -> ClientCertificate:
        certificate, pubkey_pem = make_client_certificate(self.address)
        await self.wallet.send(
            msgs.create_certificate(self.address, certificate.cert_pem, pubkey_pem)
        )
        return certificate

    async def deploy(
        self,
        sdl: SDL,
        *,
        dseq: int | None = None,
        deposit: Coin = DEFAULT_DEPOSIT,
        price_denom: str | None = "uact",
    ) -> DeploymentID:
        """Create the deployment; ``dseq`` defaults to the current height, as Akash's CLI does."""
        if dseq is None:
            dseq = (await self.wallet.rpc.status()).latest_height
        groups = with_price_denom(sdl.groups, price_denom) if price_denom else list(sdl.groups)
        deployment_id = DeploymentID(owner=self.address, dseq=dseq)
        await self.wallet.send(
            msgs.create_deployment(deployment_id, groups, sdl.manifest_version, deposit)
        )
        return deployment_id

    async def bids(
        self, dseq: int, *, state: str | None = "open", provider: str | None = None
    ) -> list[Bid]:
        return await self.lcd.bids(owner=self.address, dseq=dseq, provider=provider, state=state)

    async def check_active(self, dseq: int) -> None:
        """``LookupError`` saying why, unless this tenant has an active deployment ``dseq``."""
        try:
            found = await self.lcd.deployment(DeploymentID(owner=self.address, dseq=dseq))
        except NotFound:
            raise LookupError(f"deployment {dseq} does not exist (owner {self.address})") from None
        if found.state != "active":
            raise LookupError(f"deployment {dseq} is {found.state}")

    async def wait_for_bids(
        self, dseq: int, *, provider: str | None = None, timeout: float = 30.0, poll: float = 0.2
    ) -> list[Bid]:
        """Open bids once every open order of the deployment has at least one (from
        ``provider``, when given: then only its bids are returned).

        ``LookupError`` at once when the deployment does not exist, is closed or has no open
        order left to bid on.
        """
        await self.check_active(dseq)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            orders = await self.lcd.orders(owner=self.address, dseq=dseq, state="open")
            if not orders:
                await self.check_active(dseq)
                raise LookupError(
                    f"deployment {dseq} has no open order (they are leased or closed)"
                )
            bids = await self.bids(dseq, provider=provider)
            covered = {(b.id.gseq, b.id.oseq) for b in bids}
            if all((o.id.gseq, o.id.oseq) in covered for o in orders):
                return bids
            if asyncio.get_running_loop().time() >= deadline:
                bidder = f" from {provider}" if provider else ""
                raise TimeoutError(
                    f"deployment {dseq}: no bid{bidder} on every order after {timeout:.0f}s"
                )
            await asyncio.sleep(poll)

    async def accept_cheapest(self, dseq: int) -> list[LeaseID]:
        """Create a lease on the cheapest open bid of each open order (one transaction)."""
        best: dict[tuple[int, int], Bid] = {}
        for bid in await self.bids(dseq):
            slot = (bid.id.gseq, bid.id.oseq)
            if slot not in best or bid.price.amount < best[slot].price.amount:
                best[slot] = bid
        if not best:
            raise LookupError(f"deployment {dseq} has no open bids")
        return await self._lease([best[slot] for slot in sorted(best)])

    async def accept(self, dseq: int, provider: str) -> list[LeaseID]:
        """Create a lease on ``provider``'s open bid of each open order it bid on (one
        transaction), whatever the other bids cost.

        The chain then marks every other open bid of those orders lost and refunds its
        deposit, as Akash does. ``LookupError`` when ``provider`` has no open bid here.
        """
        bids = await self.bids(dseq, provider=provider)
        if not bids:
            raise LookupError(f"deployment {dseq} has no open bid from {provider}")
        return await self._lease(sorted(bids, key=lambda b: (b.id.gseq, b.id.oseq)))

    async def _lease(self, chosen: list[Bid]) -> list[LeaseID]:
        await self.wallet.send(*(msgs.create_lease(b.id) for b in chosen))
        return [b.id.lease_id for b in chosen]

    async def provider_certificates(self, provider: str) -> list[bytes]:
        """The PEM certificates ``provider`` has on chain and not revoked."""
        found = await self.lcd.certificates(owner=provider, state="valid")
        return [c.cert for c in found if c.state == "valid" and c.cert]

    async def gateway_context(
        self, certificate: ClientCertificate | None, provider: str | None
    ) -> ssl.SSLContext | bool:
        """TLS for a provider's gateway: our client certificate, if any; with ``provider``,
        the server must present one of that provider's on-chain certificates (as Akash's
        client checks), else any server certificate is taken (``False`` without either)."""
        if certificate is None and provider is None:
            return False
        context = ssl.create_default_context()
        context.check_hostname = False  # on-chain certificates name the account, not the host
        if provider is None:
            context.verify_mode = ssl.CERT_NONE
        else:
            trusted = await self.provider_certificates(provider)
            if not trusted:
                raise LookupError(f"provider {provider} has no valid certificate on chain")
            context.load_verify_locations(cadata=b"".join(trusted).decode())
            context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # exactly those certificates
        if certificate is not None:
            import tempfile  # noqa: PLC0415

            with tempfile.TemporaryDirectory() as tmp:
                cert_path, key_path = certificate.save(Path(tmp), "client")
                context.load_cert_chain(cert_path, key_path)
        return context

    def token(
        self,
        leases: jwt.Leases | dict[str, Any] | None = None,
        *,
        lifetime: dt.timedelta = dt.timedelta(minutes=15),
        now: dt.datetime | None = None,
    ) -> str:
        """A provider-API token (JWT, ES256K) of this tenant's account; full access unless
        ``leases`` says otherwise (Akash's claims: ``{"access": "scoped", "scope": [...]}``)."""
        return jwt.mint(
            self.wallet.signer, leases or {"access": "full"}, lifetime=lifetime, now=now
        )

    async def gateway_request(
        self,
        method: str,
        url: str,
        *,
        certificate: ClientCertificate | None = None,
        provider: str | None = None,
        body: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """One request to a provider's gateway: the HTTP status and the body (parsed JSON,
        else text; None when empty). ``token`` goes in ``Authorization: Bearer``."""
        context = await self.gateway_context(certificate, provider)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.request(method, url, data=body, headers=headers, ssl=context) as response,
        ):
            raw = await response.read()
            status = response.status
        if not raw:
            return status, None
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    async def send_manifest(
        self,
        dseq: int,
        sdl: SDL,
        provider_url: str,
        *,
        certificate: ClientCertificate | None = None,
        provider: str | None = None,
        timeout: float = 30.0,
    ) -> int:
        """PUT the manifest to the provider's gateway; the HTTP status (200 when accepted).

        With ``provider``, the gateway must present that provider's on-chain certificate.
        """
        status, _ = await self.send_manifest_answer(
            dseq, sdl, provider_url, certificate=certificate, provider=provider, timeout=timeout
        )
        return status

    async def send_manifest_answer(
        self,
        dseq: int,
        sdl: SDL,
        provider_url: str,
        *,
        certificate: ClientCertificate | None = None,
        provider: str | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """Like :meth:`send_manifest`; the status and the gateway's answer."""
        body = json.dumps(sdl.manifest.go_json(), separators=(",", ":"))
        url = f"{provider_url.rstrip('/')}/deployment/{dseq}/manifest"
        return await self.gateway_request(
            "PUT", url, certificate=certificate, provider=provider, body=body, timeout=timeout
        )

    def _lease_url(self, provider_url: str, dseq: int, gseq: int, oseq: int) -> str:
        return f"{provider_url.rstrip('/')}/lease/{dseq}/{gseq}/{oseq}"

    async def lease_status(
        self,
        dseq: int,
        gseq: int,
        oseq: int,
        provider_url: str,
        certificate: ClientCertificate,
        *,
        provider: str | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """``GET /lease/{dseq}/{gseq}/{oseq}/status``: services, forwarded ports, IPs."""
        url = f"{self._lease_url(provider_url, dseq, gseq, oseq)}/status"
        return await self.gateway_request(
            "GET", url, certificate=certificate, provider=provider, timeout=timeout
        )

    async def service_status(  # noqa: PLR0917 - the lease path, then the service
        self,
        dseq: int,
        gseq: int,
        oseq: int,
        service: str,
        provider_url: str,
        certificate: ClientCertificate,
        *,
        provider: str | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """``GET /lease/{dseq}/{gseq}/{oseq}/service/{service}/status``."""
        name = urllib.parse.quote(service, safe="")
        url = f"{self._lease_url(provider_url, dseq, gseq, oseq)}/service/{name}/status"
        return await self.gateway_request(
            "GET", url, certificate=certificate, provider=provider, timeout=timeout
        )

    async def lease_manifest(
        self,
        dseq: int,
        gseq: int,
        oseq: int,
        provider_url: str,
        certificate: ClientCertificate,
        *,
        provider: str | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """``GET /lease/{dseq}/{gseq}/{oseq}/manifest``: the manifest group deployed."""
        url = f"{self._lease_url(provider_url, dseq, gseq, oseq)}/manifest"
        return await self.gateway_request(
            "GET", url, certificate=certificate, provider=provider, timeout=timeout
        )

    async def close(self, dseq: int) -> None:
        await self.wallet.send(msgs.close_deployment(DeploymentID(owner=self.address, dseq=dseq)))
