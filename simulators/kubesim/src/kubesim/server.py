"""The HTTP face of kubesim: the Kubernetes REST API over aiohttp.

Paths are the real ones — `/api/v1/namespaces/{ns}/pods/{name}/status`,
`/apis/{group}/{version}/{plural}` … — with discovery (in `kubesim.discovery`), list
(selectors, `limit`/`continue`), watch (newline-delimited JSON, replay from a
resourceVersion, bookmarks, `timeoutSeconds`, 410 Gone as an ERROR event, in
`kubesim.watchstream`), get, create, update, the three patch types, delete and
deletecollection, the `status` and `scale` subresources, pod logs, pod exec (a websocket to
a local process, in `kubesim.execs`), and a clean refusal of attach/port-forward. Bodies and
query parameters are read by `kubesim.inputs`, answers written by `kubesim.responses`, the
action subresources (scale, binding, eviction, finalize) live in `kubesim.subresources`.
Errors are `Status` bodies — every one, aiohttp's own included, and anything unforeseen is
a logged 500, never a dropped connection. `/_kubesim/*` holds kubesim's own controls (fault
switches, compaction) for tests driving a server process. With users (``kubesim.authz``)
each request is authenticated and authorised by RBAC first; the access reviews are in
``kubesim.reviews``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kubesim import authz, errors, inputs, reviews, subresources, tables
from kubesim.catalog import ResourceType
from kubesim.decoding import FieldValidation
from kubesim.discovery import Discovery
from kubesim.execs import ExecRunner
from kubesim.faults import Faults
from kubesim.logs import LogSource
from kubesim.responses import deleted_status, json_response, present, success
from kubesim.selectors import field_matcher, label_matcher
from kubesim.store import Store
from kubesim.watchstream import WatchStreams

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
# what anyone may read without credentials (a real cluster's system:public-info-viewer)
PUBLIC = ("/healthz", "/livez", "/readyz", "/version", "/version/")
# the options each writing verb takes, named in the 422 for an unsupported option value
OPTIONS = {
    "POST": "CreateOptions",
    "PUT": "UpdateOptions",
    "PATCH": "PatchOptions",
    "DELETE": "DeleteOptions",
}
DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
# the reasons of the answers aiohttp itself gives (unknown routes, bodies over the limit)
HTTP_REASONS = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
}
# which subresource takes which verbs
VERBS = {
    "log": ("GET",),
    "exec": ("GET", "POST"),
    "attach": ("GET", "POST"),
    "portforward": ("GET", "POST"),
    "eviction": ("POST",),
    "binding": ("POST",),
    "finalize": ("PUT",),
    "scale": ("GET", "PUT", "PATCH"),
    "status": ("GET", "PUT", "PATCH"),
}


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
        execs: ExecRunner | None = None,
        users: authz.Users | None = None,
    ) -> None:
        self.store = store
        self.users = users  # None: no authentication, every request is the admin's
        self.authorizer = authz.Authorizer(store)
        self.reviews = reviews.Reviews(self.authorizer)
        self.faults = faults
        self.logs = logs
        self.execs = execs or ExecRunner()
        self.discovery = Discovery(store, git_version=git_version)
        self.watches = WatchStreams(
            store, bookmark_interval=bookmark_interval, watch_timeout=watch_timeout
        )
        middlewares = [self._errors, self._fault_switches]
        if users is not None:
            middlewares.append(self._authorize)
        self.app = web.Application(middlewares=middlewares, client_max_size=inputs.MAX_BODY)
        self.app.on_shutdown.append(self._stop_execs)
        r = self.app.router
        for probe in ("/healthz", "/livez", "/readyz"):
            r.add_get(probe, self.discovery.probe)
        # the official clients ask for discovery with a trailing slash (`/apis/apps/v1/`)
        for slash in ("", "/"):
            r.add_get("/version" + slash, self.discovery.version)
            r.add_get("/api" + slash, self.discovery.core_versions)
            r.add_get("/api/{version}" + slash, self.discovery.resource_list_core)
            r.add_get("/apis" + slash, self.discovery.groups)
            r.add_get("/apis/{group}" + slash, self.discovery.group)
            r.add_get("/apis/{group}/{version}" + slash, self.discovery.resource_list)
        r.add_post("/_kubesim/faults", self.set_faults)
        r.add_post("/_kubesim/compact", self.compact)
        for path in reviews.PATHS:  # before the resources: they are not stored
            r.add_route("*", path, self.reviews.handle)
        r.add_route("*", "/api/{version}/{tail:.+}", self.resource)
        r.add_route("*", "/apis/{group}/{version}/{tail:.+}", self.resource)

    # -- middlewares ------------------------------------------------------------
    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except errors.ApiError as exc:
            return json_response(exc.status(), exc.code)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            if exc.status == 404:
                message = "the server could not find the requested resource"
            elif exc.status == 413:
                message = inputs.too_large().message
            else:
                message = exc.text or exc.reason
            reason = HTTP_REASONS.get(exc.status, exc.reason.replace(" ", ""))
            return json_response(errors.ApiError(exc.status, reason, message).status(), exc.status)
        except Exception:
            log.exception("internal error on %s %s", request.method, request.path)
            body = errors.ApiError(
                500, "InternalError", "an internal error occurred in kubesim"
            ).status()
            return json_response(body, 500)

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

    @web.middleware
    async def _authorize(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Who is asking (401 when no token says), and may they (403 when RBAC says no)."""
        path = request.path
        if self.users is None or path.startswith("/_kubesim/"):
            return await handler(request)
        header = request.headers.get("Authorization")
        if header is None and path in PUBLIC:
            return await handler(request)
        user = self.users.authenticate(header)
        attrs = authz.Attributes.of_request(request.method, path, request.query)
        decision = self.authorizer.authorize(user, attrs)
        if not decision.allowed:
            raise authz.forbidden(user, attrs, decision.reason)
        request[reviews.USER] = user
        return await handler(request)

    # -- kubesim's controls ------------------------------------------------------
    async def set_faults(self, request: web.Request) -> web.Response:
        try:
            self.faults.apply(inputs.parse(await request.read())[0])
        except ValueError as exc:
            raise errors.bad_request(str(exc)) from None
        return json_response({"ok": True})

    async def compact(self, _request: web.Request) -> web.Response:
        return json_response({"compacted": self.store.compact()})

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
        method = request.method
        if method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            raise errors.method_not_allowed(f"{method} is not supported")
        if sub is not None and method not in VERBS.get(sub, ()):
            raise errors.method_not_allowed(f"{method} is not supported on {rtype.plural}/{sub}")
        dry_run = inputs.dry_run(q, OPTIONS[method]) if method in OPTIONS else False
        fields = FieldValidation()
        if method in ("POST", "PUT", "PATCH"):
            fields.directive = inputs.field_validation(q, OPTIONS[method])
        if method == "GET":
            inputs.resource_version(q)  # a malformed one is 400 on every read
        if name is None:
            if method == "GET":
                if inputs.flag(q, "watch"):
                    return await self.watches.respond(request, rtype, namespace)
                return self._list(request, rtype, namespace)
            if method == "POST":
                if rtype.namespaced and namespace is None:
                    raise errors.method_not_allowed(f"create of {rtype.plural} needs a namespace")
                body = await self._body(request, fields)
                obj = self.store.create(rtype, ns, body, dry_run=dry_run, fields=fields)
                return json_response(present(rtype, obj), 201, fields.warnings)
            if method == "DELETE":
                return await self._delete_collection(request, rtype, namespace, dry_run)
            raise errors.method_not_allowed(f"{method} is not supported on a collection")
        if sub == "log":
            return await self.logs.respond(request, self.store.get(rtype, ns, name))
        if sub == "exec":
            pod = self.store.get(rtype, ns, name)
            # the container is picked, and refused, as for logs
            container, status = self.logs._container(pod, q.get("container"))
            return await self.execs.respond(request, pod, container, status)
        if sub in ("attach", "portforward"):
            self.store.get(rtype, ns, name)
            raise errors.bad_request(
                f"kubesim runs no containers: {sub} into pod {name} is not supported"
            )
        if sub == "scale":
            write = method != "GET"
            scale = subresources.scale(
                self.store,
                rtype,
                ns,
                name,
                body=await self._body(request, fields) if write else None,
                patch_type=inputs.media_type(request) if method == "PATCH" else None,
                fields=fields,
                dry_run=dry_run,
            )
            return json_response(scale, warnings=fields.warnings)
        if sub == "eviction":
            body = await self._body(request, fields)
            subresources.evict(self.store, rtype, ns, name, body, dry_run=dry_run)
            return json_response(success(code=201), 201)
        if sub == "binding":
            subresources.bind(self.store, rtype, ns, name, await self._body(request, fields))
            return json_response(success(code=201), 201)
        if sub == "finalize":
            body = await self._body(request, fields)
            obj = subresources.finalize(self.store, rtype, name, body)
            return json_response(present(rtype, obj))
        if method == "GET":
            obj = present(rtype, self.store.get(rtype, ns, name))
            if sub is None and tables.wanted(request.headers.get("Accept", "")):
                table = tables.table(
                    rtype.kind,
                    [obj],
                    {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                    request.query.get("includeObject", "Metadata"),
                )
                return json_response(table)
            return json_response(obj)
        if method == "PUT":
            body = await self._body(request, fields)
            obj = self.store.update(
                rtype, ns, name, body, subresource=sub, dry_run=dry_run, fields=fields
            )
            return json_response(present(rtype, obj), warnings=fields.warnings)
        if method == "PATCH":
            kind = inputs.media_type(request)
            body = await self._body(request, fields)
            obj = self.store.patch(
                rtype, ns, name, kind, body, subresource=sub, dry_run=dry_run, fields=fields
            )
            return json_response(present(rtype, obj), warnings=fields.warnings)
        if method == "DELETE":
            options = await self._delete_options(request)
            dry_run = dry_run or bool(options.get("dryRun"))
            obj = self.store.delete(rtype, ns, name, options, dry_run=dry_run)
            pending = bool(obj["metadata"].get("deletionTimestamp"))  # finalizers to run
            if pending or rtype.store_key in RETURNS_DELETED:
                return json_response(present(rtype, obj))
            return json_response(deleted_status(rtype, obj))
        raise errors.method_not_allowed(f"{method} is not supported")

    async def _stop_execs(self, _app: web.Application) -> None:
        """On shutdown, before connections are cut: end the running execs."""
        await self.execs.close()

    async def _body(self, request: web.Request, fields: FieldValidation) -> Any:
        body, fields.duplicates = await inputs.read_body(request)
        return body

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        """DeleteOptions from the body, or else from the query, as the real server reads
        them: a body that does not decode is 400, an unknown propagationPolicy 422."""
        body, _ = await inputs.read_body(request, optional=True)
        q = request.query
        if body != {}:
            options = subresources.decode_body(self.store, DELETE_OPTIONS, body)
            inputs.check_dry_run(options.get("dryRun") or [], "DeleteOptions")
        else:
            options = {}
            if "propagationPolicy" in q:
                options["propagationPolicy"] = q["propagationPolicy"]
            if (grace := inputs.integer(q, "gracePeriodSeconds")) is not None:
                options["gracePeriodSeconds"] = grace
            if "orphanDependents" in q:
                options["orphanDependents"] = inputs.flag(q, "orphanDependents")
        inputs.propagation_policy(options)
        if options.get("orphanDependents") and "propagationPolicy" not in options:
            options["propagationPolicy"] = "Orphan"
        return options

    def _list(
        self, request: web.Request, rtype: ResourceType, namespace: str | None
    ) -> web.Response:
        q = request.query
        limit = max(inputs.integer(q, "limit") or 0, 0)  # as on a real server: <= 0 is none
        table = tables.wanted(request.headers.get("Accept", ""))
        items, cont, remaining = self.store.select(
            rtype,
            namespace,
            label_matcher(q.get("labelSelector")),
            field_matcher(q.get("fieldSelector"), rtype.kind, rtype.custom),
            limit=limit,
            token=q.get("continue"),
            copy=table,  # a JSON list is only serialised: no copy of every object
        )
        meta: dict[str, Any] = {"resourceVersion": str(self.store.rv)}
        if cont:
            meta["continue"] = cont
            if not q.get("labelSelector") and not q.get("fieldSelector"):
                # with a selector the real server cannot count what remains, and omits it
                meta["remainingItemCount"] = remaining
        presented = [present(rtype, i) for i in items]
        if table:
            return json_response(
                tables.table(rtype.kind, presented, meta, q.get("includeObject", "Metadata"))
            )
        return json_response(
            {
                "kind": f"{rtype.kind}List",
                "apiVersion": rtype.api_version,
                "metadata": meta,
                "items": presented,
            }
        )

    async def _delete_collection(
        self, request: web.Request, rtype: ResourceType, namespace: str | None, dry_run: bool
    ) -> web.Response:
        options = await self._delete_options(request)
        dry_run = dry_run or bool(options.get("dryRun"))
        items, _, _ = self.store.select(
            rtype,
            namespace,
            label_matcher(request.query.get("labelSelector")),
            field_matcher(request.query.get("fieldSelector"), rtype.kind, rtype.custom),
        )
        deleted = []
        for item in items:
            meta = item["metadata"]
            deleted.append(
                self.store.delete(
                    rtype, meta.get("namespace", ""), meta["name"], options, dry_run=dry_run
                )
            )
        return json_response(
            {
                "kind": f"{rtype.kind}List",
                "apiVersion": rtype.api_version,
                "metadata": {"resourceVersion": str(self.store.rv)},
                "items": deleted,
            }
        )
