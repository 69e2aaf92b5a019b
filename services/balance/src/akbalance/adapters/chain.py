"""What the balance service reads from the chain: the node's height and sync state (RPC),
a lease's deployment escrow, its payment, and the provider's balances (LCD)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol

from akbalance.domain.funds import EscrowView
from akbalance.errors import ChainUnavailable, NodeCatchingUp
from akchain.errors import ChainError, NotFound
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from aktypes.coin import Dec
from aktypes.ids import DeploymentID, LeaseID


@dataclass(frozen=True)
class Tip:
    height: int
    time: float  # epoch seconds of the latest block


class BlockClock:
    """The chain's average block time, measured from the tips seen (``default`` until two
    tips at least ten blocks apart have been seen)."""

    def __init__(self, default: float) -> None:
        self.default = default
        self._first: Tip | None = None
        self._last: Tip | None = None

    def saw(self, tip: Tip) -> None:
        if self._first is None:
            self._first = tip
        self._last = tip

    @property
    def block_time(self) -> float:
        first, last = self._first, self._last
        if first is None or last is None or last.height - first.height < 10:
            return self.default
        return max((last.time - first.time) / (last.height - first.height), 1e-3)


class Chain(Protocol):
    """What the balance service asks of the chain (:class:`ChainReader`; an in-memory one in
    tests)."""

    async def tip(self) -> Tip: ...
    async def escrow(self, lease_id: LeaseID, height: int) -> EscrowView | None: ...
    async def withdrawn(self, lease_id: LeaseID) -> tuple[str, int] | None: ...
    async def balances(self, address: str) -> dict[str, int]: ...


class ChainReader:
    def __init__(self, lcd: LCDClient, rpc: RPCClient) -> None:
        self.lcd = lcd
        self.rpc = rpc

    async def tip(self) -> Tip:
        """The node's latest block; :class:`NodeCatchingUp` while it syncs."""
        try:
            status = await self.rpc.status()
        except ChainError as exc:
            raise ChainUnavailable(f"node status: {exc}") from exc
        if status.catching_up:
            raise NodeCatchingUp(f"the node is catching up (height {status.latest_height})")
        when = dt.datetime.fromisoformat(status.latest_time.replace("Z", "+00:00"))
        return Tip(height=status.latest_height, time=when.timestamp())

    async def escrow(self, lease_id: LeaseID, height: int) -> EscrowView | None:
        """The lease's deployment escrow as of ``height`` (None: the lease is not active)."""
        try:
            lease = await self.lcd.lease(lease_id)
            if lease.state != "active":
                return None
            deployment = await self.lcd.deployment(
                DeploymentID(owner=lease_id.owner, dseq=lease_id.dseq)
            )
            active = await self.lcd.leases(owner=lease_id.owner, dseq=lease_id.dseq, state="active")
        except NotFound:
            return None
        except ChainError as exc:
            raise ChainUnavailable(f"escrow of {lease_id}: {exc}") from exc
        account = deployment.escrow_account
        if account is None:
            return None
        denom = lease.price.denom
        rate = sum((le.price.amount for le in active if le.price.denom == denom), Dec(0))
        payment = lease.payment
        unpaid = payment.balance.amount if payment and payment.balance.denom == denom else Dec(0)
        return EscrowView(
            height=height,
            settled_at=account.settled_at,
            balance=account.balance(denom),
            rate=rate,
            lease_rate=lease.price.amount,
            unpaid=unpaid,
            denom=denom,
        )

    async def withdrawn(self, lease_id: LeaseID) -> tuple[str, int] | None:
        """What the lease's payment has paid the provider so far (denom, amount)."""
        try:
            lease = await self.lcd.lease(lease_id)
        except NotFound:
            return None
        except ChainError as exc:
            raise ChainUnavailable(f"lease {lease_id}: {exc}") from exc
        if lease.payment is None:
            return None
        return lease.payment.withdrawn.denom or lease.price.denom, lease.payment.withdrawn.amount

    async def balances(self, address: str) -> dict[str, int]:
        try:
            return {c.denom: c.amount for c in await self.lcd.balances(address)}
        except ChainError as exc:
            raise ChainUnavailable(f"balance of {address}: {exc}") from exc
