"""Discovery: `/version`, the probes, and the API groups, versions and resources served.

What is listed comes from the catalog — the built-in kinds and the CRDs' — and from the
access reviews, which are served but not stored (:mod:`kubesim.reviews`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim import errors, reviews
from kubesim.responses import json_response
from kubesim.store import Store


class Discovery:
    def __init__(self, store: Store, *, git_version: str) -> None:
        self.store = store
        self.git_version = git_version

    async def version(self, _request: web.Request) -> web.Response:
        major, minor = self.store.kube_version.split(".")[:2]
        return json_response(
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
        return json_response(
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

    def _group_versions(self) -> dict[str, list[str]]:
        found = self.store.catalog.group_versions()
        return found | {group: ["v1"] for group, _ in reviews.KINDS}

    async def groups(self, _request: web.Request) -> web.Response:
        found = self._group_versions()
        groups = [self._group_body(g, v) for g, v in sorted(found.items()) if g]
        return json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    async def group(self, request: web.Request) -> web.Response:
        versions = self._group_versions().get(request.match_info["group"])
        if not versions or not request.match_info["group"]:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return json_response(
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
        served = reviews.discovery(group, version)
        if not types and not served:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        resources = [
            entry for t in sorted(types, key=lambda t: t.plural) for entry in t.discovery()
        ] + served
        gv = f"{group}/{version}" if group else version
        return json_response(
            {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": gv,
                "resources": resources,
            }
        )
