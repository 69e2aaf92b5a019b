"""gRPC ``akash.provider.v1.ProviderRPC`` on ``AP_GATEWAY_GRPC_LISTEN`` (Akash: 0.0.0.0:8444).

- ``GetStatus``: the aggregated status (:func:`akgateway.domain.rpc.status_message`);
- ``StreamStatus``: that status now, then again each time its content changes;
- ``BidScreening``: would the provider bid on this group, and why not — the bid engine's
  screening command (``ScreenBid``) for the group, and the cluster's hostname check for the
  request's hostnames. Akash declares it and answers Unimplemented.

Served over TLS with the provider's certificate (the tenant API's TLS, relayed to grpcio on
loopback: :mod:`akgateway.grpcfront`), with server reflection and the standard health
service. The status is public, as on REST; ``BidScreening`` needs the tenant it is asked
for: the client certificate of the connection, or a bearer token in the ``authorization``
metadata, checked as REST checks them (:func:`akgateway.auth.by_certificate`,
:func:`akgateway.auth.by_token`; both at once is ambiguous, as on REST). Errors carry the
status code matching the REST answer (400 → INVALID_ARGUMENT, 401 → UNAUTHENTICATED,
503 → UNAVAILABLE, …) and the same message.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

import grpc
from google.protobuf import empty_pb2
from grpc import aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pydantic import ValidationError

from akchain.convert import group_spec_from_pb
from akgateway import metrics
from akgateway._pb.akash.provider.v1 import provider_pb2 as provider
from akgateway._pb.akash.provider.v1 import provider_pb2_grpc
from akgateway.auth import Identity, by_certificate, by_token
from akgateway.context import Gateway
from akgateway.domain.rpc import screening_response, status_message
from akgateway.errors import ApiError, BadRequest, Unauthorized
from akgateway.grpcfront import PeerCertificates
from akgateway.routes import ask
from aktypes.events import BidScreened, CheckHostnames, HostnamesChecked, ScreenBid
from aktypes.events.streams import BIDENGINE_COMMANDS, CLUSTER_COMMANDS
from aktypes.ids import MAX_UINT64, LeaseID

log = logging.getLogger("akgateway.rpc")

SERVICE = provider.DESCRIPTOR.services_by_name["ProviderRPC"].full_name
CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    422: grpc.StatusCode.FAILED_PRECONDITION,
    503: grpc.StatusCode.UNAVAILABLE,
}


class ProviderRPC(provider_pb2_grpc.ProviderRPCServicer):
    def __init__(self, gateway: Gateway, peers: PeerCertificates) -> None:
        self.gateway = gateway
        self.peers = peers

    def status(self) -> provider.Status:
        settings = self.gateway.settings
        return status_message(
            self.gateway.board.snapshot(),
            public_hostname=settings.cluster_public_hostname,
            now=dt.datetime.now(dt.UTC),
            max_age=settings.gateway_status_max_age,
        )

    async def GetStatus(  # noqa: N802 - the RPC's name
        self, _request: empty_pb2.Empty, _context: aio.ServicerContext[Any, Any]
    ) -> provider.Status:
        metrics.RPC.labels("GetStatus").inc()
        return self.status()

    async def StreamStatus(  # noqa: N802
        self, _request: empty_pb2.Empty, _context: aio.ServicerContext[Any, Any]
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
        self, request: provider.BidScreeningRequest, context: aio.ServicerContext[Any, Any]
    ) -> provider.BidScreeningResponse:
        metrics.RPC.labels("BidScreening").inc()
        try:
            return await self._screen(request, context)
        except ApiError as exc:
            await context.abort(CODES.get(exc.status, grpc.StatusCode.INTERNAL), exc.message)
            raise  # abort raises; this line is never reached

    async def _screen(
        self, request: provider.BidScreeningRequest, context: aio.ServicerContext[Any, Any]
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

    async def _identity(self, context: aio.ServicerContext[Any, Any]) -> Identity:
        """The tenant of the call: its connection's client certificate or its bearer token."""
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


def _without_time(message: provider.Status) -> bytes:
    copy = provider.Status()
    copy.CopyFrom(message)
    copy.ClearField("timestamp")
    return copy.SerializeToString(deterministic=True)


class RPCServer:
    """ProviderRPC, reflection and health on loopback, without TLS (:mod:`akgateway.grpcfront`
    is its TLS), while the block runs (an async context manager for
    :meth:`akservice.Runtime.resource`); ``port`` once started."""

    def __init__(self, gateway: Gateway, peers: PeerCertificates) -> None:
        self.gateway = gateway
        self.peers = peers
        self.port = 0
        self.server = aio.server(
            options=[
                # Akash's keepalive policy: clients may ping every 30 s, even when idle
                ("grpc.http2.min_ping_interval_without_data_ms", 30_000),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.max_receive_message_length", gateway.settings.gateway_max_body),
            ]
        )
        self.health = health.aio.HealthServicer()  # type: ignore[attr-defined]  # stubs lag

    async def __aenter__(self) -> Self:
        provider_pb2_grpc.add_ProviderRPCServicer_to_server(  # type: ignore[no-untyped-call]
            ProviderRPC(self.gateway, self.peers), self.server
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server
        )
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        for name in ("", SERVICE):
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
