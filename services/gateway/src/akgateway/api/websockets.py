"""Akash's lease websockets: ``/logs``, ``/kubeevents`` and ``/shell``.

Credentials and scope are checked before the upgrade: a refusal is an ordinary HTTP answer
(``{"message": …}``, 400/401/403/503), as on every other route. After the upgrade, a lease
that is not deployed here closes with 4001, Kubernetes (or the cluster service) out of reach
with 4002, anything else with 4000. Pings go out every 10 s and a connection without a pong
for 15 s is dropped (:mod:`akgateway.adapters.server`). Logs and shells come from
:mod:`akgateway.adapters.kube`, whose bounded queues carry the tenant's pace back to
Kubernetes; events from the history the cluster service keeps on Redis
(:mod:`akgateway.api.leaseevents`), read a page at a time at the tenant's pace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketState

from akchain.jwt import Scope
from akgateway import metrics
from akgateway.adapters.kube import LeaseCluster, Pod
from akgateway.adapters.server import connection_closed
from akgateway.api.auth import identify, tenant_of
from akgateway.api.context import Gateway
from akgateway.api.leaseevents import kept, lease_events
from akgateway.api.leasepods import merged, running_pods
from akgateway.api.routes import manifest_group, require_services
from akgateway.domain import streams
from akgateway.domain.params import lease_numbers
from akgateway.errors import ApiError, KubeError, LeaseGone, NotFound, Unavailable
from aktypes.ids import LeaseID

log = logging.getLogger("akgateway.api.websockets")
router = APIRouter()
LEASE = "/lease/{dseq}/{gseq}/{oseq}"


async def _allowed(
    websocket: WebSocket, scope: Scope, services: list[str], *, kube: bool = True
) -> LeaseID | None:
    """Check the request (and, with ``kube``, that this gateway reaches the cluster); on
    refusal answer it over HTTP and return None."""
    gateway: Gateway = websocket.app.state.gateway
    params = websocket.path_params
    try:
        numbers = lease_numbers(params)
        dseq, gseq, oseq = numbers["dseq"], numbers["gseq"], numbers["oseq"]
        tenant = tenant_of(await identify(websocket, gateway))
        tenant.require(scope, gateway.provider, dseq=dseq, gseq=gseq, oseq=oseq, services=services)
        lease = LeaseID(
            owner=tenant.owner, dseq=dseq, gseq=gseq, oseq=oseq, provider=gateway.provider
        )
        if not services:  # naming none, it concerns them all
            await require_services(gateway, tenant, scope, lease)
        if kube and gateway.kube is None:
            raise Unavailable("this gateway has no access to the cluster (AP_CLUSTER_BACKEND)")
    except ApiError as exc:
        metrics.WEBSOCKETS.labels(scope, str(exc.status)).inc()
        await websocket.send_denial_response(
            JSONResponse({"message": exc.message}, status_code=exc.status)
        )
        return None
    return lease


async def _opened(
    websocket: WebSocket, scope: Scope, services: list[str]
) -> tuple[LeaseCluster, LeaseID] | None:
    """:func:`_allowed`, with this gateway's window on the cluster."""
    lease = await _allowed(websocket, scope, services)
    kube = websocket.app.state.gateway.kube
    return None if lease is None or kube is None else (kube, lease)


async def _serve(
    websocket: WebSocket,
    scope: Scope,
    lease: LeaseID,
    work: Callable[[], Coroutine[Any, Any, int]],
    *,
    reads: bool = False,
) -> None:
    """Run ``work`` (it returns the close code) in one of the tenant's websocket slots, or
    refuse the upgrade with 429 when the tenant holds them all."""
    gateway: Gateway = websocket.app.state.gateway
    try:
        give_back = gateway.slots.take(lease.owner, scope)
    except ApiError as exc:
        metrics.WEBSOCKETS.labels(scope, str(exc.status)).inc()
        await websocket.send_denial_response(
            JSONResponse({"message": exc.message}, status_code=exc.status)
        )
        return
    try:
        await _run(websocket, scope, work, reads=reads)
    finally:
        give_back()


async def _run(
    websocket: WebSocket,
    scope: Scope,
    work: Callable[[], Coroutine[Any, Any, int]],
    *,
    reads: bool,
) -> None:
    """Run ``work`` (it returns the close code) until it ends or the tenant leaves; unless
    ``work`` reads the websocket itself (``reads``), a watcher notices the tenant leaving."""
    await websocket.accept()
    code, reason = 1000, ""

    async def tenant_left() -> None:
        if reads:  # work reads, and sees the tenant leave, unless it waits on something else
            await (connection_closed(websocket.scope) or asyncio.Event()).wait()
            return
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return

    watcher = asyncio.create_task(tenant_left())
    task = asyncio.create_task(work())
    try:
        done, _ = await asyncio.wait({watcher, task}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            code = task.result()
    except LeaseGone as exc:
        code, reason = streams.CLOSE_LEASE_NOT_FOUND, str(exc)
    except NotFound as exc:
        code, reason = streams.CLOSE_LEASE_NOT_FOUND, exc.message
    except KubeError as exc:
        code, reason = streams.CLOSE_UNAVAILABLE, str(exc)
    except Unavailable as exc:  # the cluster service did not answer
        code, reason = streams.CLOSE_UNAVAILABLE, exc.message
    except WebSocketDisconnect:
        code = 1000
    except Exception:
        log.exception("websocket %s failed", websocket.url.path)
        code, reason = streams.CLOSE_INTERNAL, "internal error"
    finally:
        for pending in (watcher, task):
            pending.cancel()
        await asyncio.gather(watcher, task, return_exceptions=True)
    metrics.WEBSOCKETS.labels(scope, str(code)).inc()
    if websocket.client_state == WebSocketState.CONNECTED:
        with contextlib.suppress(Exception):
            await websocket.close(code, reason[:120])


@router.websocket(f"{LEASE}/logs")
async def logs(websocket: WebSocket) -> None:
    try:
        query = streams.logs_query(websocket.query_params)
    except ApiError as exc:
        await websocket.send_denial_response(JSONResponse({"message": exc.message}, exc.status))
        return
    opened = await _opened(websocket, "logs", query.services)
    if opened is None:
        return
    kube, lease = opened

    async def lines(pod: Pod) -> AsyncIterator[str]:
        async for line in kube.logs(pod, follow=query.follow, tail=query.tail):
            yield streams.log_frame(pod.name, line)

    async def work() -> int:
        pods = await running_pods(kube, lease, query.services)
        async for _, frame in merged(pods, lines):
            await websocket.send_text(frame)
        if query.follow:  # the streams ended while following: the pods went away
            await kube.pods(lease)  # LeaseGone when the lease went with them
        return 1000

    await _serve(websocket, "logs", lease, work)


@router.websocket(f"{LEASE}/kubeevents")
async def kube_events(websocket: WebSocket) -> None:
    try:
        follow = streams.flag(websocket.query_params, "follow", False)
    except ApiError as exc:
        await websocket.send_denial_response(JSONResponse({"message": exc.message}, exc.status))
        return
    services = streams.services_of(websocket.query_params)
    lease = await _allowed(websocket, "events", services, kube=False)
    if lease is None:
        return
    gateway: Gateway = websocket.app.state.gateway

    async def work() -> int:
        if not await kept(gateway.bus, lease):  # nothing yet: is it deployed here at all?
            await manifest_group(gateway, lease)  # NotFound when not
        async for event in lease_events(gateway.bus, lease, follow=follow):
            if streams.concerns(event, services):
                await websocket.send_text(streams.event_frame(event))
        return 1000

    await _serve(websocket, "events", lease, work)


@router.websocket(f"{LEASE}/shell")
async def shell(websocket: WebSocket) -> None:
    try:
        query = streams.shell_query(websocket.query_params)
    except ApiError as exc:
        await websocket.send_denial_response(JSONResponse({"message": exc.message}, exc.status))
        return
    opened = await _opened(websocket, "shell", [query.service])
    if opened is None:
        return
    kube, lease = opened

    async def work() -> int:
        pods = [p for p in await running_pods(kube, lease, [query.service]) if p.ready]
        if not pods:
            raise KubeError(f"service {query.service} has no ready replica")
        if query.pod_index >= len(pods):
            raise NotFound(
                f"service {query.service} has {len(pods)} replicas: no podIndex {query.pod_index}"
            )
        try:
            session = await kube.execute(
                pods[query.pod_index], query.argv, tty=query.tty, stdin=query.stdin
            )
        except KubeError as exc:
            log.warning("exec in %s failed: %s", lease, exc)
            await websocket.send_bytes(streams.frame(streams.FAILURE))
            return 1000

        async def forward_input() -> None:
            paced = websocket.app.state.gateway.input_rate
            while True:
                data = await websocket.receive_bytes()
                await paced.spend(lease.owner, len(data))
                if data[:1] == bytes([streams.STDIN]) and query.stdin:
                    await session.write(0, data[1:])
                elif data[:1] == bytes([streams.RESIZE]) and query.tty:
                    with contextlib.suppress(ValueError):
                        size = streams.resize(data[1:]).encode()
                        await session.write(4, size)

        async def forward_output() -> None:
            async for channel, data in session.output():
                code = streams.STDOUT if channel == 1 else streams.STDERR
                await websocket.send_bytes(streams.frame(code, data))

        reader = asyncio.create_task(forward_input())
        writer = asyncio.create_task(forward_output())
        try:
            done, _ = await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, writer):
                task.cancel()
            await asyncio.gather(reader, writer, return_exceptions=True)
            await session.close()
        if writer not in done:  # the tenant left: the command is stopped with its stream
            return 1000
        writer.result()
        exit_code = session.exit_code
        if exit_code is None:
            last = streams.frame(streams.FAILURE)
        else:
            message = "" if exit_code == 0 else str(session.status.get("message") or "")
            last = streams.result_frame(exit_code, message)
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the tenant left
            await websocket.send_bytes(last)
        return 1000

    await _serve(websocket, "shell", lease, work, reads=True)
