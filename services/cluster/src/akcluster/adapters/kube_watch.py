"""Which lease namespaces changed: the objects a lease's status is read from, followed
through Kubernetes watches (:class:`akkube.watch.ListWatch`).

Deployments, StatefulSets, Services, Ingresses and pods labelled ``akash.network=true``
(every object of a lease, the operators' included) are listed, then watched, each kind on a
connection of its own. Nothing of the objects is kept: an event only names its namespace
(``touched``), a whole list names every namespace it holds (``relisted``: what changed
while the watch was down is not told otherwise), and :attr:`LeaseWatches.live` says whether
every watch is connected, so that what was told can be taken as all that changed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Self

from akkube.calls import Obj, resource_path
from akkube.client import ApiClient, api_client
from akkube.watch import ListWatch, describe

log = logging.getLogger("akcluster.kube_watch")

SELECTOR = "akash.network=true"
KINDS = (
    ("apps/v1", "deployments"),
    ("apps/v1", "statefulsets"),
    ("v1", "services"),
    ("networking.k8s.io/v1", "ingresses"),
    ("v1", "pods"),
)


class _Follower:
    """One kind, as :class:`akkube.watch.Watcher`: namespaces out, nothing kept."""

    def __init__(self, owner: LeaseWatches, api_version: str, plural: str) -> None:
        self.owner = owner
        self.name = plural
        self.path = resource_path(api_version, plural)

    def rows_of(self, items: list[Obj]) -> dict[str, Any]:
        return {str(i["metadata"].get("namespace") or ""): True for i in items}

    def listed(self, rows: dict[str, Any]) -> None:
        self.owner.relisted(rows)
        self.owner.up(self.name)

    def changed(self, kind: str, obj: Obj) -> None:
        del kind
        self.owner.touched(str((obj.get("metadata") or {}).get("namespace") or ""))

    def connected(self) -> None:
        self.owner.up(self.name)

    def failed(self, exc: Exception) -> None:
        self.owner.down(self.name, exc)


class LeaseWatches:
    """Follows :data:`KINDS`; tells ``touched(namespace)`` for every event and
    ``relisted(namespaces)`` for every list (on the event loop). As an async context
    manager, it closes its client on exit."""

    def __init__(
        self,
        client: ApiClient,
        touched: Callable[[str], None],
        relisted: Callable[[Iterable[str]], None],
    ) -> None:
        self.touched = touched
        self.relisted = relisted
        self._watch = ListWatch(client, log=log)
        self._followers = [_Follower(self, v, p) for v, p in KINDS]
        self._down: dict[str, float] = {f.name: time.monotonic() for f in self._followers}

    @classmethod
    def from_kubeconfig(
        cls,
        path: Path | None,
        touched: Callable[[str], None],
        relisted: Callable[[Iterable[str]], None],
    ) -> LeaseWatches:
        """On a client of its own (each watch holds a connection)."""
        return cls(api_client(path), touched, relisted)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._watch.client.close()  # type: ignore[no-untyped-call]

    @property
    def live(self) -> bool:
        """Every kind listed and its watch connected, with no failure since."""
        return not self._down

    def up(self, name: str) -> None:
        if self._down.pop(name, None) is not None:
            log.debug("watching %s", name)

    def down(self, name: str, exc: Exception) -> None:
        if name not in self._down:
            log.warning("the watch of %s failed: %s", name, describe(exc))
        self._down.setdefault(name, time.monotonic())

    async def run(self) -> None:
        """Follow every kind until cancelled (a supervised task)."""
        async with asyncio.TaskGroup() as tasks:
            for follower in self._followers:
                tasks.create_task(self._watch.follow(follower, selector=SELECTOR))
