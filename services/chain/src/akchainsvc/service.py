"""The chain relay process: wiring, readiness and status, on the shared service runtime.

Start: unlock the key, wait for the node (Redis was waited for by the runtime), check the
chain id, take the relay's lease for the key (``akchainsvc:relay-lease:<address>``; a second
relay waits there as a hot standby, ready, until the lease expires), then run the event
relay, the transaction pipeline (a consumer in group ``chain`` on
``akash.provider.chain.tx``, one command key at a time) and the status publisher. The
runtime serves ``/healthz``, ``/readyz`` and ``/metrics`` (``AP_CHAIN_HEALTH_LISTEN``) and
drains on SIGTERM: commands in flight finish within the drain timeout, the rest stay
pending for the next start.
"""

from __future__ import annotations

import logging
import time

from akchain.errors import ChainError, KeyFileError, NodeUnavailable
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from akchainsvc import metrics
from akchainsvc.adapters.ingest import EventRelay
from akchainsvc.handlers import TxPipeline
from akchainsvc.settings import ChainSettings
from akservice import Runtime, ServiceSpec
from akservice.leadership import RedisLease
from aktypes.events import BroadcastTx, ChainStatus
from aktypes.events.streams import CHAIN_TX

log = logging.getLogger("akchainsvc")


def relay_lease_key(address: str) -> str:
    """The lease one relay per provider account holds while it relays and broadcasts."""
    return f"akchainsvc:relay-lease:{address}"


class ChainRelay:
    """The relay's parts and what its readiness and status are made of."""

    def __init__(self, rt: Runtime[ChainSettings]) -> None:
        self.rt = rt
        self.settings = rt.settings
        self.relay: EventRelay | None = None
        self.pipeline: TxPipeline | None = None
        self.node_error = ""
        self.node_seen = 0.0
        self.address = ""

    def not_ready(self) -> list[str]:
        problems = []
        if self.relay is None or self.relay.height == 0:
            problems.append("not following the chain yet")
        if time.monotonic() - self.node_seen > max(30.0, 3 * self.settings.status_interval):
            problems.append(
                f"node {self.settings.node} not reached recently: {self.node_error or 'never'}"
            )
        return problems

    def on_node_error(self, exc: Exception) -> None:
        self.node_error = str(exc)

    async def node_status(self, rpc: RPCClient) -> str:
        status = await rpc.status()
        self.node_seen = time.monotonic()
        if self.settings.chain_id and status.chain_id != self.settings.chain_id:
            raise ChainError(
                f"the node at {self.settings.node} serves chain {status.chain_id!r}, "
                f"AP_CHAIN_ID says {self.settings.chain_id!r}"
            )
        return status.chain_id

    async def status(self) -> ChainStatus | None:
        relay, pipeline = self.relay, self.pipeline
        if relay is None or pipeline is None:
            return None
        error = pipeline.last_error or self.node_error
        metrics.PENDING_TXS.set(pipeline.in_flight)
        if relay.node_height:
            self.node_seen = time.monotonic()
        return ChainStatus(
            height=relay.height,
            node_height=max(relay.node_height, relay.height),
            pending_txs=pipeline.in_flight,
            last_error=error[:500],
            provider=self.address,
            leader=self.rt.consumer,
        )


async def start(rt: Runtime[ChainSettings]) -> None:
    settings = rt.settings
    signer = Signer.load(settings.key_file, settings.passphrase())
    log.info("chain relay for provider %s", signer.address)
    relay = ChainRelay(rt)
    relay.address = signer.address
    rpc = await rt.resource(RPCClient(settings.node))
    lcd = await rt.resource(LCDClient(settings.api))
    chain_id = await rt.wait_for(
        f"the node at {settings.node}",
        lambda: relay.node_status(rpc),
        retry_on=(NodeUnavailable,),
    )
    lease = RedisLease(
        rt.bus,
        relay_lease_key(signer.address),
        rt.consumer,
        settings.leader_election_lease_duration,
    )
    await rt.lead(lease, settings)
    rt.readiness(relay.not_ready)
    relay.relay = EventRelay(
        rt.bus,
        rpc,
        signer.address,
        start_height=settings.events_start_height,
        poll_interval=settings.events_poll_interval,
        on_error=relay.on_node_error,
        fence=lease.fence,
    )
    relay.pipeline = TxPipeline(
        rt.bus,
        rpc,
        lcd,
        signer,
        chain_id=chain_id,
        fee=settings.fee,
        commit_timeout=settings.tx_broadcast_timeout,
        poll_interval=settings.tx_poll_interval,
        max_attempts=settings.tx_max_attempts,
        fence=lease.fence,
    )
    # only the leader consumes: a consumer silent for a lease's duration is a dead leader,
    # whose commands in flight are taken over now rather than after AKBUS_CLAIM_IDLE_S
    commands = rt.subscriber(
        CHAIN_TX,
        partition_key=lambda envelope: getattr(envelope.payload, "key", None),
        concurrency=settings.tx_concurrency,
        claim_idle_s=min(rt.config.bus.claim_idle_s, settings.leader_election_lease_duration),
    )
    commands.add(BroadcastTx, relay.pipeline.handle)
    rt.supervise(relay.relay.run(), "relay")
    rt.publish_status(relay.status, settings.status_interval)


SPEC = ServiceSpec(
    name="chain",
    title="chain relay",
    summary="chain events in exactly once, the provider's transactions out",
    distribution="akchainsvc",
    settings=ChainSettings,
    health_listen="0.0.0.0:8091",
    start=start,
    fatal=(ChainError, KeyFileError),
)
