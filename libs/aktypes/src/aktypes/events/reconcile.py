"""What the periodic comparison of the chain with the provider's own state repaired.

The cluster service and the bid engine each compare what they hold with the chain's leases,
bids and orders of this provider now and then (a missed chain event is otherwise never
noticed), and publish one ``ReconcileRepaired`` per repair on their events stream: the
cluster's on ``akash.provider.cluster.events``, the bid engine's on
``akash.provider.bidengine.events``.
"""

from __future__ import annotations

from typing import Literal

from aktypes.events.base import Payload
from aktypes.ids import LeaseID, OrderID

RepairKind = Literal[
    "lease_closed_deployed",
    "deployment_without_record",
    "reservation_without_bid",
    "bid_open_order_closed",
]
"""What was found inconsistent:

- ``lease_closed_deployed``: a lease closed on chain still deployed here (torn down);
- ``deployment_without_record``: a lease namespace or Manifest resource without a lease
  record (adopted when the chain has the lease active and ours, else removed);
- ``reservation_without_bid``: a reservation with neither an open bid nor an active lease
  of ours behind it (freed);
- ``bid_open_order_closed``: a bid the bid engine holds open for an order the chain has
  closed (the bid closed, its reservation freed)."""

RepairAction = Literal["torn_down", "adopted", "removed", "freed", "closed"]


class ReconcileRepaired(Payload):
    """One repair of a periodic reconciliation with the chain."""

    type: Literal["reconcile.repaired"] = "reconcile.repaired"
    kind: RepairKind
    action: RepairAction
    order_id: OrderID
    lease_id: LeaseID | None = None  # when the repair is about a lease
    message: str = ""
