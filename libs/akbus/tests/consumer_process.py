"""A consumer run as its own process by the fault tests (so it can be SIGKILLed).

It applies each OrderCreated once (HINCRBY applied <dseq>), pausing a random time before
and after the transaction, so a kill finds handlers both before and after applying.
"""

from __future__ import annotations

import argparse
import asyncio
import random

from akbus import Bus, BusTx, Message, RedisSettings
from akbus.testing import FAST_SETTINGS
from aktypes.events import OrderCreated


async def main(url: str, stream: str, group: str, consumer: str, pause_s: float) -> None:
    bus = Bus.connect(RedisSettings(url=url), producer=consumer, settings=FAST_SETTINGS)
    sub = bus.subscriber(stream, group=group, consumer=consumer)

    @sub.handler(OrderCreated)
    async def handle(msg: Message[OrderCreated]) -> None:
        await asyncio.sleep(random.uniform(0, 2 * pause_s))

        async def effects(tx: BusTx) -> None:
            tx.state.hincrby("applied", str(msg.payload.order_id.dseq))

        await msg.apply_once(effects)
        await asyncio.sleep(random.uniform(0, 2 * pause_s))

    await sub.run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("url", "stream", "group", "consumer"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--pause", type=float, default=0.05)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.stream, args.group, args.consumer, args.pause))
