"""The operators' Kubernetes client: plain JSON requests by path through the official
client's ``ApiClient`` (its kubeconfig, TLS and token handling: :mod:`akkube.client`,
:mod:`akkube.calls`), each on a worker thread under a timeout so a hung API server never
holds the event loop.

Only what the operators need: get, list, create, replace, merge-patch, delete, and
:meth:`Kube.ensure` (create, or replace when what the server holds differs in the fields
the operator owns). Failures are :class:`KubeError` with the server's status and message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from akkube.calls import send
from akkube.client import ApiClient, ApiException, api_client
from akoperators.errors import KubeError

Obj = dict[str, Any]


class Kube:
    """Async JSON requests against one API server."""

    def __init__(self, client: ApiClient, *, timeout_s: float = 30.0) -> None:
        self.client = client
        self.timeout_s = timeout_s

    @classmethod
    def from_kubeconfig(cls, path: Path | None = None, **kw: Any) -> Kube:
        return cls(api_client(path), **kw)

    def close(self) -> None:
        self.client.close()  # type: ignore[no-untyped-call]

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> Obj:
        return await asyncio.to_thread(self._blocking, method, path, query, body, content_type)

    async def get(self, path: str) -> Obj | None:
        """The object at ``path``; None when there is none (404)."""
        try:
            return await self.request("GET", path)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    async def list(self, path: str, *, selector: str = "") -> list[Obj]:
        query = [("labelSelector", selector)] if selector else []
        items: list[Obj] = (await self.request("GET", path, query=query)).get("items") or []
        return items

    async def create(self, path: str, obj: Obj) -> Obj:
        return await self.request("POST", path, body=obj)

    async def patch(self, path: str, patch: Obj) -> Obj:
        return await self.request(
            "PATCH", path, body=patch, content_type="application/merge-patch+json"
        )

    async def delete(self, path: str) -> bool:
        """Delete ``path``; False when it was already gone."""
        try:
            await self.request("DELETE", path, body={"propagationPolicy": "Background"})
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def ensure(self, collection: str, desired: Obj, *, owned: Sequence[str]) -> str:
        """Make the object ``desired`` (posted to ``collection``) exist as desired.

        ``owned`` names the top-level fields the operator decides (``spec``…); labels and
        annotations it sets are compared too, others on the object are kept. Returns
        ``created``, ``updated`` or ``unchanged``; a concurrent change (409) is read again.
        """
        name = desired["metadata"]["name"]
        for _ in range(5):
            current = await self.get(f"{collection}/{name}")
            if current is None:
                try:
                    await self.create(collection, desired)
                    return "created"
                except KubeError as exc:
                    if exc.status != 409:
                        raise
                    continue
            if _holds(current, desired, owned):
                return "unchanged"
            meta = current["metadata"]
            updated = {**current, **{field: desired[field] for field in owned if field in desired}}
            updated["metadata"] = {
                **meta,
                "labels": {**(meta.get("labels") or {}), **desired["metadata"].get("labels", {})},
                "annotations": {
                    **(meta.get("annotations") or {}),
                    **desired["metadata"].get("annotations", {}),
                },
            }
            try:
                await self.request("PUT", f"{collection}/{name}", body=updated)
                return "updated"
            except KubeError as exc:
                if exc.status != 409:
                    raise
        raise KubeError(409, f"{collection}/{name} kept changing while it was written")

    async def drift(self, collection: str, desired: Obj, *, owned: Sequence[str]) -> str:
        """What :meth:`ensure` would do, without doing it: ``missing``, ``differs`` or
        ``unchanged`` (read-only checks, such as ``akash-provider cluster check``)."""
        current = await self.get(f"{collection}/{desired['metadata']['name']}")
        if current is None:
            return "missing"
        return "unchanged" if _holds(current, desired, owned) else "differs"

    async def access_review(
        self,
        verb: str,
        group: str,
        resource: str,
        *,
        namespace: str | None = None,
        name: str | None = None,
    ) -> bool:
        """Whether this client may ``verb`` the resource (a SelfSubjectAccessReview, as
        ``kubectl auth can-i`` asks); ``resource`` may name a subresource: ``pods/log``."""
        resource, _, subresource = resource.partition("/")
        attributes = {"verb": verb, "group": group, "resource": resource}
        if subresource:
            attributes["subresource"] = subresource
        if namespace:
            attributes["namespace"] = namespace
        if name:
            attributes["name"] = name
        review = await self.request(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            body={
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes},
            },
        )
        return bool((review.get("status") or {}).get("allowed"))

    def _blocking(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, Any]],
        body: Any,
        content_type: str,
    ) -> Obj:
        try:
            answer = send(
                self.client,
                method,
                path,
                query=query,
                body=body,
                content_type=content_type,
                timeout=self.timeout_s,
            )
        except ApiException as exc:
            raise KubeError(int(exc.status or 0), str(exc.reason or exc)) from None
        except Exception as exc:  # urllib3: refused, reset, timed out
            raise KubeError(0, f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}") from None
        if not 200 <= answer.status < 300:
            raise KubeError(answer.status, _message(answer.data, answer.reason))
        return json.loads(answer.data) if answer.data else {}


def _message(data: bytes, reason: str) -> str:
    try:
        body = json.loads(data) if data else {}
    except ValueError:
        return data[:200].decode(errors="replace") or reason
    return str(body.get("message") or reason) if isinstance(body, dict) else reason


def _holds(current: Obj, desired: Obj, owned: Sequence[str]) -> bool:
    """Whether ``current`` already says what ``desired`` says in the owned fields and in
    the labels and annotations ``desired`` sets."""
    meta, want = current.get("metadata") or {}, desired.get("metadata") or {}
    for key in ("labels", "annotations"):
        have: Mapping[str, str] = meta.get(key) or {}
        if any(have.get(k) != v for k, v in (want.get(key) or {}).items()):
            return False
    return all(_contains(current.get(field), desired[field]) for field in owned if field in desired)


def _contains(have: Any, want: Any) -> bool:
    """``want`` is in ``have``: every field it sets has that value (server defaults aside)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(_contains(have.get(k), v) for k, v in want.items())
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(have) == len(want)
            and all(_contains(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)
