"""A transaction on Redis: reads WATCH their keys and run at once, writes wait for EXEC.

Used by :meth:`akbus.redis_backend.RedisBackend.apply_once` and ``transact``, which run the
body again from the start when a watched key changed before EXEC.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from akbus.backend import Fields, Guard


class RedisTx:
    """Reads WATCH their key and run now; writes are queued for MULTI/EXEC.

    Watching every key a body reads makes the transaction optimistic: if another client
    changes one of them before EXEC, EXEC fails and the body runs again on fresh values,
    so a read-modify-write body behaves as if it ran alone.
    """

    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe
        self._watched: set[str] = set()
        self.queued: list[Callable[[Any], Any]] = []

    async def _watch(self, key: str) -> None:
        if key not in self._watched:
            self._watched.add(key)
            await self._pipe.watch(key)

    async def get(self, key: str) -> str | None:
        await self._watch(key)
        value: str | None = await self._pipe.get(key)
        return value

    async def hget(self, key: str, field: str) -> str | None:
        await self._watch(key)
        value: str | None = await self._pipe.hget(key, field)
        return value

    async def hgetall(self, key: str) -> dict[str, str]:
        await self._watch(key)
        return dict(await self._pipe.hgetall(key))

    async def smembers(self, key: str) -> set[str]:
        await self._watch(key)
        return set(await self._pipe.smembers(key))

    async def exists(self, key: str) -> bool:
        await self._watch(key)
        return bool(await self._pipe.exists(key))

    def set(self, key: str, value: str, *, ex: int | None = None) -> None:
        self.queued.append(lambda p: p.set(key, value, ex=ex))

    def delete(self, *keys: str) -> None:
        self.queued.append(lambda p: p.delete(*keys))

    def hset(self, key: str, mapping: Mapping[str, str]) -> None:
        values = dict(mapping)
        self.queued.append(lambda p: p.hset(key, mapping=values))

    def hdel(self, key: str, *fields: str) -> None:
        self.queued.append(lambda p: p.hdel(key, *fields))

    def hincrby(self, key: str, field: str, amount: int = 1) -> None:
        self.queued.append(lambda p: p.hincrby(key, field, amount))

    def incrby(self, key: str, amount: int = 1) -> None:
        self.queued.append(lambda p: p.incrby(key, amount))

    def sadd(self, key: str, *members: str) -> None:
        self.queued.append(lambda p: p.sadd(key, *members))

    def srem(self, key: str, *members: str) -> None:
        self.queued.append(lambda p: p.srem(key, *members))

    def zadd(self, key: str, mapping: Mapping[str, float]) -> None:
        values = dict(mapping)
        self.queued.append(lambda p: p.zadd(key, values))

    def zrem(self, key: str, *members: str) -> None:
        self.queued.append(lambda p: p.zrem(key, *members))

    def expire(self, key: str, seconds: int) -> None:
        self.queued.append(lambda p: p.expire(key, seconds))

    def xadd(
        self, stream: str, fields: Fields, *, maxlen: int | None = None, exact: bool = False
    ) -> None:
        values: dict[Any, Any] = dict(fields)
        approximate = maxlen is not None and not exact
        self.queued.append(lambda p: p.xadd(stream, values, maxlen=maxlen, approximate=approximate))


# KEYS: the guarded keys. ARGV[1]: how many; then four arguments per guard: "f" when it is a
# field of the hash (else "k", the key's value), the field, "1" when it must be absent (else
# "0"), the value it must hold. Then the commands, each as its argument count followed by the
# arguments.
APPLY_IF = """
local a = 2
for k = 1, tonumber(ARGV[1]) do
  local current
  if ARGV[a] == 'f' then
    current = redis.call('HGET', KEYS[k], ARGV[a + 1])
  else
    current = redis.call('GET', KEYS[k])
  end
  if ARGV[a + 2] == '1' then
    if current then return 0 end
  elseif current ~= ARGV[a + 3] then
    return 0
  end
  a = a + 4
end
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  redis.call(unpack(ARGV, a + 1, a + n))
  a = a + n + 1
end
return 1
"""


class CommandTx:
    """Writes recorded as Redis commands, for a guarded commit in one script call.

    Reads are refused: a guarded commit trusts what its caller read before (the guards'
    values), and re-checks only that.
    """

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    async def _refuse(self, *_: object, **__: object) -> Any:
        raise TypeError("a guarded commit (apply_if) cannot read; read before it")

    get = hget = hgetall = smembers = exists = _refuse

    def set(self, key: str, value: str, *, ex: int | None = None) -> None:
        self.commands.append(["SET", key, value, *(["EX", str(ex)] if ex else [])])

    def delete(self, *keys: str) -> None:
        self.commands.append(["DEL", *keys])

    def hset(self, key: str, mapping: Mapping[str, str]) -> None:
        self.commands.append(["HSET", key, *(x for kv in mapping.items() for x in kv)])

    def hdel(self, key: str, *fields: str) -> None:
        self.commands.append(["HDEL", key, *fields])

    def hincrby(self, key: str, field: str, amount: int = 1) -> None:
        self.commands.append(["HINCRBY", key, field, str(amount)])

    def incrby(self, key: str, amount: int = 1) -> None:
        self.commands.append(["INCRBY", key, str(amount)])

    def sadd(self, key: str, *members: str) -> None:
        self.commands.append(["SADD", key, *members])

    def srem(self, key: str, *members: str) -> None:
        self.commands.append(["SREM", key, *members])

    def zadd(self, key: str, mapping: Mapping[str, float]) -> None:
        pairs = (x for member, score in mapping.items() for x in (repr(float(score)), member))
        self.commands.append(["ZADD", key, *pairs])

    def zrem(self, key: str, *members: str) -> None:
        self.commands.append(["ZREM", key, *members])

    def expire(self, key: str, seconds: int) -> None:
        self.commands.append(["EXPIRE", key, str(seconds)])

    def xadd(
        self, stream: str, fields: Fields, *, maxlen: int | None = None, exact: bool = False
    ) -> None:
        trim = ["MAXLEN", "=" if exact else "~", str(maxlen)] if maxlen is not None else []
        values = (x for kv in fields.items() for x in kv)
        self.commands.append(["XADD", stream, *trim, "*", *values])

    def script_args(self, guards: Sequence[Guard]) -> list[str]:
        """``APPLY_IF``'s arguments: the guards (``KEYS`` are their keys), then the writes."""
        args = [str(len(guards))]
        for guard in guards:
            args += [
                "k" if guard.field is None else "f",
                guard.field or "",
                "1" if guard.expected is None else "0",
                guard.expected or "",
            ]
        for command in self.commands:
            args += [str(len(command)), *command]
        return args
