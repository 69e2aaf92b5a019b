"""A lease's pods for the log streams of REST's websockets and of gRPC's LeaseRPC: the
running pods of the services asked for, and their lines merged as they come."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TypeVar

from akgateway.adapters.kube import LeaseCluster, Pod
from akgateway.errors import NotFound
from aktypes.ids import LeaseID

T = TypeVar("T")


async def running_pods(kube: LeaseCluster, lease: LeaseID, services: list[str]) -> list[Pod]:
    """The lease's pods of ``services`` (all: empty); NotFound naming a service with none."""
    pods = await kube.pods(lease, services)
    missing = sorted(set(services) - {p.service for p in pods})
    if missing:
        raise NotFound(f"lease {lease} has no running service {', '.join(missing)}")
    return pods


async def merged(
    pods: list[Pod], source: Callable[[Pod], AsyncIterator[T]]
) -> AsyncIterator[tuple[Pod, T]]:
    """Every pod's items as they come, through one bounded queue (a slow reader slows its
    own stream only); ends when every source has ended, raises what a source raised."""
    queue: asyncio.Queue[tuple[Pod, T] | None] = asyncio.Queue(64)

    async def drain(pod: Pod) -> None:
        items = source(pod)
        try:
            async for item in items:
                await queue.put((pod, item))
        finally:
            if isinstance(items, AsyncGenerator):  # closed now: its reader thread stops
                await items.aclose()

    async def all_of() -> None:
        try:
            await asyncio.gather(*(drain(p) for p in pods))
        finally:
            await queue.put(None)

    task = asyncio.create_task(all_of())
    try:
        while (item := await queue.get()) is not None:
            yield item
        await task  # raises what a source raised
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
