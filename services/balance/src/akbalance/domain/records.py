"""What the balance service keeps in Redis, and under which keys (all ``akbalance:*``).

- ``leases``    hash  lease → its record, a :class:`Watched` as JSON:
  ``{"added": t, "next_periodic": t, "checked": t, "unpaid": [denom, n], "due": t}``
- ``due``       zset  lease → when to look at its escrow next (the record's ``due`` too: a
  check claims a lease by moving it on, in a write guarded by the record, so two replicas
  never check one lease at once)
- ``pending``   hash  transaction key → what it carries (leases, reason, next checks)
- ``withdrawn:<lease>``  ``denom:amount``, the chain's total paid to us, as last counted
  (a :class:`Paid`)
- ``earned``    hash  denom → the sum of what our withdrawals collected
- ``sweeps``    hash  denom → the sum swept to the cold address
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict

PREFIX = "akbalance:"
LEASES = PREFIX + "leases"
DUE = PREFIX + "due"
PENDING = PREFIX + "pending"
WITHDRAWN = PREFIX + "withdrawn"
EARNED = PREFIX + "earned"
SWEPT = PREFIX + "sweeps"
OLD_GUARD = PREFIX + "due:"  # + lease: the claim guard of earlier versions, removed at start
PENDING_TIMEOUT_S = 900.0
CLAIM_S = 120.0  # a claimed lease is due again after this, should its checker die
WITHDRAW_PREFIX, SWEEP_PREFIX = "withdraw/", "sweep/"


class Watched(BaseModel):
    """A lease watched: its record in the ``leases`` hash (JSON, the fields not None; a
    ``next_periodic`` of Infinity: no periodic withdrawal)."""

    model_config = ConfigDict(frozen=True)

    added: float
    next_periodic: float  # when its next periodic withdrawal is due
    checked: float | None = None  # when it was last looked at
    unpaid: tuple[str, int] | None = None  # (denom, amount) owed as of that look
    due: float | None = None  # its next check (None: a record written before it was kept)

    @classmethod
    def parse(cls, text: str) -> Watched:
        return cls.model_validate(json.loads(text))

    def __str__(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True))

    def due_by(self, now: float) -> bool:
        """Is its next check due by ``now`` (not taken by a check, nor looked at since)?"""
        return self.due is None or self.due <= now


class Paid(BaseModel):
    """The chain's total paid to us for a lease, as last counted (stored ``denom:total``)."""

    model_config = ConfigDict(frozen=True)

    denom: str
    total: int

    @classmethod
    def parse(cls, text: str) -> Paid:
        denom, _, total = text.partition(":")
        return cls(denom=denom, total=int(total or 0))

    def __str__(self) -> str:
        return f"{self.denom}:{self.total}"

    def amount(self, denom: str) -> int:
        """What was counted in ``denom`` (0 for another one)."""
        return self.total if self.denom == denom else 0


def deployment_of(lease: str) -> str:
    """``owner/dseq`` of a lease id."""
    owner, dseq, *_ = lease.split("/")
    return f"{owner}/{dseq}"
