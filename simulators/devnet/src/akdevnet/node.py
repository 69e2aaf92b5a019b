"""Running the devnet: create a home (keys + genesis), then produce blocks and serve the APIs.

``init_home`` writes encrypted key files for a faucet, a provider, a competitor, an auditor
and a few tenants, and a genesis that funds them and registers the provider and the
competitor (a second provider with the same audited attributes, to compete for orders).
``run`` locks the home (one devnet per home), opens the state (continuing at its height
after a restart), starts the RPC and LCD servers, records where they listen in the home and
makes a block every ``block_time`` until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from akchain.keys import Signer
from akdevnet import grpc_server
from akdevnet.app import App
from akdevnet.genesis import Genesis, GenesisAccount, GenesisAudit, GenesisProvider
from akdevnet.homedir import clear_endpoints, home_lock, write_endpoints
from akdevnet.lcd import LCDServer
from akdevnet.rpc import RPCServer
from akdevnet.settings import DevnetSettings, http_url, split_listen
from akdevnet.store import Database
from aktypes.capabilities import GPUOffer, Offer, capability_attributes

log = logging.getLogger("akdevnet")

EMBEDDED_OFFER = Offer(
    storage={"beta2": True, "beta3": True, "ram": False},
    gpus=frozenset({GPUOffer("nvidia", "a100", "80Gi", "sxm")}),
    ips=10,
)
"""What ``akash-provider run`` offers: kubesim's example nodes (simulators/kubesim/examples),
their ``beta2`` and ``beta3`` pools and the IP operator's pool (akcli.suite); a test keeps
the two in step (cli/tests/unit/test_embedded_capabilities.py)."""
PROVIDER_ATTRIBUTES = {
    "host": "akash",
    "region": "local",
    "tier": "community",
    "organization": "akash-provider-devnet",
    **capability_attributes(EMBEDDED_OFFER),
}
"""The genesis providers' attributes: the capabilities of what ``akash-provider run``
offers, so its capabilities check finds nothing to report."""
AUDITED_ATTRIBUTES = {"host": "akash", "region": "local", "tier": "community"}
AKASH_AUDITOR = "akash1365yvmc4s7awdyj3n2sav7xfx76adc6dnmlx63"
"""The auditor Akash's SDL templates name in ``signedBy``; it vouches for the devnet's provider."""
BIG = 1_000_000_000_000
PROVIDERS = ("provider", "competitor")
"""The genesis providers' account names: the daemon's own, and one that competes with it."""


@dataclass(frozen=True)
class Home:
    genesis: Genesis
    keys: dict[str, Path]


def init_home(
    settings: DevnetSettings,
    *,
    tenants: int = 3,
    provider_host_uri: str = "https://localhost:8443",
    competitor_host_uri: str = "https://localhost:8543",
    chain_id: str = "akash-devnet-1",
    force: bool = False,
    scrypt_n: int = 2**15,
) -> Home:
    """Write key files and a genesis under ``settings.home``; refuse to overwrite a chain.

    Two providers are registered: ``provider`` (the daemon's account, at
    ``provider_host_uri``) and ``competitor`` (same attributes and audits, at
    ``competitor_host_uri``), so tests can make a provider lose an order.
    """
    if settings.genesis_path.exists() and not force:
        raise FileExistsError(f"{settings.genesis_path} exists; use --force to start a new chain")
    if force:
        settings.state_path.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(f"{settings.state_path}{suffix}").unlink(missing_ok=True)
    names = ["faucet", *PROVIDERS, "auditor", *(f"tenant-{i}" for i in range(1, tenants + 1))]
    passphrase = settings.key_passphrase.get_secret_value()
    keys: dict[str, Path] = {}
    accounts = []
    for name in names:
        signer = Signer.generate()
        path = settings.keys_dir / f"{name}.json"
        signer.save(path, passphrase, name=name, scrypt_n=scrypt_n)
        keys[name] = path
        funds = {"uakt": BIG, "uact": BIG} if name == "faucet" else {"uakt": 10**10, "uact": 10**10}
        accounts.append(GenesisAccount(name=name, address=signer.address, balances=funds))
    genesis = Genesis(
        chain_id=chain_id,
        accounts=accounts,
        providers=[
            GenesisProvider(owner=owner, host_uri=uri, attributes=PROVIDER_ATTRIBUTES)
            for owner, uri in zip(PROVIDERS, (provider_host_uri, competitor_host_uri), strict=True)
        ],
        audits=[
            GenesisAudit(auditor=auditor, provider=owner, attributes=AUDITED_ATTRIBUTES)
            for owner in PROVIDERS
            for auditor in ("auditor", AKASH_AUDITOR)
        ],
    )
    genesis.dump(settings.genesis_path)
    return Home(genesis, keys)


class Node:
    """The devnet process: an :class:`App`, its block timer and its two HTTP servers."""

    def __init__(self, settings: DevnetSettings) -> None:
        self.settings = settings
        self.genesis = Genesis.load(settings.genesis_path)
        self.db = Database(settings.state_path)
        self.app = App(self.db, self.genesis)
        self.rpc = RPCServer(self.app, node_address=settings.rpc_listen)
        self.lcd = LCDServer(self.app)
        self._runners: list[web.AppRunner] = []
        self._grpc: grpc_server.Server | None = None
        self._stop = asyncio.Event()

    async def _serve(self, application: web.Application, listen: str) -> str:
        """Serve ``application`` on ``listen``; the URL it is reachable at (the bound port)."""
        host, port = split_listen(listen)
        runner = web.AppRunner(application, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        self._runners.append(runner)
        await web.TCPSite(runner, host, port, reuse_address=True).start()
        bound_host, bound_port = runner.addresses[0][:2]
        return http_url(host or bound_host, bound_port)

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)
        try:
            rpc_url = await self._serve(self.rpc.routes(), self.settings.rpc_listen)
            lcd_url = await self._serve(self.lcd.routes(), self.settings.lcd_listen)
            grpc_at = "off"
            if self.settings.grpc_listen:
                self._grpc, grpc_at = await grpc_server.serve(
                    self.rpc.queries, self.settings.grpc_listen
                )
            self.rpc.node_address = rpc_url.removeprefix("http://")
            write_endpoints(self.settings.home, rpc_url, lcd_url)
            log.info(
                "devnet %s at height %d: rpc %s, lcd %s, grpc %s, a block every %.3fs",
                self.app.chain_id,
                self.app.height,
                rpc_url,
                lcd_url,
                grpc_at,
                self.settings.block_time,
            )
            await self._blocks()
        finally:
            clear_endpoints(self.settings.home)
            await self.rpc.close_subscriptions()
            if self._grpc is not None:
                await self._grpc.stop(grace=0.5)
            for runner in self._runners:
                await runner.cleanup()
            self.db.close()
            log.info("devnet stopped at height %d", self.app.height)

    async def _blocks(self) -> None:
        interval = self.settings.block_time
        next_at = time.monotonic()
        while not self._stop.is_set():
            block = self.app.produce_block()
            self.rpc.announce(block)
            next_at = max(next_at + interval, time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=next_at - time.monotonic())


def run(settings: DevnetSettings, *, init_if_missing: bool = True) -> None:
    """Start the devnet in the foreground (creating its home first if there is none).

    ``HomeInUse`` when another devnet runs on the same home.
    """
    with home_lock(settings.home):
        if init_if_missing and not settings.genesis_path.exists():
            home = init_home(settings)
            log.info("created devnet home %s with keys %s", settings.home, ", ".join(home.keys))
        asyncio.run(Node(settings).run())
