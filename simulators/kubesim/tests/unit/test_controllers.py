"""The controller loop itself: timers that fall due while the loop is busy are not lost."""

from __future__ import annotations

import asyncio
import time

from akservice.testing import eventually
from kubesim.controllers import ControllerSettings
from kubesim.sim import KubeSim


async def test_a_timer_that_fell_due_while_the_loop_was_busy_still_fires() -> None:
    sim = KubeSim(controllers=ControllerSettings(pod_start_delay=0.05))
    store, controllers = sim.store, sim.controllers
    controllers.bootstrap()
    pods = store.catalog.get("", "v1", "pods")
    assert pods is not None
    store.create(
        pods,
        "default",
        {
            "metadata": {"name": "p"},
            "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    controllers.reconcile()  # the kubelet starts the pod and asks to be woken when it runs
    pod = store.find(("", "pods"), "default", "p")
    assert pod is not None
    assert pod["status"]["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "ContainerCreating"}
    }
    assert controllers.ctx.timers, "the kubelet asked for no wake-up"

    time.sleep(0.1)  # the loop is busy elsewhere: the wake-up time passes
    controllers._wake.clear()  # and nothing else is written from now on
    task = asyncio.create_task(controllers.run())
    try:
        await eventually(
            lambda: (store.find(("", "pods"), "default", "p") or {}).get("status", {}),
            5,
            "the pod running (else the due timer was dropped)",
            until=lambda status: status.get("phase") == "Running",
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
