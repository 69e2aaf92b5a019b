"""What the balance service keeps in Redis, and under which keys (all ``akbalance:*``).

- ``leases``    hash  lease → ``{"next_periodic": t, "added": t, "unpaid": [denom, n]}``
- ``due``       zset  lease → when to look at its escrow next
- ``due:<lease>``     that time as written: a check claims the lease only while it is unchanged
  (two replicas never check one lease at once)
- ``pending``   hash  transaction key → what it carries (leases, reason, next checks)
- ``withdrawn:<lease>``  ``denom:amount``, the chain's total paid to us, as last counted
  (a :class:`Paid`)
- ``earned``    hash  denom → the sum of what our withdrawals collected
- ``sweeps``    hash  denom → the sum swept to the cold address
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

PREFIX = "akbalance:"
LEASES = PREFIX + "leases"
DUE = PREFIX + "due"
PENDING = PREFIX + "pending"
WITHDRAWN = PREFIX + "withdrawn"
EARNED = PREFIX + "earned"
SWEPT = PREFIX + "sweeps"
GUARD = PREFIX + "due:"  # + lease: its due time as written, the claim guard
PENDING_TIMEOUT_S = 900.0
CLAIM_S = 120.0  # a claimed lease is due again after this, should its checker die
WITHDRAW_PREFIX, SWEEP_PREFIX = "withdraw/", "sweep/"


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
