"""Names a lease holds on this provider: hostnames, and leased-IP endpoints.

Each kind is one Redis hash (name → lease id) with a version key that every write bumps, so
concurrent deploys and migrations of one provider — in one process or several — never lose
each other's writes (:meth:`akbus.Bus.apply_if`). A deploy *claims* its names, a teardown
*releases* them, a migration *moves* some to another lease of the same owner.

Hostnames are global (``www.example.com``); endpoints are the owner's (the SDL's
``endpoints:`` names), so their key is ``<owner>/<name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from akbus import Bus, BusTx
from akcluster.domain.leases import (
    LeaseRecord,
    claim_hostnames,
    hostname_refusals,
    lease_hostnames,
    manifest_endpoints,
    manifest_hostnames,
)
from akcluster.errors import MoveRefused
from aktypes.ids import LeaseID


def endpoint_key(owner: str, name: str) -> str:
    return f"{owner}/{name}"


def _shown(name: str) -> str:
    return name.rpartition("/")[2]  # an endpoint without its owner; hostnames have no "/"


@dataclass(frozen=True)
class ClaimPlan:
    """What claiming names for a lease comes to: what it gets, what another lease of its
    owner keeps from it, what is new to it and what it holds and no longer wants."""

    claimed: list[str]
    withheld: list[str]
    fresh: list[str]
    stale: list[str]


def claim_plan(
    lease_id: LeaseID, wanted: list[str], holders: Mapping[str, str], held: Iterable[str]
) -> ClaimPlan:
    """The claim of ``wanted`` for a lease holding ``held``, the names held as ``holders``."""
    lease = str(lease_id)
    claimed, withheld = claim_hostnames(lease_id, wanted, holders)
    kept = set(claimed)
    return ClaimPlan(
        claimed=claimed,
        withheld=withheld,
        fresh=[n for n in claimed if holders.get(n) != lease],
        stale=[n for n in held if n not in kept],
    )


class Holders:
    """A registry's names as read at one moment, and the names each lease holds."""

    def __init__(self, holders: Mapping[str, str]) -> None:
        self.holders = holders
        self._by_lease: dict[str, list[str]] = {}
        for name, lease in holders.items():
            self._by_lease.setdefault(lease, []).append(name)

    def of(self, lease_id: LeaseID) -> list[str]:
        return self._by_lease.get(str(lease_id), [])


def names_kept(
    record: LeaseRecord,
    hosts: Holders,
    endpoints: Holders,
    blocked: Iterable[str],
    domain: str = "",
) -> bool:
    """Whether deploying the lease again would claim and withhold exactly the hostnames and
    endpoints its record says it holds (recovery: nothing to change); ``domain``: of the
    generated hostnames (static hosts)."""
    lease_id, owner = record.lease_id, record.lease_id.owner
    if hostname_refusals(lease_id, manifest_hostnames(record.group), hosts.holders, blocked):
        return False
    wanted = lease_hostnames(lease_id, record.group, domain, record.adopted_hosts)
    for held, want, claimed, withheld in (
        (hosts, wanted, record.hosts, record.withheld),
        (
            endpoints,
            [endpoint_key(owner, n) for n in manifest_endpoints(record.group)],
            [endpoint_key(owner, n) for n in record.endpoints],
            [endpoint_key(owner, n) for n in record.withheld_endpoints],
        ),
    ):
        plan = claim_plan(lease_id, want, held.holders, held.of(lease_id))
        if plan.fresh or plan.stale or sorted(plan.claimed) != sorted(claimed):
            return False
        if plan.withheld != withheld:
            return False
    return True


@dataclass(frozen=True)
class Registry:
    bus: Bus
    key: str
    version_key: str

    async def holders(self) -> dict[str, str]:
        return dict(await self.bus.backend.hgetall(self.key))

    async def _write(self, version: Any, hset: Mapping[str, str], hdel: Iterable[str] = ()) -> bool:
        stale = list(hdel)

        async def write(tx: BusTx) -> None:
            if hset:
                tx.state.hset(self.key, dict(hset))
            if stale:
                tx.state.hdel(self.key, *stale)
            tx.state.set(self.version_key, str(int(version or 0) + 1))

        return await self.bus.apply_if(self.version_key, version, write)

    async def claim(
        self,
        lease_id: LeaseID,
        wanted: list[str],
        refusals: Callable[[Mapping[str, str]], Mapping[str, str]] = lambda _: {},
    ) -> tuple[list[str], list[str]]:
        """Claim ``wanted`` for the lease: (claimed, withheld by another lease of the same
        owner); what it held and no longer wants is released. ``refusals`` (of the current
        holders) names what it may not have at all: then nothing changes and
        :class:`MoveRefused` says why."""
        lease = str(lease_id)
        while True:
            version = await self.bus.backend.get(self.version_key)
            holders = await self.holders()
            refused = refusals(holders)
            if refused:
                raise MoveRefused("forbidden", "; ".join(refused.values()))
            held = [n for n, holder in holders.items() if holder == lease]
            plan = claim_plan(lease_id, wanted, holders, held)
            if not plan.fresh and not plan.stale:
                return plan.claimed, plan.withheld
            if await self._write(version, dict.fromkeys(plan.fresh, lease), plan.stale):
                return plan.claimed, plan.withheld

    async def release(self, lease_id: LeaseID) -> None:
        lease = str(lease_id)
        while True:
            version = await self.bus.backend.get(self.version_key)
            mine = [n for n, holder in (await self.holders()).items() if holder == lease]
            if not mine or await self._write(version, {}, mine):
                return

    async def move(self, names: list[str], owner: str, destination: LeaseID) -> list[LeaseID]:
        """Give ``names`` to ``destination``; the leases that held them. Each name must be
        held by one of ``owner``'s leases here (:class:`MoveRefused` otherwise: nothing moves)."""
        target = str(destination)
        while True:
            version = await self.bus.backend.get(self.version_key)
            holders = await self.holders()
            sources: dict[str, LeaseID] = {}
            for name in names:
                holder = holders.get(name)
                if holder is None:
                    raise MoveRefused("invalid", f"{_shown(name)} is not in use by any lease here")
                held_by = LeaseID.parse(holder)
                if held_by.owner != owner:
                    raise MoveRefused(
                        "forbidden", f"{_shown(name)} is held by another tenant's lease"
                    )
                if holder != target:
                    sources[holder] = held_by
            if not sources or await self._write(version, dict.fromkeys(names, target)):
                return list(sources.values())
