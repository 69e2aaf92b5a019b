"""A real devnet process for tests: its own home, free ports (RPC, LCD, gRPC), fast blocks, kill
and restart.

    with DevnetProcess(tmp_path / "devnet", block_time="20ms") as devnet:
        devnet.rpc_url, devnet.lcd_url, devnet.signer("tenant-1")

The pytest plugin (:mod:`akdevnet.pytest_plugin`) offers it as the ``devnet`` fixture.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from akchain import msgs
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from akchain.wallet import Wallet
from akdevnet.node import init_home
from akdevnet.settings import DevnetSettings
from akdevnet.tenant import Tenant
from akservice.testing import ServiceProcess, child_environment, eventually_sync, free_port
from aktypes.attributes import Attribute

TEST_PASSPHRASE = "devnet"  # noqa: S105 - throwaway keys of a test chain


class DevnetProcess(ServiceProcess):
    """``python -m akdevnet start`` in a subprocess, on free ports."""

    def __init__(
        self,
        home: Path,
        *,
        block_time: str = "20ms",
        tenants: int = 3,
        provider_host_uri: str = "https://localhost:8443",
    ) -> None:
        self.home = home
        self.block_time = block_time
        self.rpc_port, self.lcd_port, self.grpc_port = free_port(), free_port(), free_port()
        self.settings = DevnetSettings(
            home=home,
            rpc_listen=f"127.0.0.1:{self.rpc_port}",
            lcd_listen=f"127.0.0.1:{self.lcd_port}",
            grpc_listen=f"127.0.0.1:{self.grpc_port}",
            key_passphrase=TEST_PASSPHRASE,  # type: ignore[arg-type]
        )
        if not self.settings.genesis_path.exists():
            init_home(
                self.settings, tenants=tenants, provider_host_uri=provider_host_uri, scrypt_n=2**10
            )
        command = [
            sys.executable, "-m", "akdevnet", "start", "--home", str(home),
            "--rpc", self.settings.rpc_listen, "--lcd", self.settings.lcd_listen,
            "--grpc", self.settings.grpc_listen,
            "--block-time", block_time,
        ]  # fmt: skip
        super().__init__(
            command,
            log_path=home / "devnet.log",
            ready=self._produces_blocks,
            env=child_environment(AKDEVNET_KEY_PASSPHRASE=TEST_PASSPHRASE),
            name="devnet",
        )

    def _produces_blocks(self) -> bool:
        try:
            return self.height() > 0
        except (OSError, ValueError, KeyError):
            return False

    @property
    def rpc_url(self) -> str:
        return f"http://127.0.0.1:{self.rpc_port}"

    @property
    def lcd_url(self) -> str:
        return f"http://127.0.0.1:{self.lcd_port}"

    @property
    def grpc_url(self) -> str:
        """Cosmos gRPC queries (plain HTTP/2, as chain-sdk's ``createChainNodeSDK`` reads)."""
        return f"http://127.0.0.1:{self.grpc_port}"

    def key_path(self, name: str) -> Path:
        return self.settings.keys_dir / f"{name}.json"

    def signer(self, name: str) -> Signer:
        return Signer.load(self.key_path(name), TEST_PASSPHRASE)

    def height(self) -> int:
        with urllib.request.urlopen(f"{self.rpc_url}/status", timeout=2) as response:  # noqa: S310 - local URL
            return int(json.load(response)["result"]["sync_info"]["latest_block_height"])

    def wait_height(self, height: int, timeout: float = 60.0) -> int:
        def reached() -> int:
            current = self.height()
            return current if current >= height else 0

        return eventually_sync(reached, timeout_s=timeout, what=f"devnet at height {height}")

    def set_provider_attributes(self, attributes: dict[str, str], name: str = "provider") -> None:
        """Replace the attributes of provider ``name`` on chain (its host kept), committed
        when this returns; callable from inside an event loop."""

        async def run() -> None:
            async with self.clients() as clients:
                await clients.set_provider_attributes(attributes, name)

        with concurrent.futures.ThreadPoolExecutor(1) as thread:
            thread.submit(asyncio.run, run()).result()

    @asynccontextmanager
    async def clients(self) -> AsyncIterator[DevnetClients]:
        """RPC and LCD clients on this devnet, and wallets for its keys."""
        async with RPCClient(self.rpc_url) as rpc, LCDClient(self.lcd_url) as lcd:
            status = await rpc.status()
            yield DevnetClients(self, rpc, lcd, status.chain_id)


@dataclass
class DevnetClients:
    devnet: DevnetProcess
    rpc: RPCClient
    lcd: LCDClient
    chain_id: str

    def wallet(self, name: str) -> Wallet:
        return Wallet(self.devnet.signer(name), self.rpc, self.lcd, chain_id=self.chain_id)

    def tenant(self, name: str = "tenant-1") -> Tenant:
        return Tenant(self.wallet(name), self.lcd)

    async def set_provider_attributes(
        self, attributes: dict[str, str], name: str = "provider"
    ) -> None:
        """Replace the attributes of provider ``name`` on chain, its host kept."""
        wallet = self.wallet(name)
        current = await self.lcd.provider(wallet.address)
        listed = [Attribute(key=k, value=v) for k, v in attributes.items()]
        await wallet.send(msgs.update_provider(wallet.address, current.host_uri, listed))
