"""When an inconsistency between the chain and the provider is real enough to repair.

A sweep compares two readings taken one after the other (the provider's own state, then the
chain's), so what it finds may be a moment in flight rather than a fault: a lease created
on chain whose ``LeaseCreated`` has not reached the cluster yet, a bid on its way to the
chain. A finding is therefore repaired only once it was found on two sweeps in a row, the
first at least ``grace`` seconds before (:class:`Sightings`); one sweep without it forgets
it. A sweep whose chain read failed is no sweep: it neither confirms nor forgets.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class Sightings(Generic[K]):
    """What each finding's first sighting was, across consecutive sweeps."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.first: dict[K, float] = {}

    def confirm(self, found: Iterable[K], now: float) -> list[K]:
        """The findings of this sweep (``found``, at ``now``) that were found on the sweep
        before too and first at least ``grace`` ago, in the order given; every finding
        not in ``found`` is forgotten."""
        seen = list(dict.fromkeys(found))
        first = {key: self.first.get(key, now) for key in seen}
        confirmed = [key for key in seen if key in self.first and now - first[key] >= self.grace]
        self.first = first
        return confirmed
