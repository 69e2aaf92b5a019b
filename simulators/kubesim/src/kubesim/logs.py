"""Pod logs: synthetic lines, shaped like a container's, served at `pods/{name}/log`.

A started container "writes" a line when it starts and one every `interval` seconds after;
`tailLines`, `timestamps`, `sinceSeconds`, `container` and `follow` work as on a kubelet. A
container that has not started is refused with the kubelet's 400 ("waiting to start").
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from kubesim import errors, inputs


def _parse(ts: str) -> datetime:
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


class LogSource:
    def __init__(self, interval: float = 1.0, follow_limit: float = 3600.0) -> None:
        self.interval = interval
        self.follow_limit = follow_limit

    def _container(
        self, pod: dict[str, Any], wanted: str | None
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        containers = pod["spec"].get("containers") or []
        name = pod["metadata"]["name"]
        if wanted is None:
            if len(containers) != 1:
                names = " ".join(c["name"] for c in containers)
                raise errors.bad_request(
                    f"a container name must be specified for pod {name}, choose one of: [{names}]"
                )
            container = containers[0]
        else:
            found = [
                c
                for c in containers + (pod["spec"].get("initContainers") or [])
                if c["name"] == wanted
            ]
            if not found:
                raise errors.bad_request(f"container {wanted} is not valid for pod {name}")
            container = found[0]
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        status = next((s for s in statuses if s.get("name") == container["name"]), None)
        return container, status

    def lines(
        self,
        pod: dict[str, Any],
        container: dict[str, Any],
        started: datetime,
        until: datetime,
        timestamps: bool,
    ) -> list[str]:
        out = []
        count = int((until - started).total_seconds() / self.interval) + 1
        for tick in range(max(count, 0)):
            at = started + timedelta(seconds=tick * self.interval)
            text = (
                f"kubesim: container {container['name']} started (image {container.get('image')})"
                if tick == 0
                else f"kubesim: {pod['metadata']['name']}/{container['name']} running, tick {tick}"
            )
            out.append(f"{at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')} {text}" if timestamps else text)
        return out

    async def respond(self, request: web.Request, pod: dict[str, Any]) -> web.StreamResponse:
        q = request.query
        tail, since = _options(q, pod["metadata"]["name"])
        container, status = self._container(pod, q.get("container"))
        running = ((status or {}).get("state") or {}).get("running")
        if not running:
            waiting = ((status or {}).get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason", "ContainerCreating")
            raise errors.bad_request(
                f'container "{container["name"]}" in pod "{pod["metadata"]["name"]}" '
                f"is waiting to start: {reason}"
            )
        started = _parse(running["startedAt"])
        timestamps = inputs.flag(q, "timestamps")
        now = datetime.now(UTC)
        lines = self.lines(pod, container, started, now, timestamps)
        if since is not None:
            lines = lines[-max(int(since / self.interval), 1) :]
        if tail is not None:
            lines = lines[-tail:] if tail else []
        if not inputs.flag(q, "follow"):
            text = "".join(f"{line}\n" for line in lines)
            return web.Response(text=text, content_type="text/plain")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for line in lines:
            await response.write(f"{line}\n".encode())
        sent_until = now
        end = asyncio.get_running_loop().time() + self.follow_limit
        try:
            while asyncio.get_running_loop().time() < end:
                await asyncio.sleep(self.interval)
                now = datetime.now(UTC)
                fresh = self.lines(pod, container, started, now, timestamps)
                old = self.lines(pod, container, started, sent_until, timestamps)
                for line in fresh[len(old) :]:
                    await response.write(f"{line}\n".encode())
                sent_until = now
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response


def _options(query: Mapping[str, str], name: str) -> tuple[int | None, int | None]:
    """`tailLines` and `sinceSeconds`: int64s (400 otherwise), the one at least 0 and the
    other at least 1 (422 otherwise, as the real server validates PodLogOptions)."""
    tail, since = inputs.integer(query, "tailLines"), inputs.integer(query, "sinceSeconds")
    inputs.integer(query, "limitBytes")
    causes = []
    if tail is not None and tail < 0:
        causes.append(
            (
                "tailLines",
                "FieldValueInvalid",
                f"Invalid value: {tail}: must be greater than or equal to 0",
            )
        )
    if since is not None and since < 1:
        causes.append(
            ("sinceSeconds", "FieldValueInvalid", f"Invalid value: {since}: must be greater than 0")
        )
    if causes:
        text = ", ".join(f"{f}: {m}" for f, _, m in causes)
        details = {
            "name": name,
            "kind": "PodLogOptions",
            "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes],
        }
        raise errors.ApiError(422, "Invalid", f'PodLogOptions "{name}" is invalid: {text}', details)
    return tail, since
