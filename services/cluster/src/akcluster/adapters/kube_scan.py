"""Every object of the provider's leases read back at once, for recovery.

At start the cluster service compares each lease's objects, as its deploy would build them,
with what the cluster holds (:meth:`akcluster.deployments.Deployments.recover`). Reading
them lease by lease would take a request per object; here each kind is read once, with one
LIST across all namespaces — label-selected to ``akash.network=true``, page by page, the
next page asked for while one is used — and the leases are compared in the order the API
server lists objects (by namespace, then name: the lease namespaces' order), so a listing
is consumed as it arrives and only a page or two of each kind is held, however many leases
there are. ProviderHosts and ProviderLeasedIPs, named after hostnames and endpoints rather
than after leases, are read whole before the first is looked for.

The Manifest resources and lease namespaces that no lease asked for are what recovery adopts
or removes (:meth:`KubeScan.unclaimed`). Were a server to list in another order, an object
would be missed and its lease taken as changed: deployed again, which reads and writes one
object at a time — slower, never wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self

from akcluster.adapters.kube_adopt import adopted
from akcluster.adapters.kube_rules import fingerprint, up_to_date
from akcluster.domain.objects.base import MANAGED
from akcluster.domain.objects.reading import lease_id_of
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace

log = logging.getLogger("akcluster.kube_deploy")

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); "" for a cluster-scoped object
Pages = AsyncGenerator[list[Obj], None]

AKASH_API = "akash.network/v2beta2"
UNORDERED = frozenset({"ProviderHost", "ProviderLeasedIP"})  # not named after their lease
PAGE = 100  # objects per page: two pages of each kind are held at once


class Source(Protocol):
    """What a scan reads through, the ``kube`` backend
    (:class:`~akcluster.adapters.kube_deploy.KubeDeployments`): where the API serves a kind
    (None: not served), and the objects of one LIST page by page."""

    manifest_namespace: str

    async def _resource(self, api_version: str, kind: str) -> object | None: ...
    def _pages(
        self, resource: Any, namespace: str | None, selector: str = "", limit: int = 0
    ) -> Pages: ...


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class _Listing:
    """One kind's LIST, taken in the server's order; what is passed over goes to ``passed``."""

    def __init__(
        self, pages: Pages, *, ordered: bool, passed: Callable[[Obj], None] | None = None
    ) -> None:
        self._pages = pages
        self._ordered = ordered
        self._passed = passed
        self._queue: deque[tuple[Key, Obj]] = deque()  # ordered: what is read, not yet taken
        self._held: dict[Key, Obj] = {}  # unordered: everything
        self._next: asyncio.Future[list[Obj] | None] | None = None
        self._done = False

    async def _read(self) -> None:
        """Take in the next page, and ask for the one after it meanwhile."""
        future = self._next or asyncio.ensure_future(anext(self._pages, None))
        self._next = None
        page = await future
        if page is None:
            self._done = True
            return
        self._next = asyncio.ensure_future(anext(self._pages, None))
        for obj in page:
            if self._ordered:
                self._queue.append((_key(obj), obj))
            else:
                self._held[_key(obj)] = obj

    def _pass(self) -> None:
        _, obj = self._queue.popleft()
        if self._passed is not None:
            self._passed(obj)

    async def take(self, key: Key) -> Obj | None:
        """The object at ``key``; None when there is none (keys asked for must grow)."""
        if not self._ordered:
            while not self._done:
                await self._read()
            return self._held.pop(key, None)
        while True:
            while self._queue and self._queue[0][0] < key:
                self._pass()
            if self._queue:
                return self._queue.popleft()[1] if self._queue[0][0] == key else None
            if self._done:
                return None
            await self._read()

    async def finish(self) -> None:
        """Read to the end, passing over everything not taken yet."""
        while True:
            while self._queue:
                self._pass()
            if self._done:
                return
            await self._read()

    async def close(self) -> None:
        if self._next is not None:
            self._next.cancel()
            with contextlib.suppress(BaseException):
                await self._next
        await self._pages.aclose()


class KubeScan:
    """One reading of every lease's objects: :meth:`unchanged` lease after lease, in the
    order of their namespaces' names, then :meth:`unclaimed`; ``async with`` it."""

    def __init__(self, kube: Source) -> None:
        self._kube = kube
        self._listings: dict[tuple[str, str], _Listing | None] = {}
        self._manifests: list[LeaseID] = []
        self._namespaces: list[LeaseID] = []

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for listing in self._listings.values():
            if listing is not None:
                await listing.close()

    async def unchanged(self, objects: Sequence[Mapping[str, Any]]) -> bool:
        """Whether the cluster holds each of a lease's ``objects`` as applying it would leave
        it (:func:`~akcluster.adapters.kube_rules.up_to_date`), none being deleted."""
        same = True
        for desired in sorted(objects, key=lambda o: (o["apiVersion"], o["kind"], _key(o))):
            api_version, kind = str(desired["apiVersion"]), str(desired["kind"])
            listing = await self._listing(api_version, kind)
            labels = (desired.get("metadata") or {}).get("labels") or {}
            if listing is None or (kind != "Manifest" and labels.get(MANAGED) != "true"):
                same = False  # not served, or not selected by the listing: apply it
                continue
            current = await listing.take(_key(desired))
            same = same and (
                current is not None
                and not current["metadata"].get("deletionTimestamp")
                and up_to_date(current, adopted(current, desired), fingerprint(desired))
            )
        return same

    async def unclaimed(self) -> tuple[list[LeaseID], list[LeaseID]]:
        """The leases of the Manifest resources, and of the lease namespaces (not being
        deleted), that no :meth:`unchanged` asked for: (manifests, namespaces)."""
        for api_version, kind in ((AKASH_API, "Manifest"), ("v1", "Namespace")):
            listing = await self._listing(api_version, kind)
            if listing is not None:
                await listing.finish()
        return self._manifests, self._namespaces

    async def _listing(self, api_version: str, kind: str) -> _Listing | None:
        if (api_version, kind) not in self._listings:
            kube = self._kube
            resource = await kube._resource(api_version, kind)
            listing = None
            if resource is not None:
                manifests = api_version == AKASH_API  # they all live in the manifest namespace
                pages = kube._pages(
                    resource,
                    kube.manifest_namespace if manifests else None,
                    "" if kind == "Manifest" else f"{MANAGED}=true",
                    limit=PAGE,
                )
                passed = {"Manifest": self._manifest, "Namespace": self._namespace}.get(kind)
                listing = _Listing(pages, ordered=kind not in UNORDERED, passed=passed)
            self._listings[(api_version, kind)] = listing
        return self._listings[(api_version, kind)]

    def _manifest(self, obj: Obj) -> None:
        lease_id = lease_id_of(obj)
        if lease_id is None:
            log.warning("Manifest %s names no lease; ignored", obj["metadata"]["name"])
        else:
            self._manifests.append(lease_id)

    def _namespace(self, obj: Obj) -> None:
        name, lease_id = str(obj["metadata"]["name"]), lease_id_of(obj)
        if obj["metadata"].get("deletionTimestamp"):
            return
        if lease_id is None:
            return  # one of ours (akash.network=true) but no lease's
        if lease_namespace(lease_id) != name:
            log.warning("namespace %s has lease labels of no lease of its name", name)
            return
        self._namespaces.append(lease_id)
