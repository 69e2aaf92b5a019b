"""Following a resource against kubesim over HTTP with the official client: a paged list,
then watch events; a watch resumed after an outage; an expired one listed again; a
cancelled one gone with its thread. Nothing of the ``kubernetes`` client is mocked."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from akkube.calls import Obj, resource_path, send
from akkube.client import api_client
from akkube.watch import ListWatch, describe
from akservice.testing import eventually
from kubesim.patch import MERGE_PATCH
from kubesim.testing import ThreadedKubeSim

NAMESPACE = "watched"
CONFIG_MAPS = resource_path("v1", "configmaps", NAMESPACE)
log = logging.getLogger("akkube.tests")


@dataclass
class Recorder:
    """A watcher keeping each of the test's ConfigMaps' ``v``, and what it was told."""

    name: str = "configmaps"
    path: str = CONFIG_MAPS
    rows: dict[str, str] = field(default_factory=dict)
    lists: int = 0
    connections: int = 0
    failures: list[str] = field(default_factory=list)

    def rows_of(self, items: list[Obj]) -> dict[str, Any]:
        return {
            obj["metadata"]["name"]: (obj.get("data") or {}).get("v", "")
            for obj in items
            if obj["metadata"]["name"].startswith("cm-")
        }

    def listed(self, rows: dict[str, Any]) -> None:
        self.rows = dict(rows)
        self.lists += 1

    def changed(self, kind: str, obj: Obj) -> None:
        found = self.rows_of([obj])
        for name in found:
            if kind == "DELETED":
                self.rows.pop(name, None)
            else:
                self.rows[name] = found[name]

    def connected(self) -> None:
        self.connections += 1

    def failed(self, exc: Exception) -> None:
        self.failures.append(describe(exc))


@pytest.fixture
def client(kubesim_kubeconfig: Path) -> Iterator[ApiClient]:
    made = api_client(kubesim_kubeconfig)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    assert send(made, "POST", resource_path("v1", "namespaces"), body=namespace).status == 201
    yield made
    made.close()  # type: ignore[no-untyped-call]


async def put(client: ApiClient, name: str, value: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"v": value},
    }
    answer = await asyncio.to_thread(send, client, "POST", CONFIG_MAPS, body=body)
    assert answer.status == 201, answer


@contextlib.asynccontextmanager
async def following(client: ApiClient, **options: Any) -> AsyncIterator[Recorder]:
    options.setdefault("backoff_s", (0.05, 0.5))
    recorder = Recorder()
    task = asyncio.create_task(ListWatch(client, log=log, **options).follow(recorder))
    try:
        await eventually(lambda: recorder.lists, what="the first list")
        yield recorder
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def store_call(sim: ThreadedKubeSim, action: Any) -> Any:
    """Run ``action(store, configmaps)`` on the simulator's loop, in one step."""
    store = sim.running.store
    return sim.call(lambda: action(store, store.catalog.get("", "v1", "configmaps")))


async def test_a_paged_list_then_every_change(client: ApiClient) -> None:
    for index in range(5):
        await put(client, f"cm-{index}", str(index))
    async with following(client, page_size=2) as recorder:
        assert recorder.rows == {f"cm-{i}": str(i) for i in range(5)}
        await put(client, "cm-new", "n")
        patch = {"data": {"v": "changed"}}
        path = resource_path("v1", "configmaps", NAMESPACE, "cm-0")
        await asyncio.to_thread(send, client, "PATCH", path, body=patch, content_type=MERGE_PATCH)
        await asyncio.to_thread(
            send, client, "DELETE", resource_path("v1", "configmaps", NAMESPACE, "cm-1")
        )
        expected = {"cm-0": "changed", "cm-2": "2", "cm-3": "3", "cm-4": "4", "cm-new": "n"}
        await eventually(lambda: recorder.rows, what="every change", until=expected.__eq__)
        assert (recorder.lists, recorder.failures) == (1, [])


async def test_a_watch_resumes_after_an_outage_from_where_it_was(
    client: ApiClient, kubesim_thread: ThreadedKubeSim
) -> None:
    async with following(client) as recorder:
        await put(client, "cm-a", "1")
        await eventually(lambda: recorder.rows, what="cm-a", until={"cm-a": "1"}.__eq__)
        kubesim_thread.call(lambda: kubesim_thread.faults.unavailable(1.0))
        await eventually(lambda: recorder.failures, what="the outage to be told")
        assert recorder.failures[0].startswith("503")

        def change(store: Any, configmaps: Any) -> None:  # behind the outage
            store.patch(configmaps, NAMESPACE, "cm-a", MERGE_PATCH, {"data": {"v": "2"}})

        store_call(kubesim_thread, change)
        await eventually(
            lambda: recorder.rows, what="the change replayed", until={"cm-a": "2"}.__eq__
        )
        assert recorder.lists == 1, "resumed from its version, not listed again"


async def test_an_expired_watch_lists_again(
    client: ApiClient, kubesim_thread: ThreadedKubeSim, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=log.name)
    async with following(client) as recorder:
        await put(client, "cm-old", "1")
        await eventually(lambda: recorder.rows, what="cm-old", until={"cm-old": "1"}.__eq__)

        def expire(store: Any, configmaps: Any) -> None:
            """Drop the watches, delete the object, forget the history: only a new list
            can tell that it is gone, and a watch from the old version gets 410 Gone."""
            store.close_watches()
            store.delete(configmaps, NAMESPACE, "cm-old")
            store.compact()

        store_call(kubesim_thread, expire)
        await eventually(lambda: recorder.rows, what="cm-old gone", until={}.__eq__)
        assert recorder.lists == 2
        assert recorder.failures == []
        told = [r.message for r in caplog.records]
        assert any("configmaps: " in m and "listing again" in m for m in told)
        await put(client, "cm-new", "2")
        await eventually(lambda: recorder.rows, what="cm-new", until={"cm-new": "2"}.__eq__)


async def test_cancelling_stops_the_watch_thread(client: ApiClient) -> None:
    async with following(client) as recorder:
        await eventually(lambda: recorder.connections, what="the watch to be open")
        assert any(t.name == "kube-watch" for t in threading.enumerate())
    await eventually(
        lambda: [t for t in threading.enumerate() if t.name == "kube-watch"],
        what="the watch thread to end",
        until=lambda threads: not threads,
    )
