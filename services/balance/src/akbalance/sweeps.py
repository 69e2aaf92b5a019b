"""Sweeps: what the provider's account holds above the floor kept goes to a cold address.

A sweep is one ``Send`` for the chain relay, committed in one Redis transaction with its
pending record and a ``SweepRequested`` event per coin; its result (read with the
withdrawals' results, :mod:`akbalance.handlers`) adds what it sent to the swept sums. One
sweep at a time: none starts while the last one has no result.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from akbalance.adapters.chain import Chain
from akbalance.domain.funds import sweep_amount
from akbalance.domain.records import PENDING, SWEEP_PREFIX, SWEPT
from akbus import Bus, BusTx, Message
from aktypes.coin import Coin, Dec
from aktypes.events import BroadcastTx, Send, SweepRequested
from aktypes.events.streams import BALANCE_EVENTS, CHAIN_TX

log = logging.getLogger("akbalance")


@dataclass
class Sweeps:
    bus: Bus
    chain: Chain
    provider: str
    failed: Callable[[str], None]  # told why a sweep failed (the status's last error)
    now: Callable[[], float] = time.time

    async def sweep(
        self, to_address: str, keep: dict[str, Dec], reserved: dict[str, int], fee: Coin | None
    ) -> list[Coin]:
        """Send what is above ``keep`` (and ``reserved``) to ``to_address``; what was sent."""
        if any(k.startswith(SWEEP_PREFIX) for k in await self.bus.backend.hgetall(PENDING)):
            return []
        balances = await self.chain.balances(self.provider)
        coins = []
        for denom, floor in sorted(keep.items()):
            amount = sweep_amount(
                balances.get(denom, 0),
                keep=floor.ceil(),
                reserved=reserved.get(denom, 0),
                fee=fee.amount if fee is not None and fee.denom == denom else 0,
            )
            if amount > 0:
                coins.append(Coin(denom=denom, amount=amount))
        if not coins:
            return []
        key = f"{SWEEP_PREFIX}{uuid.uuid4().hex}"
        pending = {"coins": [str(c) for c in coins], "to": to_address, "at": self.now()}

        async def write(tx: BusTx) -> None:
            tx.state.hset(PENDING, {key: json.dumps(pending)})
            tx.publish(
                CHAIN_TX, BroadcastTx(key=key, msgs=[Send(to_address=to_address, amount=coins)])
            )
            for coin in coins:
                tx.publish(BALANCE_EVENTS, SweepRequested(to_address=to_address, amount=coin))

        await self.bus.transact(write)
        log.info("sweeping %s to %s (%s)", ", ".join(map(str, coins)), to_address, key)
        return coins

    async def on_result(
        self, msg: Message[Any], key: str, pending: dict[str, Any], failure: str | None
    ) -> None:
        """A sweep's outcome (``failure``: the chain's reason, None when it was committed)."""
        committed = failure is None

        async def write(tx: BusTx) -> None:
            tx.state.hdel(PENDING, key)
            if committed:
                for text in pending["coins"]:
                    coin = Coin.parse(text)
                    tx.state.hincrby(SWEPT, coin.denom, coin.amount)

        await msg.apply_once(write)
        if committed:
            log.info(
                "sweep %s committed: %s to %s", key, ", ".join(pending["coins"]), pending["to"]
            )
        else:
            message = f"sweep {key} failed: {failure}"
            self.failed(message)
            log.warning(message)
