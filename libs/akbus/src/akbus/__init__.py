"""The typed, crash-safe Redis Streams bus of the Akash provider services.

bus = Bus.connect(RedisSettings(), producer="bidengine-0")
await bus.publish(streams.CHAIN_TX, BroadcastTx(...))

sub = bus.subscriber(streams.CHAIN_EVENTS, group="bidengine", consumer="bidengine-0")

@sub.handler(OrderCreated)
async def on_order(msg: Message[OrderCreated]) -> None:
    async def effects(tx: BusTx) -> None:
        tx.state.hset(f"order:{msg.payload.order_id}", {"state": "new"})
        tx.publish(streams.BIDENGINE_EVENTS, ...)

    await msg.apply_once(effects)  # once, even if the entry is delivered again

await sub.run()
"""

from akbus.backend import Backend, Guard, Tx
from akbus.bus import Bus, DeadLetterEntry
from akbus.errors import (
    BusError,
    ConnectionLost,
    HandlerError,
    PermanentError,
    RequestTimeout,
    RetryableError,
    StreamMismatch,
    UnexpectedReply,
)
from akbus.memory import MemoryBackend
from akbus.message import BusTx, Message
from akbus.records import Change, Records, Snapshot
from akbus.redis_backend import RedisBackend
from akbus.settings import BusSettings, RedisSettings
from akbus.subscriber import Subscriber

__all__ = [
    "Backend",
    "Bus",
    "BusError",
    "BusSettings",
    "BusTx",
    "Change",
    "ConnectionLost",
    "DeadLetterEntry",
    "Guard",
    "HandlerError",
    "MemoryBackend",
    "Message",
    "PermanentError",
    "Records",
    "RedisBackend",
    "RedisSettings",
    "RequestTimeout",
    "RetryableError",
    "Snapshot",
    "StreamMismatch",
    "Subscriber",
    "Tx",
    "UnexpectedReply",
]
