"""The lease on Redis that keeps one process of several acting: one winner of a race, writes
fenced by it, a leader that stops when another took the lease, a release the standby sees."""

from __future__ import annotations

import asyncio

import pytest

from akbus import Bus, BusTx
from akservice.leadership import (
    LeaderElectionSettings,
    Leadership,
    LeadershipLost,
    NotLeader,
    RedisLease,
)

KEY = "test:lease"


async def test_one_of_racing_candidates_wins_fences_the_others_and_loses_to_a_takeover(
    bus: Bus,
) -> None:
    candidates = [RedisLease(bus, KEY, f"relay-{i}", 6.0) for i in range(6)]
    won = await asyncio.gather(*(c.try_hold() for c in candidates))
    assert won.count(True) == 1
    leader = candidates[won.index(True)]
    others = [c for c in candidates if c is not leader]
    assert {c.holder for c in others} == {leader.identity}
    assert await leader.try_hold()  # renewing is holding

    async def write(lease: RedisLease, value: str) -> None:
        async def body(tx: BusTx) -> None:
            await lease.fence(tx)
            tx.state.set("test:fenced", value)

        await bus.transact(body)

    await write(leader, "leader")
    with pytest.raises(NotLeader):
        await write(others[0], "standby")
    assert await bus.backend.get("test:fenced") == "leader"
    await bus.backend.delete(KEY)  # expired while Redis was away: nobody holds it
    await write(leader, "leader again")  # the leader's write takes it back with it
    assert await bus.backend.get(KEY) == leader.identity
    assert await bus.backend.get("test:fenced") == "leader again"
    with pytest.raises(NotLeader):
        await write(others[0], "standby")

    settings = LeaderElectionSettings(
        leader_election_lease_duration=3.0, leader_election_renew_interval=0.2
    )
    keeping = Leadership(leader, settings)
    await keeping.acquire()
    assert keeping.role == "leader" and keeping.holds()
    keeper = asyncio.create_task(keeping.keep())
    await bus.backend.delete(KEY)
    await bus.transact(_steal)  # another process took it (say, after a pause)
    with pytest.raises(LeadershipLost, match="held by thief"):
        async with asyncio.timeout(5):
            await keeper
    assert not keeping.holds()

    await bus.backend.delete(KEY)
    assert await others[0].try_hold()
    await others[0].release()
    assert await bus.backend.get(KEY) is None  # released: the next candidate need not wait
    assert await others[1].try_hold()


async def _steal(tx: BusTx) -> None:
    tx.state.set(KEY, "thief", ex=6)
