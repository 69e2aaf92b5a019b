"""Test helpers: the balance service as a subprocess, and an in-memory chain.

``BalanceProcess`` runs ``python -m akbalance`` with fast timings; ``MemoryChain`` answers
the :class:`~akbalance.adapters.chain.ChainReader` queries from dicts and records which
leases were looked at, and when.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from akbalance.adapters.chain import Tip
from akbalance.domain.funds import EscrowView
from akbalance.errors import ChainUnavailable
from akservice.testing import RuntimeProcess
from aktypes.ids import LeaseID


class BalanceProcess(RuntimeProcess):
    def __init__(
        self,
        *,
        redis_url: str,
        api: str,
        node: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        env = {
            "AP_API": api,
            "AP_NODE": node,
            "AP_BALANCE_STATUS_INTERVAL": "500ms",
            "AP_WITHDRAWAL_RETRY": "2s",
            **(extra_env or {}),
        }
        super().__init__("akbalance", "balance", redis_url=redis_url, log_path=log_path, env=env)


@dataclass
class MemoryChain:
    """Escrow views per lease, the payments' withdrawn totals and balances, in memory."""

    height: int = 100
    views: dict[str, EscrowView] = field(default_factory=dict)
    paid: dict[str, tuple[str, int]] = field(default_factory=dict)
    wallet: dict[str, int] = field(default_factory=dict)
    looked_at: list[tuple[str, float]] = field(default_factory=list)
    down: bool = False

    async def tip(self) -> Tip:
        if self.down:
            raise ChainUnavailable("the node is down (test)")
        return Tip(height=self.height, time=time.time())

    async def escrow(self, lease_id: LeaseID, height: int) -> EscrowView | None:  # noqa: ARG002 - views carry their own
        if self.down:
            raise ChainUnavailable("the node is down (test)")
        self.looked_at.append((str(lease_id), time.time()))
        return self.views.get(str(lease_id))

    async def withdrawn(self, lease_id: LeaseID) -> tuple[str, int] | None:
        return self.paid.get(str(lease_id))

    async def balances(self, address: str) -> dict[str, int]:  # noqa: ARG002 - one account
        return dict(self.wallet)
