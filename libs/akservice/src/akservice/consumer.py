"""A process's consumer name, stable across restarts, and a lease that keeps it unique.

The name is ``<service>-<host>-<instance id>``: the pod's name (``POD_NAME``) or the host's,
plus ``AP_INSTANCE_ID``, never the PID. A process restarted on the same host gets the same
name and so takes back at once the entries it had been handed and not acknowledged,
rather than waiting for another consumer to claim them as a dead one's.

Two live processes under one name would share those entries, so each holds a lease on its
name in Redis (``akservice:consumer:<name>``, renewed while it runs). A restarted process
takes over the lease of its previous incarnation (same host, and that PID is gone or is
its own); a live process on the same host holding it is refused at once with a clear
error; a holder elsewhere is waited out for one lease period.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import socket
import time

from akbus import Bus, BusTx, ConnectionLost
from akservice.health import StartupError

LEASE_TTL_S = 15


def host_name() -> str:
    return os.environ.get("POD_NAME") or socket.gethostname() or "host"


def consumer_name(service: str, instance_id: str) -> str:
    """``<service>-<host>-<instance>``, with characters Redis keys and logs read well."""
    raw = f"{service}-{host_name()}-{instance_id}"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", raw)


def lease_key(name: str) -> str:
    return f"akservice:consumer:{name}"


class ConsumerLease:
    """Exclusive use of a consumer name by this process while it runs."""

    def __init__(self, bus: Bus, name: str, *, ttl_s: int = LEASE_TTL_S) -> None:
        self.bus, self.name, self.ttl_s = bus, name, ttl_s
        self.key = lease_key(name)
        self.value = f"{host_name()}|{os.getpid()}|{secrets.token_hex(8)}"

    def _may_take(self, holder: str) -> bool:
        """A lease this process may take over: its own, or a dead predecessor's here."""
        if holder == self.value:
            return True
        host, _, rest = holder.partition("|")
        pid_text = rest.partition("|")[0]
        if host != host_name() or not pid_text.isdigit():
            return False
        pid = int(pid_text)
        if pid == os.getpid():  # a container restarted: the same PID, a new process
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    async def _try(self) -> str | None:
        """Take or renew the lease; the other holder when it is not ours to take."""
        other: str | None = None

        async def body(tx: BusTx) -> None:
            nonlocal other
            holder = await tx.state.get(self.key)
            if holder is not None and not self._may_take(holder):
                other = holder
                return
            other = None
            tx.state.set(self.key, self.value, ex=self.ttl_s)

        await self.bus.transact(body)
        return other

    async def acquire(self) -> None:
        """Take the lease, or raise :class:`StartupError` if a live process holds it.

        A holder on another host (its lease cannot be checked from here) is waited out
        for one lease period.
        """
        deadline = time.monotonic() + self.ttl_s + 1
        while (holder := await self._try()) is not None:
            host, _, rest = holder.partition("|")
            if host == host_name() or time.monotonic() > deadline:
                raise StartupError(
                    f"another process (pid {rest.partition('|')[0]} on {host}) runs as "
                    f"consumer {self.name}: give each process of a service on one host its "
                    "own AP_INSTANCE_ID"
                )
            await asyncio.sleep(1.0)

    async def keep(self) -> None:
        """Renew the lease until cancelled; raise if another process took it."""
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            try:
                holder = await self._try()
            except ConnectionLost:
                continue  # Redis is away; renew when it is back
            if holder is not None:
                raise StartupError(f"consumer {self.name} was taken over by {holder}")

    async def release(self) -> None:
        async def body(tx: BusTx) -> None:
            if await tx.state.get(self.key) == self.value:
                tx.state.delete(self.key)

        with contextlib.suppress(ConnectionLost):
            await self.bus.transact(body)
