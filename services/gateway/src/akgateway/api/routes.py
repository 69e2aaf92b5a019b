"""Akash's tenant REST routes (``gateway/rest/router.go``), answered over the bus.

Public: ``GET /version``, ``/address``, ``/status``. Tenant (authenticated, the owner in
every ID is the tenant, the provider is us; each route checks its scope):
``PUT /deployment/{dseq}/manifest`` to the manifest service;
``GET /lease/{dseq}/{gseq}/{oseq}/status``, ``…/service/{name}/status``, ``…/manifest``,
``POST /hostname/migrate`` and ``/endpoint/migrate`` to the cluster service. Errors are
``{"message": …}`` (:mod:`akgateway.api.app`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from akbus import ConnectionLost, RequestTimeout, UnexpectedReply
from akchain.jwt import Scope
from akgateway import metrics
from akgateway.api.auth import Identity, Tenant, scoped
from akgateway.api.context import Gateway, gateway_of
from akgateway.buildinfo import build_info
from akgateway.domain.answers import (
    checked_manifest,
    lease_status_json,
    migration_error,
    parse_manifest,
    query_error,
    rejection_error,
)
from akgateway.domain.params import Digits
from akgateway.domain.status import kube_version
from akgateway.errors import Internal, NotFound, PayloadTooLarge, Unavailable
from aktypes.events import (
    GetLeaseManifest,
    GetLeaseStatus,
    LeaseManifestReport,
    LeaseQueryFailed,
    LeaseStatusReport,
    ManifestAccepted,
    ManifestRejected,
    Migrated,
    MigrateEndpoints,
    MigrateHostnames,
    MigrationRefused,
    Payload,
    SubmitManifest,
)
from aktypes.events.streams import CLUSTER_COMMANDS, MANIFEST_COMMANDS
from aktypes.ids import MAX_UINT32, MAX_UINT64, DeploymentID, LeaseID

R = TypeVar("R", bound=Payload)
R2 = TypeVar("R2", bound=Payload)

router = APIRouter()
Ctx = Annotated[Gateway, Depends(gateway_of)]
# numbers in their canonical spelling only, as the scope check reads them (domain.params)
Dseq = Annotated[int, Digits, Path(ge=1, le=MAX_UINT64, description="deployment sequence")]
Gseq = Annotated[int, Digits, Path(ge=1, le=MAX_UINT32, description="group sequence")]
Oseq = Annotated[int, Digits, Path(ge=1, le=MAX_UINT32, description="order sequence")]
SendManifest = Annotated[Identity, Depends(scoped("send-manifest"))]
GetManifest = Annotated[Identity, Depends(scoped("get-manifest"))]
Status = Annotated[Identity, Depends(scoped("status"))]


class ErrorBody(BaseModel):
    message: str


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in codes}


TENANT_ERRORS = _errors(400, 401, 403, 404, 503)

# -- public ---------------------------------------------------------------------------------


@router.get("/version", summary="build information of the provider and its Kubernetes")
async def version(gateway: Ctx) -> dict[str, Any]:
    """Akash's ``{"akash": version.Info, "kube": version.Info}``
    (:func:`akgateway.buildinfo.build_info`; ``kube`` is the API server's ``/version`` as
    the cluster service reports it, null without Kubernetes)."""
    return {"akash": build_info(), "kube": kube_version(gateway.board.snapshot())}


@router.get("/address", summary="the provider's account")
async def address(gateway: Ctx) -> dict[str, str]:
    return {"address": gateway.provider}


@router.get(
    "/status",
    summary="Akash's legacy status: cluster, bid engine, manifests",
    response_class=Response,
    responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}},
)
async def status(gateway: Ctx) -> Response:
    """Served from memory by :func:`akgateway.handlers.status_fast_path` once the status
    board has read the statuses; here before that."""
    if not gateway.board.ready.is_set():
        raise Unavailable("the statuses are being read from the bus")
    return Response(gateway.board.body(), media_type="application/json")


# -- tenant ---------------------------------------------------------------------------------


async def ask(
    gateway: Gateway,
    stream: str,
    command: Payload,
    expect: tuple[type[R], type[R2]],
    *,
    timeout: float,
    who: str,
) -> R | R2:
    kind = str(getattr(command, "type", type(command).__name__))
    try:
        reply = await gateway.bus.request(stream, command, expect, timeout_s=timeout)
    except RequestTimeout:
        metrics.BUS_REQUESTS.labels(kind, "timeout").inc()
        raise Unavailable(f"the {who} did not answer within {timeout:g}s") from None
    except ConnectionLost as exc:
        metrics.BUS_REQUESTS.labels(kind, "unreachable").inc()
        raise Unavailable(f"the bus (Redis) is unreachable: {exc}") from None
    except UnexpectedReply as exc:
        metrics.BUS_REQUESTS.labels(kind, "unexpected").inc()
        raise Internal(str(exc)) from None
    metrics.BUS_REQUESTS.labels(kind, "answered").inc()
    return reply


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"body of {declared} bytes is over the limit of {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


@router.put(
    "/deployment/{dseq}/manifest",
    summary="send the manifest of one of your deployments",
    response_class=Response,
    responses={
        200: {"description": "accepted (empty body)"},
        **_errors(400, 401, 403, 404, 413, 422, 503),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "the manifest: a JSON array of groups, as Akash's tools send it",
            "content": {
                "application/json": {"schema": {"type": "array", "items": {"type": "object"}}}
            },
        }
    },
)
async def submit_manifest(
    *, request: Request, dseq: Dseq, tenant: SendManifest, gateway: Ctx
) -> Response:
    manifest = checked_manifest(
        parse_manifest(await _body(request, gateway.settings.gateway_max_body))
    )
    deployment_id = DeploymentID(owner=tenant.owner, dseq=dseq)
    services = [s.name for g in manifest.groups for s in g.services or ()]
    await require_services(gateway, tenant, "send-manifest", deployment_id, services)
    command = SubmitManifest(deployment_id=deployment_id, manifest=manifest)
    reply = await ask(
        gateway,
        MANIFEST_COMMANDS,
        command,
        (ManifestAccepted, ManifestRejected),
        timeout=gateway.settings.gateway_submit_timeout,
        who="manifest service",
    )
    if isinstance(reply, ManifestRejected):
        raise rejection_error(reply)
    return Response(status_code=200)


def _lease(gateway: Gateway, tenant: Identity, dseq: int, gseq: int, oseq: int) -> LeaseID:
    return LeaseID(owner=tenant.owner, dseq=dseq, gseq=gseq, oseq=oseq, provider=gateway.provider)


async def lease_report(gateway: Gateway, lease_id: LeaseID, service: str = "") -> LeaseStatusReport:
    """The lease's status: from memory while the cluster's confirmation of it is fresh
    (:class:`akgateway.handlers.LeaseStatuses`), else asked of the cluster service."""
    held = gateway.leases.fresh(lease_id) if gateway.leases is not None else None
    if held is not None and (not service or service in held.report.services):
        metrics.LEASE_STATUS_SERVED.labels("memory").inc()
        report = held.report
        if not service:
            return report
        return report.model_copy(
            update={
                "services": {service: report.services[service]},
                "forwarded_ports": {
                    k: v for k, v in report.forwarded_ports.items() if k == service
                },
                "ips": {k: v for k, v in report.ips.items() if k == service},
            }
        )
    metrics.LEASE_STATUS_SERVED.labels("cluster").inc()
    reply = await ask(
        gateway,
        CLUSTER_COMMANDS,
        GetLeaseStatus(lease_id=lease_id, service=service),
        (LeaseStatusReport, LeaseQueryFailed),
        timeout=gateway.settings.gateway_request_timeout,
        who="cluster service",
    )
    if isinstance(reply, LeaseQueryFailed):
        raise query_error(reply)
    return reply


async def manifest_group(gateway: Gateway, lease_id: LeaseID) -> LeaseManifestReport:
    """The lease's manifest group, as the cluster service has it."""
    reply = await ask(
        gateway,
        CLUSTER_COMMANDS,
        GetLeaseManifest(lease_id=lease_id),
        (LeaseManifestReport, LeaseQueryFailed),
        timeout=gateway.settings.gateway_request_timeout,
        who="cluster service",
    )
    if isinstance(reply, LeaseQueryFailed):
        raise query_error(reply)
    return reply


async def lease_services(gateway: Gateway, lease_id: LeaseID) -> list[str]:
    """The services of a lease's manifest group, as the cluster service has it."""
    reply = await manifest_group(gateway, lease_id)
    return [s.name for s in reply.group.services or ()]


async def require_services(
    gateway: Gateway,
    tenant: Identity,
    scope: Scope,
    lease_id: LeaseID | DeploymentID,
    services: Iterable[str] | None = None,
) -> None:
    """Refuse (403) unless ``tenant`` may ``scope`` every one of ``services`` (None: every
    service of the lease, asked of the cluster service). For what names no service: it
    concerns them all, and a grant of some services does not cover the others. Free for
    credentials whose grants do not name services."""
    if not tenant.leases.names_services(gateway.provider):
        return
    if services is None:
        assert isinstance(lease_id, LeaseID)  # noqa: S101 - a deployment's are given
        services = await lease_services(gateway, lease_id)
    tenant.require(
        scope,
        gateway.provider,
        dseq=lease_id.dseq,
        gseq=getattr(lease_id, "gseq", None),
        oseq=getattr(lease_id, "oseq", None),
        services=services,
    )


@router.get(
    "/lease/{dseq}/{gseq}/{oseq}/status",
    summary="status of a lease's services, forwarded ports and leased IPs",
    responses=TENANT_ERRORS,
)
async def lease_status(
    *, dseq: Dseq, gseq: Gseq, oseq: Oseq, tenant: Status, gateway: Ctx
) -> JSONResponse:
    lease_id = _lease(gateway, tenant, dseq, gseq, oseq)
    report = await lease_report(gateway, lease_id)
    await require_services(gateway, tenant, "status", lease_id, report.services)
    return JSONResponse(lease_status_json(report))


@router.get(
    "/lease/{dseq}/{gseq}/{oseq}/service/{service}/status",
    summary="status of one service of a lease",
    responses=TENANT_ERRORS,
)
async def service_status(
    *, dseq: Dseq, gseq: Gseq, oseq: Oseq, service: str, tenant: Status, gateway: Ctx
) -> JSONResponse:
    lease_id = _lease(gateway, tenant, dseq, gseq, oseq)
    report = await lease_report(gateway, lease_id, service)
    found = report.services.get(service)
    if found is None:
        raise NotFound(f"lease {lease_id} has no service {service!r}")
    return JSONResponse(found.go_dict())


@router.get(
    "/lease/{dseq}/{gseq}/{oseq}/manifest",
    summary="the manifest group deployed for a lease",
    responses=TENANT_ERRORS,
)
async def lease_manifest(
    *, dseq: Dseq, gseq: Gseq, oseq: Oseq, tenant: GetManifest, gateway: Ctx
) -> JSONResponse:
    lease_id = _lease(gateway, tenant, dseq, gseq, oseq)
    reply = await manifest_group(gateway, lease_id)
    services = [s.name for s in reply.group.services or ()]
    await require_services(gateway, tenant, "get-manifest", lease_id, services)
    return JSONResponse(reply.group.go_dict())


# -- migrations -----------------------------------------------------------------------------


class HostnameMigration(BaseModel):
    hostnames_to_migrate: list[str] = Field(min_length=1, max_length=100)
    destination_dseq: int = Field(ge=1, le=MAX_UINT64)
    destination_gseq: int = Field(ge=1, le=MAX_UINT32)


class EndpointMigration(BaseModel):
    endpoints_to_migrate: list[str] = Field(min_length=1, max_length=100)
    destination_dseq: int = Field(ge=1, le=MAX_UINT64)
    destination_gseq: int = Field(ge=1, le=MAX_UINT32)


class Transferred(BaseModel):
    transferred: list[str]


async def _migrate(gateway: Gateway, command: MigrateHostnames | MigrateEndpoints) -> Transferred:
    reply = await ask(
        gateway,
        CLUSTER_COMMANDS,
        command,
        (Migrated, MigrationRefused),
        timeout=gateway.settings.gateway_request_timeout,
        who="cluster service",
    )
    if isinstance(reply, MigrationRefused):
        raise migration_error(reply)
    return Transferred(transferred=reply.transferred)


MIGRATION_ERRORS = _errors(400, 401, 403, 404, 503)


@router.post(
    "/hostname/migrate",
    summary="move hostnames from one of your leases here to another",
    responses=MIGRATION_ERRORS,
)
async def migrate_hostnames(body: HostnameMigration, tenant: Tenant, gateway: Ctx) -> Transferred:
    tenant.require(
        "hostname-migrate",
        gateway.provider,
        dseq=body.destination_dseq,
        gseq=body.destination_gseq,
    )
    command = MigrateHostnames(
        owner=tenant.owner,
        hostnames=body.hostnames_to_migrate,
        dseq=body.destination_dseq,
        gseq=body.destination_gseq,
    )
    return await _migrate(gateway, command)


@router.post(
    "/endpoint/migrate",
    summary="move leased-IP endpoints from one of your leases here to another",
    responses=MIGRATION_ERRORS,
)
async def migrate_endpoints(body: EndpointMigration, tenant: Tenant, gateway: Ctx) -> Transferred:
    tenant.require(
        "ip-migrate", gateway.provider, dseq=body.destination_dseq, gseq=body.destination_gseq
    )
    command = MigrateEndpoints(
        owner=tenant.owner,
        endpoints=body.endpoints_to_migrate,
        dseq=body.destination_dseq,
        gseq=body.destination_gseq,
    )
    return await _migrate(gateway, command)
