"""The manifest service as a process, against the devnet, Redis and the chain relay.

One devnet, relay and manifest service for the module (the service learns the provider's
address from the relay's status); each test deploys from the corpus as tenant-1, bids as
the provider through the relay and takes the lease, then sends ``SubmitManifest`` as the
gateway does. The test plays the cluster (``CheckHostnames``) and, for watchdogs, the bid
engine (``LeaseWon``). ``AP_MANIFEST_TIMEOUT`` is 3s here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from akbus import Bus, Message, RedisSettings
from akbus.embedded import EmbeddedRedis
from akbus.testing import running
from akchain import msgs
from akchainsvc.testing import RelayProcess
from akdevnet.testing import TEST_PASSPHRASE, DevnetClients, DevnetProcess
from akmanifest.domain.records import WAITING_KEY
from akmanifest.testing import ManifestProcess
from akservice.testing import eventually
from aktypes.coin import Coin
from aktypes.events import (
    BroadcastTx,
    CheckHostnames,
    CreateBid,
    HostnamesChecked,
    LeaseClosedReason,
    LeaseWon,
    ManifestAccepted,
    ManifestReceived,
    ManifestRejected,
    ManifestStatus,
    ManifestTimedOut,
    SubmitManifest,
    TxCommitted,
    TxFailed,
    envelope_from_fields,
)
from aktypes.events.streams import (
    BIDENGINE_EVENTS,
    CHAIN_RESULTS,
    CHAIN_TX,
    CLUSTER_COMMANDS,
    MANIFEST_COMMANDS,
    MANIFEST_EVENTS,
)
from aktypes.ids import DeploymentID, LeaseID
from aktypes.manifest import Manifest
from aktypes.sdl import SDL

Reply = ManifestAccepted | ManifestRejected


@dataclass
class Stack:
    devnet: DevnetProcess
    relay: RelayProcess
    service: ManifestProcess
    redis_url: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, redis_server: EmbeddedRedis) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("manifest-stack")
    redis_server.flush()
    url = redis_server.url
    devnet = DevnetProcess(tmp / "devnet", provider_host_uri="https://Provider.test:8443")
    relay = RelayProcess(
        redis_url=url, node=devnet.rpc_url, api=devnet.lcd_url,
        key_file=devnet.key_path("provider"), passphrase=TEST_PASSPHRASE,
        log_path=tmp / "relay.log",
    )  # fmt: skip
    service = ManifestProcess(
        redis_url=url,
        api=devnet.lcd_url,
        log_path=tmp / "manifest.log",
        extra_env={
            "AP_MANIFEST_TIMEOUT": "3s",
            "AP_MANIFEST_HOSTNAME_CHECK_TIMEOUT": "1s",
            "AP_DEPLOYMENT_INGRESS_STATIC_HOSTS": "true",  # tetris' HTTP expose has no host
            "AKBUS_RETENTION_INTERVAL_S": "1",  # handled commands are trimmed within 1 s
        },
    )
    started: list[Any] = []
    try:
        for process in (devnet, relay, service):
            process.start()
            started.append(process)
        yield Stack(devnet, relay, service, url)
    finally:
        for process in reversed(started):
            process.stop()


@dataclass
class Cluster:
    """The test playing the cluster service's hostname check."""

    refuse: dict[str, str] = field(default_factory=dict)
    silent: bool = False

    async def check(self, msg: Message[CheckHostnames]) -> None:
        if self.silent:
            return
        refused = {h: self.refuse[h] for h in msg.payload.hostnames if h in self.refuse}
        await msg.reply(HostnamesChecked(refused=refused))


@dataclass
class World:
    bus: Bus
    chain: DevnetClients
    cluster: Cluster

    @property
    def provider(self) -> str:
        return self.chain.wallet("provider").address

    async def deploy(
        self,
        sdl: SDL,
        *,
        lease: bool = True,
        tenant: str = "tenant-1",
        version: bytes | None = None,
    ) -> tuple[DeploymentID, list[LeaseID]]:
        """A deployment of ``sdl`` (declaring ``version``), bid on by us and leased to us."""
        who = self.chain.tenant(tenant)
        if version is None:
            deployment = await who.deploy(sdl)
        else:
            dseq = (await who.wallet.rpc.status()).latest_height
            deployment = DeploymentID(owner=who.address, dseq=dseq)
            await who.wallet.send(
                msgs.create_deployment(
                    deployment, list(sdl.groups), version, Coin(denom="uact", amount=5_000_000)
                )
            )
        if not lease:
            return deployment, []
        key = f"test-bids/{deployment}"
        bids = [
            CreateBid(
                bid_id=deployment.group(gseq).order(1).bid(self.provider),
                price=spec.price(),
                deposit=Coin(denom="uakt", amount=500_000),
            )
            for gseq, spec in enumerate(sdl.groups, start=1)
        ]
        await self.bus.publish(CHAIN_TX, BroadcastTx(key=key, msgs=bids))

        async def result() -> Any:
            found = [p for p in await self.payloads(CHAIN_RESULTS) if getattr(p, "key", "") == key]
            return found[0] if found else None

        outcome = await eventually(result, timeout_s=20, what=f"our bids on {deployment}")
        assert isinstance(outcome, TxCommitted), outcome
        leases = await who.accept(deployment.dseq, self.provider)
        return deployment, leases

    async def submit(self, deployment: DeploymentID, manifest: Manifest) -> Reply:
        reply: Reply = await self.bus.request(
            MANIFEST_COMMANDS,
            SubmitManifest(deployment_id=deployment, manifest=manifest),
            (ManifestAccepted, ManifestRejected),
            timeout_s=20,
        )
        return reply

    async def rejected(self, deployment: DeploymentID, manifest: Manifest, code: str) -> str:
        reply = await self.submit(deployment, manifest)
        assert isinstance(reply, ManifestRejected), reply
        assert reply.code == code, reply.reason
        return reply.reason

    async def payloads(self, stream: str) -> list[Any]:
        return [
            envelope_from_fields(e.fields).payload for e in await self.bus.backend.entries(stream)
        ]

    async def received(self, deployment: DeploymentID) -> list[ManifestReceived]:
        return [
            p
            for p in await self.payloads(MANIFEST_EVENTS)
            if isinstance(p, ManifestReceived) and p.lease_id.deployment_id == deployment
        ]

    async def won(self, lease: LeaseID, sdl: SDL) -> None:
        price = (await self.chain.lcd.lease(lease)).price
        spec = sdl.groups[lease.gseq - 1]
        await self.bus.publish(BIDENGINE_EVENTS, LeaseWon(lease_id=lease, group=spec, price=price))


@pytest.fixture
async def world(stack: Stack) -> AsyncIterator[World]:
    bus = Bus.connect(RedisSettings(url=stack.redis_url), producer="test")
    cluster = Cluster()
    answers = bus.subscriber(CLUSTER_COMMANDS, group="cluster", consumer="test-cluster")
    answers.add(CheckHostnames, cluster.check)
    try:
        async with stack.devnet.clients() as chain, running(answers):
            yield World(bus, chain, cluster)
    finally:
        await bus.close()


def renamed(manifest: Manifest, old: str, new: str) -> Manifest:
    data = manifest.go_json()
    for group in data:
        for service in group["services"]:
            if service["name"] == old:
                service["name"] = new
            for expose in service["expose"] or ():
                if expose["service"] == old:
                    expose["service"] = new
        group["services"].sort(key=lambda s: s["name"])
    return Manifest.from_data(data)


async def test_a_manifest_goes_to_each_of_our_leases(
    world: World, two_groups: Callable[[str], SDL], corpus: Callable[[str], SDL]
) -> None:
    sdl = two_groups("tetris.yaml")
    deployment, leases = await world.deploy(sdl)
    assert len(leases) == 2
    reply = await world.submit(deployment, sdl.manifest)
    assert reply == ManifestAccepted(
        deployment_id=deployment, version=sdl.manifest_version.hex(), leases=leases
    )
    received = await world.received(deployment)
    assert [(r.lease_id, r.group) for r in received] == list(
        zip(leases, sdl.manifest.groups, strict=True)
    )
    assert await world.submit(deployment, sdl.manifest) == reply  # again: accepted again
    assert len(await world.received(deployment)) == 4

    ghost = corpus("ghost.yaml")  # with a hostname, checked with the cluster
    deployment, [lease] = await world.deploy(ghost)
    reply = await world.submit(deployment, ghost.manifest)
    assert isinstance(reply, ManifestAccepted) and reply.leases == [lease]

    async def status() -> int:
        found = await world.bus.status("manifest")
        assert found is not None and isinstance(found.payload, ManifestStatus)
        return found.payload.deployments

    await eventually(status, timeout_s=5, until=lambda n: n >= 2, what="status of 2 deployments")


async def test_manifests_the_chain_contradicts_are_refused(
    world: World, corpus: Callable[[str], SDL]
) -> None:
    tetris, ghost = corpus("tetris.yaml"), corpus("ghost.yaml")
    deployment, _ = await world.deploy(tetris)
    reason = await world.rejected(deployment, ghost.manifest, "version_mismatch")
    assert ghost.manifest_version.hex() in reason and tetris.manifest_version.hex() in reason

    # a deployment whose hash is that of a manifest that does not fit its groups
    data = tetris.manifest.go_json()
    data[0]["services"][0]["count"] = 3
    greedy = Manifest.from_data(data)
    deployment, _ = await world.deploy(tetris, lease=False, version=greedy.version())
    reason = await world.rejected(deployment, greedy, "cross_validation")
    assert "service 'tetris': over-utilized replicas (3)" in reason

    deployment, _ = await world.deploy(tetris, lease=False)
    reason = await world.rejected(deployment, tetris.manifest, "no_lease")
    assert f"deployment {deployment.dseq} has no active lease" in reason

    unknown = DeploymentID(owner=deployment.owner, dseq=deployment.dseq + 10_000)
    await world.rejected(unknown, tetris.manifest, "deployment_not_found")
    theirs, _ = await world.deploy(tetris, lease=False, tenant="tenant-2")
    as_tenant_1 = DeploymentID(owner=deployment.owner, dseq=theirs.dseq)  # not tenant-1's
    reason = await world.rejected(as_tenant_1, tetris.manifest, "deployment_not_found")
    assert "does not exist" in reason

    rejected = [p for p in await world.payloads(MANIFEST_EVENTS) if isinstance(p, ManifestRejected)]
    assert [p.code for p in rejected][-5:] == [
        "version_mismatch", "cross_validation", "no_lease", "deployment_not_found",
        "deployment_not_found",
    ]  # fmt: skip


async def test_values_kubernetes_or_nginx_would_interpret_are_refused_and_leave_the_bus(
    world: World, corpus: Callable[[str], SDL]
) -> None:
    """A manifest that comes another way than through the gateway is checked the same, and
    no handled submission stays on the commands stream (a refused one at full size)."""
    data = corpus("tetris.yaml").manifest.go_json()
    data[0]["services"][0]["expose"][0]["httpOptions"]["nextCases"] = ["timeout;}\n#"]
    data[0]["services"][0]["expose"][0]["externalPort"] = 70000
    data[0]["services"][0]["env"] = ["PAD=" + "x" * 1_000_000]
    unknown = DeploymentID(owner=world.chain.tenant().address, dseq=999_999)
    reason = await world.rejected(unknown, Manifest.from_data(data), "invalid")
    assert "unknown next case 'timeout;}" in reason and "external port 70000" in reason

    async def commands_left() -> int:
        return await world.bus.backend.length(MANIFEST_COMMANDS)

    await eventually(commands_left, timeout_s=10, until=lambda n: n == 0, what="commands trimmed")


async def test_hostnames_refused_or_unchecked_by_the_cluster(
    world: World, corpus: Callable[[str], SDL]
) -> None:
    ghost = corpus("ghost.yaml")
    deployment, _ = await world.deploy(ghost)
    world.cluster.refuse = {"changeme.com": "used by another tenant's deployment"}
    reason = await world.rejected(deployment, ghost.manifest, "hostname_not_allowed")
    assert "changeme.com (group 'akash' service 'ghost' expose 2368/tcp)" in reason
    assert "used by another tenant's deployment" in reason

    # the provider's own host (its host URI's) is refused before the cluster is asked
    data = ghost.manifest.go_json()
    data[0]["services"][0]["expose"][0]["hosts"] = ["provider.test"]
    own = Manifest.from_data(data)
    ours, _ = await world.deploy(ghost, version=own.version())
    reason = await world.rejected(ours, own, "hostname_not_allowed")
    assert "provider.test (group 'akash' service 'ghost' expose 2368/tcp)" in reason
    assert "this provider's own host" in reason

    world.cluster.silent = True
    started = time.monotonic()
    await world.rejected(deployment, ghost.manifest, "cluster_unavailable")
    assert time.monotonic() - started < 5  # AP_MANIFEST_HOSTNAME_CHECK_TIMEOUT=1s
    assert await world.received(deployment) == []


async def test_an_update_that_renames_a_service_is_refused(
    world: World, corpus: Callable[[str], SDL]
) -> None:
    sdl = corpus("big-dipper.yaml")
    deployment, _ = await world.deploy(sdl)
    assert isinstance(await world.submit(deployment, sdl.manifest), ManifestAccepted)
    last = (sdl.manifest.groups[0].services or [])[-1].name
    update = renamed(sdl.manifest, last, "zz-renamed")
    await world.chain.tenant().wallet.send(msgs.update_deployment(deployment, update.version()))
    reason = await world.rejected(deployment, update, "services_changed")
    assert f"removed: {last}; added: zz-renamed" in reason


async def lease_closed(world: World, lease: LeaseID) -> Any:
    async def closed() -> Any:
        found = await world.chain.lcd.lease(lease)
        return found if found.state == "closed" else None

    return await eventually(closed, timeout_s=20, what=f"lease {lease} closed")


async def test_a_lease_without_manifest_is_closed_and_one_with_is_kept(
    world: World, corpus: Callable[[str], SDL]
) -> None:
    sdl = corpus("tetris.yaml")
    _, [forgotten] = await world.deploy(sdl)
    served, [kept] = await world.deploy(sdl)
    started = time.monotonic()
    await world.won(forgotten, sdl)
    await world.won(kept, sdl)
    assert isinstance(await world.submit(served, sdl.manifest), ManifestAccepted)
    closed = await lease_closed(world, forgotten)
    assert time.monotonic() - started >= 2.5
    assert closed.reason == LeaseClosedReason.MANIFEST_TIMEOUT
    assert (await world.chain.lcd.bid(forgotten.bid_id)).state == "closed"
    timed_out = [
        p for p in await world.payloads(MANIFEST_EVENTS) if isinstance(p, ManifestTimedOut)
    ]
    assert ManifestTimedOut(lease_id=forgotten) in timed_out
    assert ManifestTimedOut(lease_id=kept) not in timed_out
    assert (await world.chain.lcd.lease(kept)).state == "active"


async def test_a_deadline_survives_a_killed_service(
    stack: Stack, world: World, corpus: Callable[[str], SDL]
) -> None:
    sdl = corpus("tetris.yaml")
    _, [lease] = await world.deploy(sdl)
    await world.won(lease, sdl)

    async def waiting() -> bool:
        return str(lease) in await world.bus.backend.hgetall(WAITING_KEY)

    await eventually(waiting, timeout_s=5, what="the lease waiting for its manifest")
    deadline = float((await world.bus.backend.hgetall(WAITING_KEY))[str(lease)])
    stack.service.kill()
    assert time.time() < deadline  # killed before its deadline: the old process closed nothing
    await asyncio.to_thread(stack.service.start)  # the new one closes it, early or late
    closed = await lease_closed(world, lease)
    assert closed.reason == LeaseClosedReason.MANIFEST_TIMEOUT

    async def results() -> list[Any]:
        return [
            p
            for p in await world.payloads(CHAIN_RESULTS)
            if isinstance(p, TxCommitted | TxFailed) and p.key.endswith(f"/{lease}")
        ]

    found = await eventually(results, timeout_s=10, what="the close's result")
    assert [type(p) for p in found] == [TxCommitted]
    commands = [p for p in await world.payloads(CHAIN_TX) if p.key.endswith(f"/{lease}")]
    assert len(commands) == 1  # one close, whatever the kill interrupted
