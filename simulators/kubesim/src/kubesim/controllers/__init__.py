"""kwok-style controllers that make the simulated cluster behave like a real one.

`Controllers.run()` is one loop: any write to the store (or a fault switch, or a timer a
controller asked for) wakes it, and it runs every enabled controller until a pass writes
nothing. Each controller can be switched off (`ControllerSettings.enabled`) so a test can
play that part itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from kubesim.cluster import ClusterSpec
from kubesim.controllers import housekeeping, pods, workloads
from kubesim.controllers.base import CONTROLLERS, Context, ControllerSettings, monotonic
from kubesim.controllers.events import EventTTL
from kubesim.faults import Faults
from kubesim.store import Store

__all__ = ["CONTROLLERS", "ControllerSettings", "Controllers"]

SLOW_PASS_S = 0.02  # small clusters (every test's) never rest

log = logging.getLogger("kubesim.controllers")

MAX_PASSES = 50  # a pass that keeps writing is a bug; stop and try again on the next wake


class Controllers:
    def __init__(
        self,
        store: Store,
        faults: Faults,
        cluster: ClusterSpec,
        settings: ControllerSettings,
        kubelet_version: str,
    ) -> None:
        self.ctx = Context(store, faults, cluster, settings)
        self.kubelet_version = kubelet_version
        self._wake = asyncio.Event()
        store.listeners.append(lambda _event: self._wake.set())
        faults.on_change.append(self._wake.set)
        table: list[tuple[str, Callable[[Context], None]]] = [
            ("namespaces", housekeeping.namespaces),
            ("garbage-collector", housekeeping.garbage_collector),
            ("nodes", housekeeping.nodes),
            ("volumes", housekeeping.volumes),
            ("deployments", workloads.deployments),
            ("replicasets", workloads.replicasets),
            ("statefulsets", workloads.statefulsets),
            ("scheduler", pods.scheduler),
            ("kubelet", pods.Kubelets()),
        ]
        if "events" in settings.enabled:
            expiry = EventTTL(settings.event_ttl)
            store.listeners.append(expiry.written)
            table.append(("events", expiry))
        self._passes = [(name, run) for name, run in table if name in settings.enabled]

    def bootstrap(self) -> None:
        housekeeping.bootstrap(self.ctx, self.kubelet_version)

    def reconcile(self) -> None:
        """Run the controllers until a pass changes nothing."""
        for _ in range(MAX_PASSES):
            before = self.ctx.store.rv
            for name, run in self._passes:
                try:
                    run(self.ctx)
                except Exception:
                    log.exception("controller %s failed", name)
            if self.ctx.store.rv == before:
                return
        log.warning("controllers still writing after %d passes", MAX_PASSES)

    async def run(self) -> None:
        while True:
            timers = list(self.ctx.timers)  # one already due means: run again at once
            self.ctx.timers.clear()
            timeout = max(min(timers) - monotonic(), 0.0) if timers else None
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that races with the wake-up, and then stop() waits forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            self._wake.clear()
            started = monotonic()
            self.reconcile()
            # a pass reads every object, so on a big cluster under a stream of writes
            # back-to-back passes would starve the API: after a slow pass, rest as long
            took = monotonic() - started
            await asyncio.sleep(min(took, 2.0) if took > SLOW_PASS_S else 0)
