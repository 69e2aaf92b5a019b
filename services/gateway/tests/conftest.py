"""The gateway's test stack: Redis, the devnet, the chain relay and the gateway as
processes, with the manifest and cluster services played by stand-ins in the test process.

``stack`` is module-scoped (starting the processes is most of a module's time): tests use
their own deployments and tenants, and reset the stand-ins, so they do not interfere.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from akbus.embedded import EmbeddedRedis
from akchainsvc.testing import RelayProcess
from akdevnet.testing import TEST_PASSPHRASE, DevnetProcess
from akgateway.testing import Answer, GatewayProcess, StandIns, client_context, https_call
from akservice.testing import eventually_sync, free_port


@dataclass
class Stack:
    devnet: DevnetProcess
    relay: RelayProcess
    gateway: GatewayProcess
    services: StandIns
    redis_url: str
    provider: str
    tmp: Path

    @property
    def port(self) -> int:
        return self.gateway.port

    def call(
        self,
        method: str,
        path: str,
        *,
        cert: tuple[bytes, bytes] | None = None,
        context: ssl.SSLContext | None = None,
        **kwargs: Any,
    ) -> Answer:
        """A request as a tenant with ``cert`` (certificate and key PEM), or anonymous."""
        if context is None:
            context = client_context(*cert) if cert else client_context()
        return https_call(self.port, method, path, context=context, **kwargs)

    def wait_trusted(self, cert: tuple[bytes, bytes], timeout: float = 15.0) -> Answer:
        """The first answer to ``cert`` once the TLS layer takes it (just published)."""

        def attempt() -> Answer | None:
            try:
                return self.call("GET", "/lease/1/1/1/status", cert=cert)
            except (ssl.SSLError, ConnectionError):
                return None

        return eventually_sync(attempt, timeout_s=timeout, what="the gateway to trust a cert")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Redis, the devnet (its provider's host URI points at the gateway), the relay, the
    stand-ins, and the gateway with a certificate made and published by its commands."""
    tmp = tmp_path_factory.mktemp("gw", numbered=True)
    port = free_port()
    with EmbeddedRedis(tmp / "redis", aof=False) as redis:
        devnet = DevnetProcess(tmp / "devnet", provider_host_uri=f"https://127.0.0.1:{port}")
        relay = RelayProcess(
            redis_url=redis.url,
            node=devnet.rpc_url,
            api=devnet.lcd_url,
            key_file=devnet.key_path("provider"),
            passphrase=TEST_PASSPHRASE,
            log_path=tmp / "relay.log",
        )
        gateway = GatewayProcess(
            redis_url=redis.url,
            api=devnet.lcd_url,
            tls_dir=tmp / "tls",
            log_path=tmp / "gateway.log",
            port=port,
        )
        services = StandIns(redis.url)
        try:
            devnet.start()
            relay.start()
            gateway.certify()
            gateway.start()
            services.start()
            yield Stack(
                devnet, relay, gateway, services, redis.url, devnet.signer("provider").address, tmp
            )
        finally:
            services.stop()
            code = gateway.stop()
            relay.stop()
            devnet.stop()
    assert code == 0, gateway.log()[-3000:]
