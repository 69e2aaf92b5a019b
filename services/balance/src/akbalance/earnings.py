"""The provider's earnings: what each lease has paid us as counted, and the sums per denom.

A committed withdrawal's payment is read from the chain as the total withdrawn for the
lease so far; :meth:`Earnings.count` adds what goes beyond the total counted before to the
earned sum, as one transition of the lease's ``withdrawn:<lease>`` record
(:class:`akbus.Records`): a result handled twice, or two results handled at once, never
count a unit twice. Sweeps add what they sent to their own sums (:mod:`akbalance.handlers`).
"""

from __future__ import annotations

from akbalance.domain.records import EARNED, SWEPT, WITHDRAWN, Paid
from akbus import Bus, BusTx, Change, Records


class Earnings:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.paid = Records(bus, Paid, WITHDRAWN + ":", load=Paid.parse, dump=str)

    async def count(self, lease: str, denom: str, total: int) -> int:
        """Count what the chain has paid for ``lease`` beyond what was counted (``total``:
        the payment's withdrawn sum); what that added."""

        def paid(before: Paid | None) -> Change[Paid] | None:
            counted = before.amount(denom) if before is not None else 0
            if total <= counted:
                return None

            def earn(tx: BusTx) -> None:
                tx.state.hincrby(EARNED, denom, total - counted)

            return Change(Paid(denom=denom, total=total), writes=earn)

        before, after = await self.paid.update(lease, paid)
        if after is None:
            return 0
        return total - (before.amount(denom) if before is not None else 0)

    async def earned(self) -> dict[str, int]:
        return {d: int(v) for d, v in (await self.bus.backend.hgetall(EARNED)).items()}

    async def swept(self) -> dict[str, int]:
        return {d: int(v) for d, v in (await self.bus.backend.hgetall(SWEPT)).items()}
