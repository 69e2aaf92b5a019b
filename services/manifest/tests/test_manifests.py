"""The manifest service's handlers on a real Redis, with an in-memory chain and cluster.

Submissions go through the bus as the gateway sends them (``bus.request`` on
``akash.provider.manifest.commands``); leases won, closed and deployments closed arrive as
events; the watchdog runs on a clock the test moves. The cross-process tests
(``test_manifest_process.py``) run the same code against the devnet.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from akbus import Bus, Message, RedisSettings
from akbus.testing import FAST_SETTINGS, eventually, running
from akmanifest.adapters.chain import CachedChain
from akmanifest.domain.checks import DeploymentFacts
from akmanifest.domain.records import DEADLINES_KEY, WAITING_KEY, close_bid_key
from akmanifest.handlers import Manifests, Policy
from akmanifest.service import deployment_of
from akmanifest.testing import MemoryChain
from aktypes.coin import DecCoin
from aktypes.events import (
    BroadcastTx,
    CheckHostnames,
    CloseBid,
    DeploymentClosed,
    DeploymentUpdated,
    HostnamesChecked,
    LeaseClosed,
    LeaseClosedReason,
    LeaseWon,
    ManifestAccepted,
    ManifestReceived,
    ManifestRejected,
    ManifestTimedOut,
    SubmitManifest,
    envelope_from_fields,
)
from aktypes.events.streams import (
    BIDENGINE_EVENTS,
    CHAIN_EVENTS,
    CHAIN_TX,
    CLUSTER_COMMANDS,
    MANIFEST_COMMANDS,
    MANIFEST_EVENTS,
)
from aktypes.ids import DeploymentID, LeaseID
from aktypes.manifest import Manifest
from aktypes.sdl import SDL
from aktypes.testing import address

PROVIDER, OTHER, OWNER = address(1), address(2), address(3)
TIMEOUT = 60.0
Reply = ManifestAccepted | ManifestRejected


@dataclass
class Cluster:
    """Answers ``CheckHostnames`` as the cluster service would, or not at all."""

    refuse: dict[str, str] = field(default_factory=dict)
    silent: bool = False
    asked: list[CheckHostnames] = field(default_factory=list)

    async def check(self, msg: Message[CheckHostnames]) -> None:
        self.asked.append(msg.payload)
        if self.silent:
            return
        refused = {h: self.refuse[h] for h in msg.payload.hostnames if h in self.refuse}
        await msg.reply(HostnamesChecked(refused=refused))


@dataclass
class Harness:
    bus: Bus
    manifests: Manifests
    chain: MemoryChain
    cluster: Cluster
    now: list[float]

    def deploy(self, sdl: SDL, dseq: int, *, gseqs: tuple[int, ...] = (1,)) -> list[LeaseID]:
        """Put the deployment of ``sdl`` on the chain with our leases on groups ``gseqs``."""
        deployment = DeploymentID(owner=OWNER, dseq=dseq)
        leases = [LeaseID(owner=OWNER, dseq=dseq, gseq=g, oseq=1, provider=PROVIDER) for g in gseqs]
        self.chain.deployments[str(deployment)] = DeploymentFacts(
            deployment_id=deployment,
            state="active",
            hash=sdl.manifest.version_hex(),
            groups=tuple(enumerate(sdl.groups, start=1)),
            leases=tuple(leases),
        )
        for lease in leases:
            self.chain.lease_states[str(lease)] = "active"
        return leases

    async def submit(self, dseq: int, manifest: Manifest, owner: str = OWNER) -> Reply:
        command = SubmitManifest(
            deployment_id=DeploymentID(owner=owner, dseq=dseq), manifest=manifest
        )
        reply: Reply = await self.bus.request(
            MANIFEST_COMMANDS, command, (ManifestAccepted, ManifestRejected), timeout_s=10
        )
        return reply

    async def rejected(self, dseq: int, manifest: Manifest, code: str) -> str:
        reply = await self.submit(dseq, manifest)
        assert isinstance(reply, ManifestRejected), reply
        assert reply.code == code, reply.reason
        return reply.reason

    async def on(self, stream: str, kind: type[Any]) -> list[Any]:
        entries = await self.bus.backend.entries(stream)
        payloads = [envelope_from_fields(e.fields).payload for e in entries]
        return [p for p in payloads if isinstance(p, kind)]

    async def closes(self) -> list[BroadcastTx]:
        return await self.on(CHAIN_TX, BroadcastTx)

    async def waiting(self) -> dict[str, str]:
        return await self.bus.backend.hgetall(WAITING_KEY)

    async def won(self, lease: LeaseID, group: str = "akash") -> None:
        spec = self.chain.deployments[str(lease.deployment_id)].groups[lease.gseq - 1][1]
        assert spec.name == group
        price = DecCoin(denom="uact", amount="1")
        await self.bus.publish(BIDENGINE_EVENTS, LeaseWon(lease_id=lease, group=spec, price=price))

    async def settled(self) -> None:
        """Wait until the service's groups have handled everything published so far."""

        async def idle() -> bool:
            for stream in (BIDENGINE_EVENTS, CHAIN_EVENTS, MANIFEST_COMMANDS):
                for group in await self.bus.backend.groups(stream):
                    if group.name == "manifest" and (group.pending or group.lag):
                        return False
            return True

        await eventually(idle, timeout_s=5, what="the manifest service idle")


def make_manifests(bus: Bus, chain: MemoryChain, now: list[float], timeout: float) -> Manifests:
    return Manifests(
        bus,
        CachedChain(chain, 5.0, clock=lambda: now[0]),
        Policy(provider=PROVIDER, manifest_timeout=timeout, hostname_check_timeout=0.5),
        clock=lambda: now[0],
    )


@pytest.fixture
def timeout() -> float:
    return TIMEOUT


@pytest.fixture
async def harness(redis_url: str, timeout: float) -> AsyncIterator[Harness]:
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test", settings=FAST_SETTINGS)
    chain, now, cluster = MemoryChain(), [1000.0], Cluster()
    manifests = make_manifests(bus, chain, now, timeout)
    commands = bus.subscriber(
        MANIFEST_COMMANDS, group="manifest", consumer="m", partition_key=deployment_of
    )
    commands.add(SubmitManifest, manifests.on_submit)
    won = bus.subscriber(BIDENGINE_EVENTS, group="manifest", consumer="m")
    won.add(LeaseWon, manifests.on_lease_won)
    events = bus.subscriber(CHAIN_EVENTS, group="manifest", consumer="m")
    events.add(DeploymentUpdated, manifests.on_deployment_updated)
    events.add(DeploymentClosed, manifests.on_deployment_closed)
    events.add(LeaseClosed, manifests.on_lease_closed)
    asked = bus.subscriber(CLUSTER_COMMANDS, group="cluster", consumer="c")
    asked.add(CheckHostnames, cluster.check)
    try:
        async with running(commands, won, events, asked):
            yield Harness(bus, manifests, chain, cluster, now)
    finally:
        await bus.close()


def chain_event(kind: type[Any], **fields: Any) -> Any:
    return kind(height=10, tx_index=0, event_index=0, **fields)


# -- submissions ----------------------------------------------------------------------------


async def test_an_accepted_manifest_goes_to_each_lease_once_per_submission(
    harness: Harness, two_groups: Callable[[str], SDL]
) -> None:
    sdl = two_groups("tetris.yaml")
    leases = harness.deploy(sdl, 7, gseqs=(1, 2))
    reply = await harness.submit(7, sdl.manifest)
    assert reply == ManifestAccepted(
        deployment_id=leases[0].deployment_id, version=sdl.manifest.version_hex(), leases=leases
    )
    received = await harness.on(MANIFEST_EVENTS, ManifestReceived)
    assert [(r.lease_id, r.group.name) for r in received] == [
        (leases[0], "akash"),
        (leases[1], "west"),
    ]
    assert all(r.version == sdl.manifest.version_hex() for r in received)
    record = await harness.manifests.record(leases[0].deployment_id)
    assert record is not None and record.parsed() == sdl.manifest
    assert record.leases == sorted(str(x) for x in leases)
    assert await harness.manifests.counts() == (1, 0)
    assert harness.cluster.asked == []  # no hostnames: nothing to ask

    again = await harness.submit(7, sdl.manifest)  # the same manifest again: accepted again
    assert again == reply
    assert len(await harness.on(MANIFEST_EVENTS, ManifestReceived)) == 4
    assert harness.chain.queries == 1  # the chain was read once (cache)
    assert await harness.manifests.counts() == (1, 0)


async def test_each_check_refuses_with_its_code_and_says_why(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    sdl, other = corpus("ghost.yaml"), corpus("tetris.yaml")
    harness.deploy(sdl, 1)
    broken = sdl.manifest.go_json()
    broken[0]["services"][0]["expose"][0]["port"] = 0
    reason = await harness.rejected(1, Manifest.from_data(broken), "invalid")
    assert "port" in reason

    reason = await harness.rejected(2, sdl.manifest, "deployment_not_found")
    assert "deployment 2" in reason and "does not exist" in reason

    reason = await harness.rejected(1, other.manifest, "version_mismatch")
    assert other.manifest.version_hex() in reason and sdl.manifest.version_hex() in reason

    [lease] = harness.deploy(other, 3)
    facts = harness.chain.deployments[str(lease.deployment_id)]
    harness.chain.deployments[str(lease.deployment_id)] = DeploymentFacts(
        deployment_id=facts.deployment_id, state="active", hash=sdl.manifest.version_hex(),
        groups=facts.groups, leases=facts.leases,
    )  # fmt: skip
    reason = await harness.rejected(3, sdl.manifest, "cross_validation")
    assert "group 'akash'" in reason and "service 'ghost'" in reason

    harness.deploy(sdl, 4, gseqs=())
    reason = await harness.rejected(4, sdl.manifest, "no_lease")
    assert "no active lease" in reason

    harness.chain.down = True
    reason = await harness.rejected(5, sdl.manifest, "chain_unavailable")
    assert "down" in reason

    events = await harness.on(MANIFEST_EVENTS, ManifestRejected)
    assert [e.code for e in events] == [
        "invalid", "deployment_not_found", "version_mismatch", "cross_validation", "no_lease",
        "chain_unavailable",
    ]  # fmt: skip
    assert await harness.on(MANIFEST_EVENTS, ManifestReceived) == []


async def test_a_cached_chain_answer_never_refuses_a_manifest(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    sdl = corpus("tetris.yaml")
    harness.deploy(sdl, 8, gseqs=())
    await harness.rejected(8, sdl.manifest, "no_lease")
    [lease] = harness.deploy(sdl, 8)  # the tenant creates the lease right after
    reply = await harness.submit(8, sdl.manifest)  # within the cache's age: read again
    assert isinstance(reply, ManifestAccepted) and reply.leases == [lease]


async def test_hostnames_are_checked_with_the_cluster(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    sdl = corpus("ghost.yaml")
    [lease] = harness.deploy(sdl, 9)
    harness.cluster.refuse = {"changeme.com": "in use by another tenant"}
    reason = await harness.rejected(9, sdl.manifest, "hostname_not_allowed")
    assert reason == (
        "hostnames not allowed: changeme.com (group 'akash' service 'ghost' expose 2368/tcp): "
        "in use by another tenant"
    )
    assert harness.cluster.asked == [CheckHostnames(lease_id=lease, hostnames=["changeme.com"])]

    harness.cluster.silent = True
    reason = await harness.rejected(9, sdl.manifest, "cluster_unavailable")
    assert f"did not check the hostnames of lease {lease} within 0.5s" in reason

    harness.cluster.silent, harness.cluster.refuse = False, {}
    assert isinstance(await harness.submit(9, sdl.manifest), ManifestAccepted)


async def test_without_static_hosts_an_http_expose_must_accept_a_hostname(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    harness.manifests.policy = replace(harness.manifests.policy, http_needs_hosts=True)
    sdl = corpus("Chatterbox.yaml")  # two HTTP services, neither with a hostname
    [lease] = harness.deploy(sdl, 11)
    reason = await harness.rejected(11, sdl.manifest, "hostname_not_allowed")
    assert reason == (  # Go's words for each (manifest/manager.go), both listed
        'manifest rejected: service "chatterbox-api" exposed on 80:TCP must have a hostname; '
        'service "chatterbox-frontend" exposed on 80:TCP must have a hostname '
        "(this provider generates no hostnames: accept one in the SDL)"
    )
    assert await harness.on(MANIFEST_EVENTS, ManifestReceived) == []  # nothing to deploy
    assert harness.cluster.asked == []  # refused before the cluster is asked
    ghost = corpus("ghost.yaml")  # its HTTP expose accepts a hostname
    [lease] = harness.deploy(ghost, 12)
    reply = await harness.submit(12, ghost.manifest)
    assert isinstance(reply, ManifestAccepted) and reply.leases == [lease]
    harness.manifests.policy = replace(harness.manifests.policy, http_needs_hosts=False)
    reply = await harness.submit(11, sdl.manifest)  # static hosts: the cluster names them
    assert isinstance(reply, ManifestAccepted)


async def test_an_update_keeps_its_services(harness: Harness, corpus: Callable[[str], SDL]) -> None:
    sdl = corpus("big-dipper.yaml")
    [lease] = harness.deploy(sdl, 10)
    harness.cluster.refuse = {}
    assert isinstance(await harness.submit(10, sdl.manifest), ManifestAccepted)
    data = sdl.manifest.go_json()
    data[0]["services"][1]["name"] = "zz"
    data[0]["services"][1]["expose"][0]["service"] = "zz"
    renamed = Manifest.from_data(data)
    harness.deploy(sdl, 10)
    facts = harness.chain.deployments[str(lease.deployment_id)]
    harness.chain.deployments[str(lease.deployment_id)] = DeploymentFacts(
        deployment_id=facts.deployment_id, state="active", hash=renamed.version_hex(),
        groups=facts.groups, leases=facts.leases,
    )  # fmt: skip
    await harness.bus.publish(
        CHAIN_EVENTS,
        chain_event(
            DeploymentUpdated, deployment_id=lease.deployment_id, hash=renamed.version_hex()
        ),
    )
    await harness.settled()
    reason = await harness.rejected(10, renamed, "services_changed")
    assert "group 'akash'" in reason and "added: zz" in reason
    record = await harness.manifests.record(lease.deployment_id)
    assert record is not None and record.version == sdl.manifest.version_hex()  # kept


# -- watchdogs ------------------------------------------------------------------------------


async def test_a_lease_without_manifest_has_its_bid_closed_at_the_deadline(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    [lease] = harness.deploy(corpus("tetris.yaml"), 11)
    await harness.won(lease)
    await eventually(harness.waiting, what="the lease waiting")
    await harness.won(lease)  # a second LeaseWon changes nothing
    await harness.settled()
    assert await harness.waiting() == {str(lease): repr(1000.0 + TIMEOUT)}
    assert await harness.manifests.counts() == (0, 1)
    assert await harness.manifests.expire_due() == 0
    harness.now[0] += TIMEOUT
    assert await harness.manifests.expire_due() == 1
    [tx] = await harness.closes()
    assert tx.key == close_bid_key(lease) == f"close-bid/manifest-timeout/{lease}"
    assert tx.msgs == [CloseBid(bid_id=lease.bid_id, reason=LeaseClosedReason.MANIFEST_TIMEOUT)]
    assert await harness.on(MANIFEST_EVENTS, ManifestTimedOut) == [ManifestTimedOut(lease_id=lease)]
    assert await harness.waiting() == {}
    assert await harness.bus.backend.zrangebyscore(DEADLINES_KEY, 0, 10**12) == []
    assert await harness.manifests.expire_due() == 0


async def test_two_replicas_close_a_bid_once(
    harness: Harness, redis_url: str, corpus: Callable[[str], SDL]
) -> None:
    leases = [harness.deploy(corpus("tetris.yaml"), dseq)[0] for dseq in (12, 13, 14)]
    for lease in leases:
        await harness.won(lease)
    await eventually(harness.manifests.counts, until=lambda c: c[1] == 3)
    harness.now[0] += TIMEOUT + 1
    other_bus = Bus.connect(RedisSettings(url=redis_url), producer="test-2")
    try:
        replica = make_manifests(other_bus, harness.chain, harness.now, TIMEOUT)
        fired = await asyncio.gather(harness.manifests.expire_due(), replica.expire_due())
    finally:
        await other_bus.close()
    assert sum(fired) == 3
    assert sorted(tx.key for tx in await harness.closes()) == sorted(
        close_bid_key(lease) for lease in leases
    )


async def test_a_manifest_in_time_stops_the_watchdog_whichever_comes_first(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    sdl = corpus("tetris.yaml")
    [before] = harness.deploy(sdl, 15)
    await harness.won(before)  # won, then the manifest
    await eventually(harness.waiting, what="the lease waiting")
    assert isinstance(await harness.submit(15, sdl.manifest), ManifestAccepted)
    assert await harness.waiting() == {}

    [after] = harness.deploy(sdl, 16)
    assert isinstance(await harness.submit(16, sdl.manifest), ManifestAccepted)
    await harness.won(after)  # the manifest came first: the chain had the lease already
    await harness.settled()
    assert await harness.waiting() == {}
    harness.now[0] += TIMEOUT * 2
    assert await harness.manifests.expire_due() == 0
    assert await harness.closes() == []


async def test_a_new_lease_of_a_deployment_with_a_manifest_gets_it_at_once(
    harness: Harness, two_groups: Callable[[str], SDL]
) -> None:
    sdl = two_groups("tetris.yaml")
    [first] = harness.deploy(sdl, 17, gseqs=(1,))
    assert isinstance(await harness.submit(17, sdl.manifest), ManifestAccepted)
    [_, second] = harness.deploy(sdl, 17, gseqs=(1, 2))
    await harness.won(second, "west")
    received = await eventually(
        lambda: harness.on(MANIFEST_EVENTS, ManifestReceived), until=lambda r: len(r) == 2
    )
    assert (received[1].lease_id, received[1].group.name) == (second, "west")
    assert await harness.waiting() == {}
    record = await harness.manifests.record(first.deployment_id)
    assert record is not None and record.leases == sorted([str(first), str(second)])


async def test_closes_end_watchdogs_and_forget_the_manifest(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    sdl = corpus("tetris.yaml")
    [closed_lease] = harness.deploy(sdl, 18)
    [kept] = harness.deploy(sdl, 19)
    [accepted] = harness.deploy(sdl, 20)
    for lease in (closed_lease, kept):
        await harness.won(lease)
    assert isinstance(await harness.submit(20, sdl.manifest), ManifestAccepted)
    await eventually(harness.manifests.counts, until=lambda c: c == (1, 2))
    reason = LeaseClosedReason.OWNER
    await harness.bus.publish(
        CHAIN_EVENTS, chain_event(LeaseClosed, lease_id=closed_lease, reason=reason)
    )
    await harness.bus.publish(
        CHAIN_EVENTS, chain_event(DeploymentClosed, deployment_id=accepted.deployment_id)
    )
    await eventually(harness.manifests.counts, until=lambda c: c == (0, 1))
    assert list(await harness.waiting()) == [str(kept)]
    record = await harness.manifests.record(accepted.deployment_id)
    assert record is not None and record.state == "closed" and record.manifest == ""
    # the chain read is still cached as active: the tombstone refuses the manifest anyway
    reason_text = await harness.rejected(20, sdl.manifest, "deployment_not_found")
    assert "closed" in reason_text


async def test_the_watchdog_spares_a_lease_the_chain_closed_already(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    [lease] = harness.deploy(corpus("tetris.yaml"), 21)
    await harness.won(lease)
    await eventually(harness.waiting, what="the lease waiting")
    harness.chain.lease_states[str(lease)] = "closed"
    harness.now[0] += TIMEOUT
    assert await harness.manifests.expire_due() == 0
    assert await harness.waiting() == {}
    assert await harness.closes() == []


async def test_leases_of_other_providers_are_not_watched(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    [lease] = harness.deploy(corpus("tetris.yaml"), 22)
    theirs = LeaseID(owner=OWNER, dseq=22, gseq=1, oseq=1, provider=OTHER)
    spec = harness.chain.deployments[str(lease.deployment_id)].groups[0][1]
    price = DecCoin(denom="uact", amount="1")
    await harness.bus.publish(BIDENGINE_EVENTS, LeaseWon(lease_id=theirs, group=spec, price=price))
    await harness.settled()
    assert await harness.waiting() == {}


@pytest.mark.parametrize("timeout", [0.0])
async def test_a_zero_timeout_disables_watchdogs(
    harness: Harness, corpus: Callable[[str], SDL]
) -> None:
    [lease] = harness.deploy(corpus("tetris.yaml"), 23)
    await harness.won(lease)
    await harness.settled()
    assert await harness.waiting() == {}
