"""The worker of the deployment managers: every due step, a few leases at a time.

It reads the work queue (:meth:`akbus.Records.due`) every ``poll_s`` and whenever woken (an
event or a migration queued a step now), and runs each due lease's next step in a task of its
own, at most ``concurrency`` at once and one per lease: the teardown of a closing lease, the
deploy of one whose manifest is not applied yet, else its health check. A step that fails is
retried five seconds later; a Redis outage pauses the work, nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from akbus.errors import ConnectionLost
from akbus.retry import until_reachable
from akcluster.deployments.context import Context
from akcluster.deployments.health import Health
from akcluster.deployments.steps import Steps

log = logging.getLogger("akcluster.deployments")


class Worker:
    """Takes the due steps of the work queue and runs them."""

    def __init__(self, context: Context, steps: Steps, health: Health, concurrency: int) -> None:
        self.records = context.records
        self.clock = context.clock
        self.wake = context.wake
        self.steps = steps
        self.health = health
        self._busy: set[str] = set()
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, stopping: asyncio.Event, poll_s: float = 1.0) -> None:
        """Take every due step, a few leases at a time, until ``stopping``."""
        try:
            while not stopping.is_set():
                self.wake.clear()
                try:  # a Redis outage pauses the work, nothing more
                    due = await until_reachable(
                        "work queue",
                        lambda: self.records.due(self.clock()),
                        keep_going=lambda: not stopping.is_set(),
                    )
                except ConnectionLost:  # given up only because the service is stopping
                    break
                for member, _ in due:
                    if member in self._busy:
                        continue
                    await self._slots.acquire()
                    if stopping.is_set():
                        self._slots.release()
                        break
                    self._busy.add(member)
                    task = asyncio.create_task(self._step(member), name=f"lease {member}")
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(poll_s):
                        await self.wake.wait()
        finally:
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _step(self, member: str) -> None:
        try:
            record = await self.records.get(member)
            if record is None:
                await self.records.reschedule(member, None)
            elif record.state == "closing":
                await self.steps.teardown(record)
            elif record.state == "closed":
                await self.records.reschedule(member, None)
            elif record.state == "deploying" or record.applied != record.version:
                await self.steps.deploy(record)
            else:
                await self.health.check(record)
        except Exception:
            log.exception("lease %s: step failed; retrying later", member)
            with contextlib.suppress(Exception):
                await self.records.reschedule(member, self.clock() + 5.0)
        finally:
            self._busy.discard(member)
            self._slots.release()
