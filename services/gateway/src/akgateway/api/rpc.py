"""gRPC on ``AP_GATEWAY_GRPC_LISTEN`` (Akash: 0.0.0.0:8444): ``akash.provider.v1.ProviderRPC``
and ``akash.provider.lease.v1.LeaseRPC``, with Akash's messages (``_pb/``).

ProviderRPC:

- ``GetStatus``: the aggregated status (:func:`akgateway.domain.rpc.status_message`);
- ``StreamStatus``: that status now, then again each time its content changes;
- ``BidScreening``: would the provider bid on this group, and why not — the bid engine's
  screening command (``ScreenBid``) for the group, and the cluster's hostname check for the
  request's hostnames. Akash declares it and answers Unimplemented.

LeaseRPC, a tenant's calls on one of its leases, answered by the back ends of the REST
routes with the same scopes: ``SendManifest`` (``send-manifest``) to the manifest service;
``ServiceStatus`` and ``StreamServiceStatus`` (``status``) from the cluster service, with
forwarded ports and leased IPs; ``ServiceLogs`` and ``StreamServiceLogs`` (``logs``) from
Kubernetes through :mod:`akgateway.adapters.kube`, one entry per log line named after its pod.

Served over TLS with the provider's certificate (the tenant API's TLS, relayed to grpcio on
loopback: :mod:`akgateway.adapters.grpcfront`), with server reflection and the standard health
service. The status is public, as on REST; every other call needs a tenant, which
:meth:`Authenticated._identity` (the one place gRPC authenticates) takes from the
connection's client certificate or from a bearer token in the ``authorization`` metadata,
checked as REST checks them (:func:`akgateway.api.auth.by_certificate`,
:func:`akgateway.api.auth.by_token`; both at once is ambiguous, as on REST). Errors carry the
status code matching the REST answer (400 → INVALID_ARGUMENT, 401 → UNAUTHENTICATED,
404 → NOT_FOUND, 503 → UNAVAILABLE, …) and the same message.
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import grpc
from google.protobuf import empty_pb2
from grpc import aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pydantic import ValidationError

from akchain.convert import group_spec_from_pb
from akchain.jwt import Scope
from akgateway import metrics
from akgateway._pb.akash.provider.lease.v1 import lease_pb2 as lease
from akgateway._pb.akash.provider.lease.v1 import lease_pb2_grpc
from akgateway._pb.akash.provider.v1 import provider_pb2 as provider
from akgateway._pb.akash.provider.v1 import provider_pb2_grpc
from akgateway.adapters.grpcfront import PeerCertificates
from akgateway.adapters.kube import LeaseCluster, Pod
from akgateway.api.auth import Identity, by_certificate, by_token
from akgateway.api.context import Gateway
from akgateway.api.leasepods import merged, running_pods
from akgateway.api.routes import ask, lease_report, require_services
from akgateway.domain.answers import checked_manifest, rejection_error
from akgateway.domain.lease_rpc import lease_of, manifest_from_pb, status_response
from akgateway.domain.rpc import screening_response, status_message
from akgateway.errors import (
    ApiError,
    BadRequest,
    KubeError,
    LeaseGone,
    NotFound,
    Unauthorized,
    Unavailable,
)
from aktypes.duration import go_duration
from aktypes.events import (
    BidScreened,
    CheckHostnames,
    HostnamesChecked,
    ManifestAccepted,
    ManifestRejected,
    ScreenBid,
    SubmitManifest,
)
from aktypes.events.streams import BIDENGINE_COMMANDS, CLUSTER_COMMANDS, MANIFEST_COMMANDS
from aktypes.ids import MAX_UINT64, DeploymentID, LeaseID

log = logging.getLogger("akgateway.api.rpc")

SERVICE = provider.DESCRIPTOR.services_by_name["ProviderRPC"].full_name
LEASE_SERVICE = lease.DESCRIPTOR.services_by_name["LeaseRPC"].full_name
CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    422: grpc.StatusCode.FAILED_PRECONDITION,
    503: grpc.StatusCode.UNAVAILABLE,
}
STATUS_INTERVAL = 5.0  # StreamServiceStatus without an `interval` metadata (Akash's 5 s)
MIN_STATUS_INTERVAL = 1.0
MAX_STATUS_INTERVAL = 24 * 3600.0
Context = aio.ServicerContext[Any, Any]
T = TypeVar("T")


async def _answer(context: Context, work: Awaitable[T]) -> T:
    """``work``'s result; an :class:`ApiError` aborts the call with the matching code and
    its message. Anything unexpected is one log line and INTERNAL with a plain message,
    never grpcio's answer (UNKNOWN naming a Python exception, and a traceback per call)."""
    try:
        return await work
    except ApiError as exc:
        await context.abort(CODES.get(exc.status, grpc.StatusCode.INTERNAL), exc.message)
        raise  # abort raises; this line is never reached
    except aio.AbortError:
        raise
    except Exception as exc:
        log.error(
            "gRPC call failed unexpectedly",
            extra={"error": f"{type(exc).__name__}: {exc}"[:500]},
        )
        await context.abort(grpc.StatusCode.INTERNAL, "internal error")
        raise  # never reached


class _Undecodable:
    """What a request that is not its method's protobuf message decodes to."""

    def __init__(self, error: str) -> None:
        self.error = error


if TYPE_CHECKING:  # generic in the stubs only
    Interceptor = aio.ServerInterceptor[Any, Any]
else:
    Interceptor = aio.ServerInterceptor


class DecodeFirst(Interceptor):
    """A request that does not decode is INVALID_ARGUMENT saying so, answered here: grpcio
    would log its traceback and answer INTERNAL."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler: Any = await continuation(handler_call_details)
        decode = getattr(handler, "request_deserializer", None)
        if decode is None or handler.request_streaming:
            return handler

        def safely(data: bytes) -> Any:
            try:
                return decode(data)
            except Exception as exc:  # protobuf's DecodeError, or whatever a parser raises
                return _Undecodable(str(exc)[:200] or type(exc).__name__)

        async def refused(request: _Undecodable, context: Context) -> None:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the request is not a valid message: {request.error}",
            )

        if handler.unary_unary is not None:
            call = handler.unary_unary

            async def unary(request: Any, context: Context) -> Any:
                if isinstance(request, _Undecodable):
                    await refused(request, context)
                return await call(request, context)

            return handler._replace(request_deserializer=safely, unary_unary=unary)
        if handler.unary_stream is not None:
            stream = handler.unary_stream

            async def streamed(request: Any, context: Context) -> AsyncIterator[Any]:
                if isinstance(request, _Undecodable):
                    await refused(request, context)
                async for item in stream(request, context):
                    yield item

            return handler._replace(request_deserializer=safely, unary_stream=streamed)
        return handler


class Authenticated:
    """What every servicer here shares: the gateway, and who is calling."""

    def __init__(self, gateway: Gateway, peers: PeerCertificates) -> None:
        self.gateway = gateway
        self.peers = peers

    async def _identity(self, context: Context) -> Identity:
        """The caller: the tenant of its connection's client certificate or of the bearer
        token in the ``authorization`` metadata."""
        der = self.peers.of(context.peer())
        values = [v for k, v in context.invocation_metadata() or () if k == "authorization"]
        if not values:
            if der is not None:
                return await by_certificate(self.gateway, der)
            raise Unauthorized(
                "this call needs a tenant: present your client certificate published on chain "
                "or send 'authorization: Bearer <token>' signed by your account"
            )
        if der is not None:
            raise BadRequest("ambiguous credentials: a client certificate and a bearer token")
        if len(values) > 1:
            raise BadRequest("authorization: one value expected")
        value = values[0] if isinstance(values[0], str) else values[0].decode()
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise BadRequest("authorization: expected 'Bearer <token>'")
        return await by_token(self.gateway, token.strip())


class ProviderRPC(Authenticated, provider_pb2_grpc.ProviderRPCServicer):
    def status(self) -> provider.Status:
        settings = self.gateway.settings
        return status_message(
            self.gateway.board.snapshot(),
            public_hostname=settings.cluster_public_hostname,
            now=dt.datetime.now(dt.UTC),
            max_age=settings.gateway_status_max_age,
        )

    async def GetStatus(  # noqa: N802 - the RPC's name
        self, _request: empty_pb2.Empty, _context: Context
    ) -> provider.Status:
        metrics.RPC.labels("GetStatus").inc()
        return self.status()

    async def StreamStatus(  # noqa: N802
        self, _request: empty_pb2.Empty, _context: Context
    ) -> AsyncIterator[provider.Status]:
        metrics.RPC.labels("StreamStatus").inc()
        board, sent, version = self.gateway.board, b"", -1
        while True:
            version = await board.changed(version)
            message = self.status()
            content = _without_time(message)
            if content != sent:
                sent = content
                yield message

    async def BidScreening(  # noqa: N802
        self, request: provider.BidScreeningRequest, context: Context
    ) -> provider.BidScreeningResponse:
        metrics.RPC.labels("BidScreening").inc()
        return await _answer(context, self._screen(request, context))

    async def _screen(
        self, request: provider.BidScreeningRequest, context: Context
    ) -> provider.BidScreeningResponse:
        owner = (await self._identity(context)).owner
        if not request.HasField("group_spec") or not request.group_spec.resources:
            raise BadRequest("group_spec: a group with at least one resource unit is required")
        try:
            group = group_spec_from_pb(request.group_spec)
        except (ValidationError, ValueError) as exc:
            raise BadRequest(f"group_spec: {exc}") from None
        timeout = self.gateway.settings.gateway_request_timeout
        screened = await ask(
            self.gateway,
            BIDENGINE_COMMANDS,
            ScreenBid(group=group, owner=owner),
            (BidScreened, BidScreened),
            timeout=timeout,
            who="bid engine",
        )
        refused: dict[str, str] = {}
        if request.hostnames:
            # only the owner counts in the check: no lease of theirs has this number
            anyone = LeaseID(
                owner=owner, dseq=MAX_UINT64, gseq=1, oseq=1, provider=self.gateway.provider
            )
            checked = await ask(
                self.gateway,
                CLUSTER_COMMANDS,
                CheckHostnames(lease_id=anyone, hostnames=list(request.hostnames)),
                (HostnamesChecked, HostnamesChecked),
                timeout=timeout,
                who="cluster service",
            )
            refused = checked.refused
        return screening_response(screened, refused)


class LeaseRPC(Authenticated, lease_pb2_grpc.LeaseRPCServicer):
    """A tenant's calls on one of its leases, with REST's back ends and scopes."""

    async def _lease(
        self,
        context: Context,
        request: lease.SendManifestRequest | lease.ServiceStatusRequest | lease.ServiceLogsRequest,
        scope: Scope,
        services: list[str],
    ) -> tuple[Identity, LeaseID]:
        """The caller and the request's lease, once the caller may use ``scope`` on it."""
        identity = await self._identity(context)
        if not request.HasField("lease_id"):
            raise BadRequest("lease_id is required")
        found = lease_of(request.lease_id, owner=identity.owner, provider=self.gateway.provider)
        identity.require(
            scope,
            self.gateway.provider,
            dseq=found.dseq,
            gseq=None if scope == "send-manifest" else found.gseq,
            oseq=None if scope == "send-manifest" else found.oseq,
            services=services,
        )
        if scope == "logs" and not services:  # naming none, it concerns them all
            await require_services(self.gateway, identity, scope, found)
        return identity, found

    async def SendManifest(  # noqa: N802
        self, request: lease.SendManifestRequest, context: Context
    ) -> lease.SendManifestResponse:
        metrics.RPC.labels("SendManifest").inc()
        return await _answer(context, self._send_manifest(request, context))

    async def _send_manifest(
        self, request: lease.SendManifestRequest, context: Context
    ) -> lease.SendManifestResponse:
        identity, lease_id = await self._lease(context, request, "send-manifest", [])
        manifest = checked_manifest(manifest_from_pb(request.manifest))
        deployment_id = DeploymentID(owner=lease_id.owner, dseq=lease_id.dseq)
        services = [s.name for g in manifest.groups for s in g.services or ()]
        await require_services(self.gateway, identity, "send-manifest", deployment_id, services)
        reply = await ask(
            self.gateway,
            MANIFEST_COMMANDS,
            SubmitManifest(deployment_id=deployment_id, manifest=manifest),
            (ManifestAccepted, ManifestRejected),
            timeout=self.gateway.settings.gateway_submit_timeout,
            who="manifest service",
        )
        if isinstance(reply, ManifestRejected):
            raise rejection_error(reply)
        return lease.SendManifestResponse()

    async def ServiceStatus(  # noqa: N802
        self, request: lease.ServiceStatusRequest, context: Context
    ) -> lease.ServiceStatusResponse:
        metrics.RPC.labels("ServiceStatus").inc()

        async def work() -> lease.ServiceStatusResponse:
            identity, lease_id = await self._lease(
                context, request, "status", list(request.services)
            )
            return await self._status(identity, lease_id, list(request.services))

        return await _answer(context, work())

    async def _status(
        self, identity: Identity, lease_id: LeaseID, services: list[str]
    ) -> lease.ServiceStatusResponse:
        report = await lease_report(self.gateway, lease_id)
        if not services:  # naming none, it concerns them all
            await require_services(self.gateway, identity, "status", lease_id, report.services)
        missing = [s for s in services if s not in report.services]
        if missing:
            raise NotFound(f"lease {lease_id} has no service {', '.join(missing)}")
        if services:
            kept = {k: v for k, v in report.services.items() if k in services}
            report = report.model_copy(update={"services": kept})
        return status_response(report)

    async def StreamServiceStatus(  # noqa: N802
        self, request: lease.ServiceStatusRequest, context: Context
    ) -> AsyncIterator[lease.ServiceStatusResponse]:
        """The status now, then every ``interval`` (metadata, a Go duration; 5 s) until the
        caller leaves; a lease that goes away ends the stream with NOT_FOUND."""
        metrics.RPC.labels("StreamServiceStatus").inc()
        services = list(request.services)

        async def opened() -> tuple[Identity, LeaseID, float]:
            identity, lease_id = await self._lease(context, request, "status", services)
            return identity, lease_id, _interval(context)

        identity, lease_id, interval = await _answer(context, opened())
        while True:
            yield await _answer(context, self._status(identity, lease_id, services))
            await asyncio.sleep(interval)

    def _kube(self) -> LeaseCluster:
        if self.gateway.kube is None:
            raise Unavailable("this gateway has no access to the cluster (AP_CLUSTER_BACKEND)")
        return self.gateway.kube

    async def _pods(self, lease_id: LeaseID, services: list[str]) -> list[Pod]:
        try:
            return await running_pods(self._kube(), lease_id, services)
        except LeaseGone as exc:
            raise NotFound(str(exc)) from None
        except KubeError as exc:
            raise Unavailable(str(exc)) from None

    async def ServiceLogs(  # noqa: N802
        self, request: lease.ServiceLogsRequest, context: Context
    ) -> lease.ServiceLogsResponse:
        """Every line the services' pods have logged so far, pod by pod (the newest that fit
        in one answer of ``AP_GATEWAY_MAX_BODY``)."""
        metrics.RPC.labels("ServiceLogs").inc()

        async def work() -> lease.ServiceLogsResponse:
            services = list(request.services)
            _, lease_id = await self._lease(context, request, "logs", services)
            # the newest entries that fit, kept while reading: memory stays within the budget
            entries: collections.deque[tuple[int, lease.ServiceLogs]] = collections.deque()
            budget, used = self.gateway.settings.gateway_max_body, 0
            try:
                for pod in await self._pods(lease_id, services):
                    async for line in self._kube().logs(pod, follow=False, tail=None):
                        entry = lease.ServiceLogs(name=pod.name, logs=line.encode())
                        size = entry.ByteSize() + 8  # the entry's tag and length
                        entries.append((size, entry))
                        used += size
                        while used > budget:
                            used -= entries.popleft()[0]
            except KubeError as exc:
                raise Unavailable(str(exc)) from None
            return lease.ServiceLogsResponse(services=[entry for _, entry in entries])

        return await _answer(context, work())

    async def StreamServiceLogs(  # noqa: N802
        self, request: lease.ServiceLogsRequest, context: Context
    ) -> AsyncIterator[lease.ServiceLogsResponse]:
        """The pods' lines as they come, one answer per line; the stream ends when the
        pods' logs end, with NOT_FOUND when the lease went away with them."""
        metrics.RPC.labels("StreamServiceLogs").inc()
        services = list(request.services)

        async def opened() -> tuple[LeaseID, list[Pod]]:
            _, lease_id = await self._lease(context, request, "logs", services)
            return lease_id, await self._pods(lease_id, services)

        lease_id, pods = await _answer(context, opened())
        kube = self._kube()

        def source(pod: Pod) -> AsyncIterator[str]:
            return kube.logs(pod, follow=True, tail=None)

        try:
            async for pod, line in merged(pods, source):
                yield lease.ServiceLogsResponse(
                    services=[lease.ServiceLogs(name=pod.name, logs=line.encode())]
                )
        except KubeError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        await _answer(context, self._pods(lease_id, []))  # NOT_FOUND if the lease went


def _interval(context: Context) -> float:
    """StreamServiceStatus's period: the ``interval`` metadata (Go's syntax, Akash's)."""
    values = [v for k, v in context.invocation_metadata() or () if k == "interval"]
    if not values:
        return STATUS_INTERVAL
    text = values[0] if isinstance(values[0], str) else values[0].decode(errors="replace")
    try:
        seconds = go_duration(text.strip()) if len(text) <= 32 else None
    except ValueError:  # more digits than Python reads
        seconds = None
    if seconds is None or not MIN_STATUS_INTERVAL <= seconds <= MAX_STATUS_INTERVAL:
        raise BadRequest(
            f"interval: {text[:32]!r} is not a duration from {MIN_STATUS_INTERVAL:g}s to "
            f"{MAX_STATUS_INTERVAL / 3600:g}h (examples: 5s, 1m)"
        )
    return float(seconds)


def _without_time(message: provider.Status) -> bytes:
    copy = provider.Status()
    copy.CopyFrom(message)
    copy.ClearField("timestamp")
    return copy.SerializeToString(deterministic=True)


class RPCServer:
    """ProviderRPC, LeaseRPC, reflection and health on loopback, without TLS
    (:mod:`akgateway.adapters.grpcfront` is its TLS), while the block runs (an async context manager
    for :meth:`akservice.Runtime.resource`); ``port`` once started."""

    def __init__(self, gateway: Gateway, peers: PeerCertificates) -> None:
        self.gateway = gateway
        self.peers = peers
        self.port = 0
        self.server = aio.server(
            interceptors=[DecodeFirst()],
            options=[
                # Akash's keepalive policy: clients may ping every 30 s, even when idle
                ("grpc.http2.min_ping_interval_without_data_ms", 30_000),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.max_receive_message_length", gateway.settings.gateway_max_body),
            ],
        )
        self.health = health.aio.HealthServicer()  # type: ignore[attr-defined]  # stubs lag

    async def __aenter__(self) -> Self:
        provider_pb2_grpc.add_ProviderRPCServicer_to_server(  # type: ignore[no-untyped-call]
            ProviderRPC(self.gateway, self.peers), self.server
        )
        lease_pb2_grpc.add_LeaseRPCServicer_to_server(  # type: ignore[no-untyped-call]
            LeaseRPC(self.gateway, self.peers), self.server
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE, LEASE_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server
        )
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        for name in ("", SERVICE, LEASE_SERVICE):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace=1.0)
