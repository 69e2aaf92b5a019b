"""The HTTP face of kubesim: the Kubernetes REST API over aiohttp.

Paths are the real ones — `/api/v1/namespaces/{ns}/pods/{name}/status`,
`/apis/{group}/{version}/{plural}` … — with discovery, list (selectors, `limit`/`continue`),
watch (newline-delimited JSON, replay from a resourceVersion, bookmarks, `timeoutSeconds`,
410 Gone as an ERROR event), get, create, update, the three patch types, delete and
deletecollection, the `status` and `scale` subresources, pod logs, and a clean refusal of
exec/attach/port-forward. Errors are `Status` bodies. `/_kubesim/*` holds kubesim's own
controls (fault switches, compaction) for tests driving a server process.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import yaml
from aiohttp import web

from kubesim import errors, tables
from kubesim.catalog import ResourceType
from kubesim.faults import Faults
from kubesim.logs import LogSource
from kubesim.selectors import field_matcher, label_matcher
from kubesim.store import Store

log = logging.getLogger("kubesim")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# kinds whose DELETE answers with the deleted object (`ReturnDeletedObject` in the real
# registry, the object type in its OpenAPI spec); the others answer a `Status` once the
# object is gone
RETURNS_DELETED = {
    ("", "pods"),
    ("", "services"),
    ("", "serviceaccounts"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("", "resourcequotas"),
    ("storage.k8s.io", "storageclasses"),
}


def _flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean query parameter, read as Go's `strconv.ParseBool` reads it: the asyncio
    client sends `watch=True`."""
    return query.get(name, "") in ("1", "t", "T", "true", "TRUE", "True")


def _json(body: Any, status: int = 200) -> web.Response:
    data = json.dumps(body, separators=(",", ":")).encode()
    # aiohttp warns of raw bodies over 1 MiB (an error under `-W error`): stream those
    payload: bytes | io.BytesIO = io.BytesIO(data) if len(data) > 2**20 else data
    return web.Response(status=status, body=payload, content_type="application/json")


class ApiServer:
    def __init__(
        self,
        store: Store,
        faults: Faults,
        logs: LogSource,
        *,
        git_version: str,
        bookmark_interval: float = 5.0,
        watch_timeout: float = 1800.0,
    ) -> None:
        self.store = store
        self.faults = faults
        self.logs = logs
        self.git_version = git_version
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.app = web.Application(
            middlewares=[self._errors, self._fault_switches], client_max_size=16 * 2**20
        )
        r = self.app.router
        for probe in ("/healthz", "/livez", "/readyz"):
            r.add_get(probe, self.probe)
        # the official clients ask for discovery with a trailing slash (`/apis/apps/v1/`)
        for slash in ("", "/"):
            r.add_get("/version" + slash, self.version)
            r.add_get("/api" + slash, self.core_versions)
            r.add_get("/api/{version}" + slash, self.resource_list_core)
            r.add_get("/apis" + slash, self.groups)
            r.add_get("/apis/{group}" + slash, self.group)
            r.add_get("/apis/{group}/{version}" + slash, self.resource_list)
        r.add_post("/_kubesim/faults", self.set_faults)
        r.add_post("/_kubesim/compact", self.compact)
        r.add_route("*", "/api/{version}/{tail:.+}", self.resource)
        r.add_route("*", "/apis/{group}/{version}/{tail:.+}", self.resource)

    # -- middlewares ------------------------------------------------------------
    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except errors.ApiError as exc:
            return _json(exc.status(), exc.code)
        except web.HTTPException as exc:
            if exc.status == 404:
                return _json(
                    errors.ApiError(
                        404, "NotFound", "the server could not find the requested resource"
                    ).status(),
                    404,
                )
            raise
        except Exception:
            log.exception("internal error on %s %s", request.method, request.path)
            body = errors.ApiError(
                500, "InternalError", "an internal error occurred in kubesim"
            ).status()
            return _json(body, 500)

    @web.middleware
    async def _fault_switches(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/_kubesim/"):
            if self.faults.is_unavailable():
                raise errors.ApiError(
                    503,
                    "ServiceUnavailable",
                    "the server is currently unable to handle the request",
                )
            if delay := self.faults.delay():
                await asyncio.sleep(delay)
        return await handler(request)

    # -- discovery ------------------------------------------------------------
    async def version(self, _request: web.Request) -> web.Response:
        major, minor = self.store.kube_version.split(".")[:2]
        return _json(
            {
                "major": major,
                "minor": minor,
                "gitVersion": self.git_version,
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.23",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        )

    async def probe(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def core_versions(self, request: web.Request) -> web.Response:
        return _json(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": request.host}
                ],
            }
        )

    def _group_body(self, group: str, versions: list[str]) -> dict[str, Any]:
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": listed, "preferredVersion": listed[0]}

    async def groups(self, _request: web.Request) -> web.Response:
        found = self.store.catalog.group_versions()
        groups = [self._group_body(g, v) for g, v in sorted(found.items()) if g]
        return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    async def group(self, request: web.Request) -> web.Response:
        versions = self.store.catalog.group_versions().get(request.match_info["group"])
        if not versions or not request.match_info["group"]:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return _json(
            {
                "kind": "APIGroup",
                "apiVersion": "v1",
                **self._group_body(request.match_info["group"], versions),
            }
        )

    async def resource_list_core(self, request: web.Request) -> web.Response:
        return self._resource_list("", request.match_info["version"])

    async def resource_list(self, request: web.Request) -> web.Response:
        return self._resource_list(request.match_info["group"], request.match_info["version"])

    def _resource_list(self, group: str, version: str) -> web.Response:
        types = self.store.catalog.in_group_version(group, version)
        if not types:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        resources = [
            entry for t in sorted(types, key=lambda t: t.plural) for entry in t.discovery()
        ]
        gv = f"{group}/{version}" if group else version
        return _json(
            {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": gv,
                "resources": resources,
            }
        )

    # -- kubesim's controls ------------------------------------------------------
    async def set_faults(self, request: web.Request) -> web.Response:
        try:
            self.faults.apply(await self._body(request))
        except ValueError as exc:
            raise errors.bad_request(str(exc)) from None
        return _json({"ok": True})

    async def compact(self, _request: web.Request) -> web.Response:
        return _json({"compacted": self.store.compact()})

    # -- resources ------------------------------------------------------------
    def _resolve(
        self, request: web.Request
    ) -> tuple[ResourceType, str | None, str | None, str | None]:
        group = request.match_info.get("group", "")
        version = request.match_info["version"]
        parts = request.match_info["tail"].strip("/").split("/")
        catalog = self.store.catalog
        namespace: str | None = None
        if parts[0] == "namespaces" and len(parts) >= 3:
            inner = catalog.get(group, version, parts[2])
            if inner is not None and inner.namespaced:
                namespace, parts = parts[1], parts[2:]
        rtype = catalog.get(group, version, parts[0])
        if (
            rtype is None
            or len(parts) > 3
            or (rtype.namespaced and namespace is None and len(parts) > 1)
        ):
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        name = parts[1] if len(parts) > 1 else None
        sub = parts[2] if len(parts) > 2 else None
        if sub is not None and sub not in rtype.subresources:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return rtype, namespace, name, sub

    async def resource(self, request: web.Request) -> web.StreamResponse:
        rtype, namespace, name, sub = self._resolve(request)
        ns = namespace or ""
        q = request.query
        dry_run = q.get("dryRun") == "All"
        strict = q.get("fieldValidation", "Strict") == "Strict"
        method = request.method
        if name is None:
            if method == "GET":
                if _flag(q, "watch"):
                    return await self._watch(request, rtype, namespace)
                return self._list(request, rtype, namespace)
            if method == "POST":
                if rtype.namespaced and namespace is None:
                    raise errors.method_not_allowed(f"create of {rtype.plural} needs a namespace")
                obj = self.store.create(
                    rtype, ns, await self._body(request), dry_run=dry_run, strict=strict
                )
                return _json(self._present(rtype, obj), 201)
            if method == "DELETE":
                return self._delete_collection(request, rtype, namespace)
            raise errors.method_not_allowed(f"{method} is not supported on a collection")
        if sub == "log":
            return await self.logs.respond(request, self.store.get(rtype, ns, name))
        if sub in ("exec", "attach", "portforward"):
            self.store.get(rtype, ns, name)
            raise errors.bad_request(
                f"kubesim runs no containers: {sub} into pod {name} is not supported"
            )
        if sub == "scale":
            return await self._scale(request, rtype, ns, name)
        if sub == "eviction" and method == "POST":
            self.store.delete(rtype, ns, name, dry_run=dry_run)
            return _json(_success(code=201), 201)
        if sub == "binding" and method == "POST":
            body = await self._body(request)
            pod = self.store.get(rtype, ns, name)
            pod["spec"]["nodeName"] = (body.get("target") or {}).get("name")
            self.store.update(rtype, ns, name, pod, system=True)
            return _json(_success(code=201), 201)
        if sub == "finalize" and method == "PUT":
            body = await self._body(request)
            current = self.store.get(rtype, ns, name)
            current["spec"] = body.get("spec") or {}
            obj = self.store.update(rtype, ns, name, current, system=True)
            return _json(self._present(rtype, obj))
        if sub not in (None, "status"):
            raise errors.method_not_allowed(f"{method} is not supported on {rtype.plural}/{sub}")
        if method == "GET":
            obj = self._present(rtype, self.store.get(rtype, ns, name))
            if sub is None and tables.wanted(request.headers.get("Accept", "")):
                table = tables.table(
                    rtype.kind,
                    [obj],
                    {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                    request.query.get("includeObject", "Metadata"),
                )
                return _json(table)
            return _json(obj)
        if method == "PUT":
            obj = self.store.update(
                rtype,
                ns,
                name,
                await self._body(request),
                subresource=sub,
                dry_run=dry_run,
                strict=strict,
            )
            return _json(self._present(rtype, obj))
        if method == "PATCH":
            kind = request.content_type
            obj = self.store.patch(
                rtype,
                ns,
                name,
                kind,
                await self._body(request),
                subresource=sub,
                dry_run=dry_run,
                strict=strict,
            )
            return _json(self._present(rtype, obj))
        if method == "DELETE":
            options = await self._body(request, optional=True)
            for key in ("propagationPolicy", "gracePeriodSeconds"):
                if key in q:
                    options.setdefault(key, q[key])
            obj = self.store.delete(rtype, ns, name, options, dry_run=dry_run)
            pending = bool(obj["metadata"].get("deletionTimestamp"))  # finalizers to run
            if pending or rtype.store_key in RETURNS_DELETED:
                return _json(self._present(rtype, obj))
            return _json(_deleted(rtype, obj))
        raise errors.method_not_allowed(f"{method} is not supported")

    def _present(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if rtype.custom:
            obj["apiVersion"] = rtype.api_version
        return obj

    async def _body(self, request: web.Request, *, optional: bool = False) -> Any:
        raw = await request.read()
        if not raw:
            if optional:
                return {}
            raise errors.bad_request("the request has no body")
        kind = request.content_type
        if "protobuf" in kind:
            raise errors.unsupported_media_type("kubesim speaks JSON only: send application/json")
        try:
            if "yaml" in kind:
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(
                f"the body of the request could not be decoded: {exc}"
            ) from None

    def _list(
        self, request: web.Request, rtype: ResourceType, namespace: str | None
    ) -> web.Response:
        q = request.query
        try:
            limit = int(q.get("limit", "0") or 0)
        except ValueError:
            raise errors.bad_request(f"invalid limit: {q['limit']}") from None
        items, cont, remaining = self.store.select(
            rtype,
            namespace,
            label_matcher(q.get("labelSelector")),
            field_matcher(q.get("fieldSelector"), rtype.kind, rtype.custom),
            limit=limit,
            token=q.get("continue"),
        )
        meta: dict[str, Any] = {"resourceVersion": str(self.store.rv)}
        if cont:
            meta["continue"] = cont
            if not q.get("labelSelector") and not q.get("fieldSelector"):
                # with a selector the real server cannot count what remains, and omits it
                meta["remainingItemCount"] = remaining
        presented = [self._present(rtype, i) for i in items]
        if tables.wanted(request.headers.get("Accept", "")):
            return _json(
                tables.table(rtype.kind, presented, meta, q.get("includeObject", "Metadata"))
            )
        return _json(
            {
                "kind": f"{rtype.kind}List",
                "apiVersion": rtype.api_version,
                "metadata": meta,
                "items": presented,
            }
        )

    def _delete_collection(
        self, request: web.Request, rtype: ResourceType, namespace: str | None
    ) -> web.Response:
        items, _, _ = self.store.select(
            rtype,
            namespace,
            label_matcher(request.query.get("labelSelector")),
            field_matcher(request.query.get("fieldSelector"), rtype.kind, rtype.custom),
        )
        deleted = []
        for item in items:
            meta = item["metadata"]
            deleted.append(self.store.delete(rtype, meta.get("namespace", ""), meta["name"]))
        return _json(
            {
                "kind": f"{rtype.kind}List",
                "apiVersion": rtype.api_version,
                "metadata": {"resourceVersion": str(self.store.rv)},
                "items": deleted,
            }
        )

    async def _scale(
        self, request: web.Request, rtype: ResourceType, ns: str, name: str
    ) -> web.Response:
        obj = self.store.get(rtype, ns, name)
        if request.method in ("PUT", "PATCH"):
            body = await self._body(request)
            if request.method == "PATCH":
                from kubesim.patch import JSON_PATCH, json_patch, merge_patch  # noqa: PLC0415

                current = _scale_body(obj)
                body = (
                    json_patch(current, body)
                    if request.content_type == JSON_PATCH
                    else merge_patch(current, body)
                )
            replicas = (body.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid(
                    rtype,
                    name,
                    [
                        (
                            "spec.replicas",
                            "FieldValueInvalid",
                            f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                        )
                    ],
                )
            obj["spec"]["replicas"] = replicas
            obj = self.store.update(rtype, ns, name, obj)
        return _json(_scale_body(obj))

    async def _watch(
        self, request: web.Request, rtype: ResourceType, namespace: str | None
    ) -> web.StreamResponse:
        q = request.query
        labels = label_matcher(q.get("labelSelector"))
        fields = field_matcher(q.get("fieldSelector"), rtype.kind, rtype.custom)
        bookmarks = _flag(q, "allowWatchBookmarks")
        initial_end = _flag(q, "sendInitialEvents")
        try:
            timeout = float(q.get("timeoutSeconds") or self.watch_timeout)
        except ValueError:
            raise errors.bad_request(f"invalid timeoutSeconds: {q['timeoutSeconds']}") from None
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        since = None if initial_end else q.get("resourceVersion")
        try:
            watch, initial = self.store.watch(rtype, namespace, since, labels, fields)
            # every write reaches the queue in order, so the version of the last event taken
            # from it (or of the store when the watch began) is as far as a bookmark may
            # claim: the store's own version may be ahead of events still queued
            reached = self.store.rv
        except errors.ApiError as exc:
            if exc.code != 410:
                raise
            await response.prepare(request)
            await self._send(response, "ERROR", exc.status())
            await response.write_eof()
            return response
        try:
            await response.prepare(request)
            for kind, obj in initial:
                await self._send(response, kind, self._present(rtype, obj))
            if initial_end:
                await self._bookmark(
                    response, rtype, reached, {"k8s.io/initial-events-end": "true"}
                )
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + self.bookmark_interval
            while (left := deadline - time.monotonic()) > 0:
                wait = min(left, next_bookmark - time.monotonic()) if bookmarks else left
                try:
                    event = await asyncio.wait_for(watch.queue.get(), timeout=max(wait, 0))
                except TimeoutError:
                    if bookmarks and time.monotonic() >= next_bookmark:
                        await self._bookmark(response, rtype, reached)
                        next_bookmark = time.monotonic() + self.bookmark_interval
                    continue
                if event is None:
                    break
                reached = event.rv
                seen = watch.translate(event)
                if seen is not None:
                    await self._send(
                        response, seen[0], self._present(rtype, copy.deepcopy(seen[1]))
                    )
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.unwatch(watch)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _bookmark(
        self,
        response: web.StreamResponse,
        rtype: ResourceType,
        rv: int,
        annotations: dict[str, str] | None = None,
    ) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if annotations:
            meta["annotations"] = annotations
        await self._send(
            response,
            "BOOKMARK",
            {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta},
        )

    async def _send(self, response: web.StreamResponse, kind: str, obj: dict[str, Any]) -> None:
        line = json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n"
        await response.write(line.encode())


def _success(**fields: Any) -> dict[str, Any]:
    """A `Status` of success, as the real server answers actions without an object."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", **fields}


def _deleted(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The `Status` the real server answers for an object deleted at once."""
    meta = obj["metadata"]
    return _success(details=errors.details_of(rtype, meta["name"]) | {"uid": meta.get("uid")})


def _scale_body(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
        },
    }
