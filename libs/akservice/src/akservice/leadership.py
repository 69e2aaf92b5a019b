"""One active process among replicas: a lease taken, renewed, and lost by stopping.

A part that must act alone (an operator's handlers, the chain relay's broadcasts) runs as
two or more processes; each is a *candidate* for one lease and only its holder acts:

- **standby**: the lease is another's. The process is up and ready (so a rolling update
  can go on: a Deployment waits for its new pods to be ready), tries the lease every half
  renew interval, and takes it once it has expired. A standby that cannot read or write
  the lease (unreachable, refused) is not ready and says why.
- **leader**: the lease is this process's. It renews it every ``renew_s``; if no renewal
  succeeds within ``renew_deadline_s`` (less than the lease's duration, so the lease is
  still its own when it gives up) it raises :class:`LeadershipLost`, which stops the
  process at once with exit code 1; its orchestrator starts it again as a standby. This is
  what Kubernetes' controller-runtime does too: stopping is the one way to be sure
  nothing half-done keeps acting. A *fenced* lease is the exception: when every write of
  the part checks the lease in its own transaction (the relay's, on Redis), a leader that
  cannot reach the lease cannot write either, so it waits for it rather than stopping (a
  Redis outage kills no relay); it stops only once it sees another holder.

Where the lease lives is the candidate's business (:class:`Candidate`): a key in Redis
(:class:`RedisLease`, the chain relay's) or a Kubernetes ``Lease`` (the operators'). Both
are held by the process's consumer name, which :mod:`akservice.consumer` keeps unique
among live processes: a process restarted under its own name takes its lease back at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from akbus import Bus, BusTx, ConnectionLost, RetryableError
from akservice.settings import Duration

log = logging.getLogger("akservice.leadership")


class LeaderElectionSettings(BaseSettings):
    """The lease timings every part with a standby reads (``AP_LEADER_ELECTION_*``)."""

    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    leader_election_lease_duration: Duration = Field(
        default=6.0,
        ge=2.0,
        description="how long a leader's lease lasts unrenewed before a standby takes over",
    )
    leader_election_renew_interval: Duration = Field(
        default=2.0, gt=0, description="how often the leader renews its lease"
    )

    def renew_deadline(self) -> float:
        """How long a leader keeps acting without a renewal: two thirds of the lease."""
        return self.leader_election_lease_duration * 2 / 3


class LeadershipLost(Exception):
    """The leader could not renew its lease in time: the process stops acting (exit 1)."""


class NotLeader(RetryableError):
    """A write fenced by the lease found another holder: nothing was written, the entry
    stays pending for the leader."""


Fence = Callable[[BusTx], Awaitable[None]]
"""Run first in a transaction's body: raises :class:`NotLeader` unless this process holds
the lease (:meth:`RedisLease.fence`)."""


async def unfenced(_: BusTx) -> None:
    """The fence of a part that runs without a lease (tests of one process)."""


class Candidate(Protocol):
    """One lease as a candidate sees it."""

    identity: str  # who this process is (its consumer name)
    holder: str  # who held the lease when last looked at ("" when nobody)
    fenced: bool  # every write of the part checks the lease itself (RedisLease.fence)

    async def try_hold(self) -> bool:
        """Take the lease if it is free or expired, renew it if it is ours; True when ours."""
        ...

    async def release(self) -> None:
        """Give the lease up (a clean stop): the standby need not wait for it to expire."""
        ...


class Leadership:
    """The role of one candidate: ``candidate`` until its first try, ``standby`` until
    :meth:`acquire` returns, then ``leader`` while :meth:`keep` runs."""

    def __init__(self, candidate: Candidate, settings: LeaderElectionSettings) -> None:
        self.candidate = candidate
        self.duration_s = settings.leader_election_lease_duration
        self.renew_s = min(settings.leader_election_renew_interval, self.duration_s / 3)
        self.deadline_s = settings.renew_deadline()
        self.role = "candidate"  # not tried yet: neither ready as a standby nor leading
        self.renewed_at = 0.0  # monotonic start of the last renewal that succeeded
        self.last_error = ""

    @property
    def leader(self) -> str:
        return self.candidate.identity if self.role == "leader" else self.candidate.holder

    def holds(self) -> bool:
        """Still the leader by this process's own clock (checked before acting)."""
        return self.role == "leader" and time.monotonic() - self.renewed_at < self.deadline_s

    async def _attempt(self, limit: float) -> bool:
        started = time.monotonic()
        try:
            async with asyncio.timeout(max(limit, 0.1)):
                held = await self.candidate.try_hold()
        except Exception as exc:  # unreachable, too slow, or refused (an API error): again
            self.last_error = str(exc) or type(exc).__name__
            return False
        self.last_error = ""
        if held:
            self.renewed_at = started
        return held

    async def acquire(self) -> None:
        """Wait as a standby until the lease is this process's."""
        noted = ""
        while not await self._attempt(self.renew_s):
            self.role = "standby"
            seen = self.candidate.holder or self.last_error
            if seen != noted:
                log.info(
                    "standby: the lease is held elsewhere",
                    extra={"leader": self.candidate.holder, "error": self.last_error},
                )
                noted = seen
            await asyncio.sleep(self.renew_s / 2)
        self.role = "leader"
        log.info("leading", extra={"identity": self.candidate.identity})

    async def keep(self) -> None:
        """Renew until cancelled; raise :class:`LeadershipLost` once renewals failed past
        the renew deadline, or another candidate holds the lease."""
        while True:
            await asyncio.sleep(self.renew_s)
            left = self.deadline_s - (time.monotonic() - self.renewed_at)
            held = await self._attempt(left)
            taken = self.candidate.holder not in ("", self.candidate.identity)
            late = time.monotonic() - self.renewed_at >= self.deadline_s
            if not held and (taken or (late and not self.candidate.fenced)):
                self.role = "lost"
                raise LeadershipLost(
                    f"lost the lease (not renewed within {self.deadline_s:.1f}s"
                    + (f", now held by {self.candidate.holder}" if self.candidate.holder else "")
                    + (f": {self.last_error}" if self.last_error else "")
                    + "): stopping"
                )


class RedisLease:
    """A lease on a Redis key holding the leader's identity, expiring after the lease's
    duration unless renewed. Take and renew are one optimistic transaction (the key is
    watched, so of two candidates racing for a free key one wins and the other sees it)."""

    fenced = True  # the relay's writes run :meth:`fence` in their transactions

    def __init__(self, bus: Bus, key: str, identity: str, duration_s: float) -> None:
        self.bus, self.key, self.identity = bus, key, identity
        self.ttl_s = max(1, math.ceil(duration_s))
        self.holder = ""

    async def try_hold(self) -> bool:
        held = False

        async def body(tx: BusTx) -> None:
            nonlocal held
            current = await tx.state.get(self.key)
            self.holder = current or ""
            held = current in (None, self.identity)
            if held:
                tx.state.set(self.key, self.identity, ex=self.ttl_s)

        await self.bus.transact(body)
        if held:
            self.holder = self.identity
        return held

    async def fence(self, tx: BusTx) -> None:
        """Make ``tx`` commit only while this process holds the lease: the key is watched,
        so a change before the commit runs the body again, and another holder raises
        :class:`NotLeader` (nothing is written). A lease that expired while Redis was away
        (an outage, a failover that lost the key) is held by nobody, so nobody acts: the
        leader takes it again in the same transaction, as :meth:`try_hold` would."""
        current = await tx.state.get(self.key)
        if current is None:
            tx.state.set(self.key, self.identity, ex=self.ttl_s)
        elif current != self.identity:
            raise NotLeader(f"the lease {self.key} is held by {current or 'nobody'}, not by us")

    async def release(self) -> None:
        async def body(tx: BusTx) -> None:
            if await tx.state.get(self.key) == self.identity:
                tx.state.delete(self.key)

        try:
            await self.bus.transact(body)
        except ConnectionLost:
            return
