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
from typing import Any, Literal

from akbus import Bus, BusTx
from akcluster.domain.leases import claim_hostnames
from aktypes.ids import LeaseID


def endpoint_key(owner: str, name: str) -> str:
    return f"{owner}/{name}"


def _shown(name: str) -> str:
    return name.rpartition("/")[2]  # an endpoint without its owner; hostnames have no "/"


class Refused(Exception):
    """A move that cannot be done; ``code`` is the reply's (``invalid``, ``forbidden``)."""

    def __init__(self, code: Literal["invalid", "forbidden"], message: str) -> None:
        super().__init__(message)
        self.code: Literal["invalid", "forbidden"] = code


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
        :class:`Refused` says why."""
        lease = str(lease_id)
        while True:
            version = await self.bus.backend.get(self.version_key)
            holders = await self.holders()
            refused = refusals(holders)
            if refused:
                raise Refused("forbidden", "; ".join(refused.values()))
            claimed, withheld = claim_hostnames(lease_id, wanted, holders)
            stale = [n for n, holder in holders.items() if holder == lease and n not in claimed]
            fresh = [n for n in claimed if holders.get(n) != lease]
            if not fresh and not stale:
                return claimed, withheld
            if await self._write(version, dict.fromkeys(fresh, lease), stale):
                return claimed, withheld

    async def release(self, lease_id: LeaseID) -> None:
        lease = str(lease_id)
        while True:
            version = await self.bus.backend.get(self.version_key)
            mine = [n for n, holder in (await self.holders()).items() if holder == lease]
            if not mine or await self._write(version, {}, mine):
                return

    async def move(self, names: list[str], owner: str, destination: LeaseID) -> list[LeaseID]:
        """Give ``names`` to ``destination``; the leases that held them. Each name must be
        held by one of ``owner``'s leases here (:class:`Refused` otherwise: nothing moves)."""
        target = str(destination)
        while True:
            version = await self.bus.backend.get(self.version_key)
            holders = await self.holders()
            sources: dict[str, LeaseID] = {}
            for name in names:
                holder = holders.get(name)
                if holder is None:
                    raise Refused("invalid", f"{_shown(name)} is not in use by any lease here")
                held_by = LeaseID.parse(holder)
                if held_by.owner != owner:
                    raise Refused("forbidden", f"{_shown(name)} is held by another tenant's lease")
                if holder != target:
                    sources[holder] = held_by
            if not sources or await self._write(version, dict.fromkeys(names, target)):
                return list(sources.values())
