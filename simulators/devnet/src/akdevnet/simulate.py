"""Simulated tenants: each deploys a random SDL from a folder, takes the cheapest bid, sends
the manifest (over mTLS, with a client certificate published on chain) when a provider URL
is given, keeps the lease a while, closes, and starts over.

Keeps a local chain busy the way real tenants would, for demos and soak tests.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from akchain import msgs
from akchain.errors import ChainError
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from akchain.wallet import Wallet
from akdevnet.tenant import ClientCertificate, Tenant
from aktypes.coin import Coin
from aktypes.errors import SDLError
from aktypes.sdl import SDL, parse_sdl

log = logging.getLogger("akdevnet.simulate")


def load_sdls(folder: Path) -> list[tuple[str, SDL]]:
    """Every SDL under ``folder`` that parses (``*.yaml``/``*.yml``), by relative path."""
    found = []
    for path in sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")]):
        try:
            found.append(
                (str(path.relative_to(folder)), parse_sdl(path.read_text(errors="replace")))
            )
        except SDLError:
            continue
    return found


@dataclass
class Stats:
    deployments: int = 0
    leases: int = 0
    manifests: int = 0
    closed: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Simulation:
    rpc: RPCClient
    lcd: LCDClient
    chain_id: str
    faucet: Signer
    sdls: Sequence[tuple[str, SDL]]
    provider_url: str | None = None
    hold: tuple[float, float] = (5.0, 30.0)
    bid_timeout: float = 30.0
    stats: Stats = field(default_factory=Stats)
    certificates: dict[str, ClientCertificate] = field(default_factory=dict)

    async def _funded_tenant(self, faucet: Wallet) -> Tenant:
        signer = Signer.generate()
        await faucet.send(
            msgs.send(
                faucet.address,
                signer.address,
                [Coin(denom="uakt", amount=10**9), Coin(denom="uact", amount=10**9)],
            )
        )
        tenant = Tenant(Wallet(signer, self.rpc, self.lcd, chain_id=self.chain_id), self.lcd)
        if self.provider_url:  # gateways take manifests only over mTLS
            self.certificates[tenant.address] = await tenant.create_certificate()
        return tenant

    async def _one_round(self, tenant: Tenant, rng: random.Random) -> None:
        name, sdl = rng.choice(list(self.sdls))
        deployment = await tenant.deploy(sdl)
        self.stats.deployments += 1
        log.info("tenant %s deployed %s as dseq %d", tenant.address, name, deployment.dseq)
        try:
            await tenant.wait_for_bids(deployment.dseq, timeout=self.bid_timeout)
            leases = await tenant.accept_cheapest(deployment.dseq)
            self.stats.leases += len(leases)
            if self.provider_url:
                status, answer = await tenant.send_manifest_answer(
                    deployment.dseq,
                    sdl,
                    self.provider_url,
                    certificate=self.certificates.get(tenant.address),
                )
                if status == 200:
                    self.stats.manifests += 1
                    log.info(
                        "tenant %s: manifest of dseq %d accepted", tenant.address, deployment.dseq
                    )
                else:
                    self.stats.errors.append(
                        f"dseq {deployment.dseq}: manifest refused with HTTP {status}: {answer}"
                    )
            await asyncio.sleep(rng.uniform(*self.hold))
        except (TimeoutError, LookupError) as exc:  # no bids in time; deployment gone
            self.stats.errors.append(str(exc))
        await tenant.close(deployment.dseq)
        self.stats.closed += 1

    async def run(
        self, tenants: int, *, rounds: int | None = None, seed: int | None = None
    ) -> Stats:
        """Run ``tenants`` tenants for ``rounds`` rounds each (forever when ``None``)."""
        if not self.sdls:
            raise ValueError("no valid SDL to deploy")
        faucet = Wallet(self.faucet, self.rpc, self.lcd, chain_id=self.chain_id)
        people = [await self._funded_tenant(faucet) for _ in range(tenants)]

        async def live(tenant: Tenant, index: int) -> None:
            rng = random.Random(None if seed is None else seed + index)  # noqa: S311 - simulation
            done = 0
            while rounds is None or done < rounds:
                try:
                    await self._one_round(tenant, rng)
                except (ChainError, OSError) as exc:
                    self.stats.errors.append(f"{tenant.address}: {exc}")
                    log.warning("tenant %s: %s", tenant.address, exc)
                    await asyncio.sleep(1.0)
                done += 1

        await asyncio.gather(*(live(t, i) for i, t in enumerate(people)))
        return self.stats
