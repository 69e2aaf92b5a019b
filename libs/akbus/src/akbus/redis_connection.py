"""Connecting to Redis: URL schemes, Sentinel, a blocking pool, cheaper commands.

``redis://``, ``rediss://`` and ``unix://`` URLs get a blocking connection pool (callers
beyond ``max_connections`` wait their turn); ``redis+sentinel://`` URLs get the master of
the named service through the sentinels. The connections of the first kind pack commands
with hiredis and bound their writes without a task per command.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis
from hiredis import pack_command as hiredis_pack
from redis import exceptions as rexc
from redis.asyncio.connection import (
    AbstractConnection,
    BlockingConnectionPool,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool

from akbus.settings import RedisSettings, parse_sentinel


class _HiredisPacking:
    """Pack commands with hiredis (C) instead of redis-py's Python packer.

    redis-py's asyncio connections always pack in Python, which costs ~8x more than
    hiredis for the eight-field entries the bus writes.
    """

    def pack_command(self, *args: Any) -> list[bytes]:
        if isinstance(args[0], str) and " " in args[0]:
            args = (*args[0].split(), *args[1:])
        try:
            packed: bytes = hiredis_pack(args)
        except UnicodeEncodeError:  # text read from undecodable bytes: write those bytes back
            packed = hiredis_pack(tuple(_raw(arg) for arg in args))
        return [packed]


def _raw(arg: Any) -> Any:
    return arg.encode("utf-8", "surrogateescape") if isinstance(arg, str) else arg


class _LeanWrites(AbstractConnection):
    """Bound each write with ``asyncio.timeout`` instead of redis-py's ``asyncio.wait_for``.

    On Python 3.11 ``wait_for`` runs every write as a task of its own: two more passes
    through the event loop per command. The deadline, the disconnect on failure and the
    errors raised stay those of redis-py.
    """

    async def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        if not self.is_connected:
            await self.connect_check_health(check_health=False)
        if check_health:
            await self.check_health()  # type: ignore[no-untyped-call]
        if isinstance(command, str):
            command = command.encode()
        if isinstance(command, bytes):
            command = [command]
        try:
            writer = self._writer
            if writer is None:
                raise ConnectionResetError("not connected")
            writer.writelines(command)
            async with asyncio.timeout(self.socket_timeout):
                await writer.drain()
        except TimeoutError:
            await self.disconnect(nowait=True)
            raise rexc.TimeoutError("Timeout writing to socket") from None
        except OSError as exc:
            await self.disconnect(nowait=True)
            raise rexc.ConnectionError(f"Error while writing to socket: {exc}") from exc
        except BaseException:
            await self.disconnect(nowait=True)
            raise


class _FastConnection(_HiredisPacking, _LeanWrites, Connection):
    pass


class _FastUnixConnection(_HiredisPacking, _LeanWrites, UnixDomainSocketConnection):
    pass


class _FastSSLConnection(_HiredisPacking, _LeanWrites, SSLConnection):
    pass


class _BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """The sentinel's master pool, waiting for a free connection like the plain one."""


def _fast_class(url: str) -> type[AbstractConnection]:
    if url.startswith("unix://"):
        return _FastUnixConnection
    return _FastSSLConnection if url.startswith("rediss://") else _FastConnection


def connect(settings: RedisSettings) -> tuple[aioredis.Redis, list[aioredis.Redis]]:
    """A client for ``settings.url`` (connecting on first use), and any helper clients.

    For Sentinel the helpers are the connections to the sentinels, closed with the client.
    """
    password = settings.password.get_secret_value() if settings.password else None
    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": settings.socket_timeout_s,
        "socket_connect_timeout": settings.connect_timeout_s,
        "health_check_interval": 30,
        # An entry holding bytes that are not UTF-8 must reach the dead-letter stream, not
        # crash the reader: such bytes decode to lone surrogates (and encode back unchanged);
        # aktypes refuses them as an unreadable entry.
        "encoding_errors": "surrogateescape",
    }
    if settings.is_sentinel:
        target = parse_sentinel(settings.url)
        sentinel = Sentinel(  # type: ignore[no-untyped-call]
            target.hosts,
            sentinel_kwargs={"password": target.password, **common},
            password=password or target.password,
            db=target.db,
            **common,
        )
        client: aioredis.Redis = sentinel.master_for(
            target.service,
            connection_pool_class=_BlockingSentinelPool,
            max_connections=settings.max_connections,
            timeout=None,
        )
        return client, list(sentinel.sentinels)
    kwargs = dict(common, max_connections=settings.max_connections)
    if password:
        kwargs["password"] = password
    # A blocking pool: more concurrent commands than connections wait their turn instead of
    # failing with "Too many connections" (which would read as Redis being unreachable).
    pool = BlockingConnectionPool.from_url(settings.url, timeout=None, **kwargs)
    # from_url picks the connection class from the scheme; swap in the hiredis-packing one
    pool.connection_class = _fast_class(settings.url)
    return aioredis.Redis.from_pool(pool), []
