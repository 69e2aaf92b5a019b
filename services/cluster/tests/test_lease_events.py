"""The cluster's history of a lease's Kubernetes events, on kubesim over HTTP and a real
Redis: a crash loop's events kept past kubesim's event TTL, the stream bounded, nothing
added twice by a restarted writer, nothing after the teardown, and all of it gone a
retention later."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from akbus import Bus, RedisSettings
from akcluster.adapters.kube_events import KubeLeaseEvents
from akcluster.domain.leaseevents import closed_key
from akcluster.domain.objects.base import lease_labels
from akcluster.leaseevents import LeaseEvents
from akservice.testing import eventually
from aktypes.ids import LeaseID
from aktypes.leaseevents import lease_events_stream, read_entry
from aktypes.namespace import lease_namespace
from aktypes.testing import address
from kubesim.controllers import ControllerSettings
from kubesim.testing import ThreadedKubeSim

LEASE = LeaseID(owner=address(1), dseq=41, gseq=1, oseq=1, provider=address(2))
OTHER = LeaseID(owner=address(3), dseq=42, gseq=1, oseq=1, provider=address(2))
TTL_S, MAXLEN, RETENTION_S = 3.0, 12, 2


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[tuple[ThreadedKubeSim, Any]]:
    settings = ControllerSettings(pod_start_delay=0.05, crash_interval=0.2, event_ttl=TTL_S)
    with ThreadedKubeSim(controllers=settings) as sim:
        path = sim.write_kubeconfig(tmp_path / "kubeconfig")
        client = kubernetes.config.new_client_from_config(str(path))  # type: ignore[no-untyped-call]
        with client:
            core = kubernetes.client.CoreV1Api(client)
            for lease in (LEASE, OTHER):
                core.create_namespace(
                    {"metadata": {"name": lease_namespace(lease), "labels": lease_labels(lease)}}
                )
            core.create_namespace({"metadata": {"name": "plain"}})
            yield sim, core


@contextlib.asynccontextmanager
async def writer(bus: Bus, kubeconfig: Path) -> AsyncIterator[LeaseEvents]:
    """The history writer and its watch, as the cluster service runs them."""
    history = LeaseEvents(bus, maxlen=MAXLEN, retention_s=RETENTION_S)
    async with KubeLeaseEvents.from_kubeconfig(kubeconfig) as source:
        tasks = [
            asyncio.create_task(history.run()),
            asyncio.create_task(source.follow(history.take)),
        ]
        try:
            yield history
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def kept(bus: Bus, lease: LeaseID) -> list[tuple[str, dict[str, str]]]:
    return [(e.id, e.fields) for e in await bus.backend.entries(lease_events_stream(lease))]


def marker(core: Any, namespace: str, name: str) -> None:
    """An Event written by hand."""
    core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": namespace},
            "reason": "Marked",
            "message": name,
            "type": "Normal",
        },
    )


def reason(fields: dict[str, str]) -> str:
    entry = read_entry(fields)
    return "" if entry is None or entry.closed else str(entry.event.get("reason"))


def occurrences(core: Any, namespace: str) -> set[tuple[str, int]]:
    """(uid, count) of each Event the cluster holds in ``namespace`` now."""
    return {(e.metadata.uid, e.count or 1) for e in core.list_namespaced_event(namespace).items}


async def test_a_crash_loop_kept_past_the_ttl_once_and_until_the_retention(
    redis_url: str, tmp_path: Path, kube: tuple[ThreadedKubeSim, Any]
) -> None:
    sim, core = kube
    namespace = lease_namespace(LEASE)
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
    try:
        async with writer(bus, tmp_path / "kubeconfig"):
            sim.call(lambda: sim.faults.crashloop(namespace, "app=web"))
            container = {"name": "app", "image": "nginx:1.27"}
            pod = {"metadata": {"name": "web-0", "labels": {"app": "web"}}}
            core.create_namespaced_pod(namespace, {**pod, "spec": {"containers": [container]}})
            core.create_namespaced_pod("plain", {**pod, "spec": {"containers": [container]}})
            # more occurrences than the stream keeps: exactly MAXLEN of them stay
            entries = await eventually(
                lambda: kept(bus, LEASE),
                timeout_s=20,
                what="a full stream of crash-loop events",
                until=lambda got: len(got) == MAXLEN and "BackOff" in {reason(f) for _, f in got},
            )
            assert len({(f["uid"], f["count"]) for _, f in entries}) == MAXLEN  # each once
            assert {read_entry(f).event["involvedObject"]["namespace"] for _, f in entries} == {  # type: ignore[union-attr]
                namespace
            }
            sim.call(sim.faults.heal)
            await eventually(
                lambda: core.read_namespaced_pod("web-0", namespace).status.container_statuses[0],
                what="the pod running again",
                until=lambda status: status.state.running is not None,
            )
            await eventually(  # every occurrence there is, written
                lambda: kept(bus, LEASE),
                what="the last occurrences kept",
                until=lambda got: (
                    {(f["uid"], int(f["count"])) for _, f in got}
                    >= {o for o in occurrences(core, namespace) if o[1] > 1}
                ),
            )
        before = await kept(bus, LEASE)
        assert occurrences(core, namespace)  # still in the cluster when the writer restarts

        # a restarted writer lists every event again and adds none of them twice
        async with writer(bus, tmp_path / "kubeconfig"):
            marker(core, namespace, "after-restart")
            after = await eventually(
                lambda: kept(bus, LEASE),
                what="the event made after the restart",
                until=lambda got: "after-restart" in got[-1][1]["event"],
            )
            assert [reason(f) for i, f in after if i > before[-1][0]] == ["Marked"]
            # past kubesim's event TTL the cluster has none of them; the history has them all
            await eventually(
                lambda: occurrences(core, namespace), TTL_S + 10, "expiry", until=lambda o: not o
            )
            assert len(await kept(bus, LEASE)) == MAXLEN

            # the teardown ends the stream; an event after it is not added
            closing = LeaseEvents(bus, maxlen=MAXLEN, retention_s=RETENTION_S)
            await closing.close(LEASE)
            await closing.close(LEASE)  # a LeaseTornDown delivered again: one end
            marker(core, namespace, "too-late")
            marker(core, lease_namespace(OTHER), "other-lease")  # written after too-late
            await eventually(lambda: kept(bus, OTHER), what="the other lease's event")
        closed = await kept(bus, LEASE)
        assert [reason(f) for _, f in closed[-2:]] == ["Marked", ""]
        assert read_entry(closed[-1][1]).closed  # type: ignore[union-attr]
        assert not any("too-late" in f.get("event", "") for _, f in closed)
        assert [reason(f) for _, f in await kept(bus, OTHER)] == ["Marked"]
        # a retention after the teardown, nothing of the lease is left
        await eventually(
            lambda: left(bus, LEASE), RETENTION_S + 5, "the retention", until=(0, None).__eq__
        )
    finally:
        await bus.close()


async def left(bus: Bus, lease: LeaseID) -> tuple[int, str | None]:
    stream = lease_events_stream(lease)
    return await bus.backend.length(stream), await bus.backend.get(closed_key(lease))
