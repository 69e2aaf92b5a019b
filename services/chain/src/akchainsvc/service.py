"""The chain relay process: wiring and lifecycle.

Start: unlock the key, wait for Redis and the node (with backoff), check the chain id, then
run the event relay, the transaction pipeline (a consumer in group ``chain`` on
``akash.provider.chain.tx``, one command key at a time) and the status publisher, and
serve ``/healthz``, ``/readyz`` and ``/metrics``. SIGTERM: stop taking commands, let those
in flight finish within the drain timeout, leave the rest pending for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time

from aiohttp import web

from akbus import Bus, BusSettings, RedisSettings
from akchain.errors import ChainError, NodeUnavailable
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from akchainsvc import metrics
from akchainsvc.health import health_app
from akchainsvc.ingest import EventRelay
from akchainsvc.pipeline import TxPipeline
from akchainsvc.settings import ChainSettings
from aktypes.events import BroadcastTx, ChainStatus
from aktypes.events.streams import CHAIN_TX

log = logging.getLogger("akchainsvc")

GROUP = "chain"


class ChainService:
    def __init__(
        self,
        settings: ChainSettings,
        redis: RedisSettings,
        bus_settings: BusSettings | None = None,
        *,
        consumer: str | None = None,
    ) -> None:
        self.settings = settings
        self.redis = redis
        self.bus_settings = (bus_settings or BusSettings()).model_copy(
            update={"concurrency": settings.tx_concurrency}
        )
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}"
        self._stop = asyncio.Event()
        self.relay: EventRelay | None = None
        self.pipeline: TxPipeline | None = None
        self._node_error = ""
        self._node_seen = 0.0

    def stop(self) -> None:
        self._stop.set()

    def _not_ready(self) -> list[str]:
        problems = []
        if self.relay is None or self.relay.height == 0:
            problems.append("not following the chain yet")
        if time.monotonic() - self._node_seen > max(30.0, 3 * self.settings.status_interval):
            problems.append(f"node not reached recently: {self._node_error or 'never'}")
        return problems

    async def _wait_for_node(self, rpc: RPCClient) -> str:
        delay = 0.2
        while not self._stop.is_set():
            try:
                status = await rpc.status()
            except NodeUnavailable as exc:
                log.warning("waiting for the node: %s", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            self._node_seen = time.monotonic()
            if self.settings.chain_id and status.chain_id != self.settings.chain_id:
                raise ChainError(
                    f"the node at {self.settings.node} serves chain {status.chain_id!r}, "
                    f"AP_CHAIN_ID says {self.settings.chain_id!r}"
                )
            return status.chain_id
        raise asyncio.CancelledError

    async def _publish_status(self, bus: Bus) -> None:
        while True:
            relay, pipeline = self.relay, self.pipeline
            if relay is not None and pipeline is not None:
                error = pipeline.last_error or self._node_error
                status = ChainStatus(
                    height=relay.height,
                    node_height=max(relay.node_height, relay.height),
                    pending_txs=pipeline.in_flight,
                    last_error=error[:500],
                )
                metrics.PENDING_TXS.set(pipeline.in_flight)
                with contextlib.suppress(Exception):
                    await bus.publish_status("chain", status)
                if relay.node_height:
                    self._node_seen = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.settings.status_interval)
            if self._stop.is_set():
                return

    def _on_node_error(self, exc: Exception) -> None:
        self._node_error = str(exc)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)
        signer = Signer.load(self.settings.key_file, self.settings.passphrase())
        log.info("chain relay for provider %s", signer.address)
        host, _, port = self.settings.health_listen.rpartition(":")
        runner = web.AppRunner(health_app(self._not_ready), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, int(port), reuse_address=True).start()
        bus = Bus.connect(self.redis, producer=f"chain-{self.consumer}", settings=self.bus_settings)
        try:
            async with RPCClient(self.settings.node) as rpc, LCDClient(self.settings.api) as lcd:
                await bus.wait_ready(timeout_s=3600)
                chain_id = await self._wait_for_node(rpc)
                self.relay = EventRelay(
                    bus,
                    rpc,
                    signer.address,
                    start_height=self.settings.events_start_height,
                    poll_interval=self.settings.events_poll_interval,
                    on_error=self._on_node_error,
                )
                self.pipeline = TxPipeline(
                    bus,
                    rpc,
                    lcd,
                    signer,
                    chain_id=chain_id,
                    fee=self.settings.fee,
                    commit_timeout=self.settings.tx_broadcast_timeout,
                    poll_interval=self.settings.tx_poll_interval,
                    max_attempts=self.settings.tx_max_attempts,
                )
                subscriber = bus.subscriber(
                    CHAIN_TX,
                    group=GROUP,
                    consumer=self.consumer,
                    partition_key=lambda envelope: getattr(envelope.payload, "key", None),
                )
                subscriber.add(BroadcastTx, self.pipeline.handle)
                tasks = [
                    asyncio.create_task(self.relay.run(), name="akchainsvc-relay"),
                    asyncio.create_task(subscriber.run(), name="akchainsvc-tx"),
                    asyncio.create_task(self._publish_status(bus), name="akchainsvc-status"),
                ]
                stop = asyncio.create_task(self._stop.wait())
                done, _ = await asyncio.wait([stop, *tasks], return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task is not stop and task.exception() is not None:
                        log.error(
                            "relay task %s failed", task.get_name(), exc_info=task.exception()
                        )
                await subscriber.stop()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                stop.cancel()
                failed = [t for t in done if t is not stop and not t.cancelled() and t.exception()]
                if failed:
                    raise failed[0].exception()  # type: ignore[misc]
        finally:
            await bus.close()
            await runner.cleanup()
