"""A real devnet process for tests: its own home, free ports, fast blocks, kill and restart.

    with DevnetProcess(tmp_path / "devnet", block_time="20ms") as devnet:
        devnet.rpc_url, devnet.lcd_url, devnet.signer("tenant-1")

The pytest plugin (:mod:`akdevnet.pytest_plugin`) offers it as the ``devnet`` fixture.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from akchain.wallet import Wallet
from akdevnet.node import init_home
from akdevnet.settings import DevnetSettings
from akdevnet.tenant import Tenant

TEST_PASSPHRASE = "devnet"  # noqa: S105 - throwaway keys of a test chain


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class DevnetProcess:
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
        self.rpc_port, self.lcd_port = free_port(), free_port()
        self.settings = DevnetSettings(
            home=home,
            rpc_listen=f"127.0.0.1:{self.rpc_port}",
            lcd_listen=f"127.0.0.1:{self.lcd_port}",
            key_passphrase=TEST_PASSPHRASE,  # type: ignore[arg-type]
        )
        if not self.settings.genesis_path.exists():
            init_home(
                self.settings, tenants=tenants, provider_host_uri=provider_host_uri, scrypt_n=2**10
            )
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = home / "devnet.log"

    @property
    def rpc_url(self) -> str:
        return f"http://127.0.0.1:{self.rpc_port}"

    @property
    def lcd_url(self) -> str:
        return f"http://127.0.0.1:{self.lcd_port}"

    def key_path(self, name: str) -> Path:
        return self.settings.keys_dir / f"{name}.json"

    def signer(self, name: str) -> Signer:
        return Signer.load(self.key_path(name), TEST_PASSPHRASE)

    def start(self, timeout: float = 30.0) -> None:
        command = [
            sys.executable,
            "-m",
            "akdevnet",
            "start",
            "--home",
            str(self.home),
            "--rpc",
            self.settings.rpc_listen,
            "--lcd",
            self.settings.lcd_listen,
            "--block-time",
            self.block_time,
        ]
        env = {**os.environ, "AKDEVNET_KEY_PASSPHRASE": TEST_PASSPHRASE}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)  # noqa: S603
        self.wait_ready(timeout)

    def height(self) -> int:
        with urllib.request.urlopen(f"{self.rpc_url}/status", timeout=2) as response:  # noqa: S310 - local URL
            return int(json.load(response)["result"]["sync_info"]["latest_block_height"])

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"devnet exited with {self.process.returncode}: "
                    f"{self.log_path.read_text()[-2000:]}"
                )
            try:
                if self.height() > 0:
                    return
            except (OSError, urllib.error.URLError, ValueError, KeyError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"devnet not ready after {timeout}s: {self.log_path.read_text()[-2000:]}"
                )
            time.sleep(0.05)

    def wait_height(self, height: int, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while (current := self.height()) < height:
            if time.monotonic() > deadline:
                raise TimeoutError(f"devnet at height {current}, wanted {height}")
            time.sleep(0.02)
        return current

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self, sig: int = signal.SIGTERM) -> None:
        self.stop(sig)
        self.start()

    @asynccontextmanager
    async def clients(self) -> AsyncIterator[DevnetClients]:
        """RPC and LCD clients on this devnet, and wallets for its keys."""
        async with RPCClient(self.rpc_url) as rpc, LCDClient(self.lcd_url) as lcd:
            status = await rpc.status()
            yield DevnetClients(self, rpc, lcd, status.chain_id)

    def __enter__(self) -> DevnetProcess:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


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
