"""``GET /lease/{dseq}/{gseq}/{oseq}/status`` answered from memory, ahead of the framework.

Console polls the status of every lease it shows. While the cluster's confirmation of a
lease's status is fresh (:class:`akgateway.handlers.LeaseStatuses`), the answer is the
status's body rendered once, after the same checks the route makes, in the same order:
the credentials (:func:`akgateway.api.auth.identify`), the scope on the lease and on the
services named in the query, then on every service of the lease. A refusal is answered as
the application answers it (``{"message": …}`` with its status). Anything else — a path
that is not in its one canonical spelling, a status that is not fresh, an unexpected
error — goes on to the application (:func:`akgateway.api.routes.lease_status`), with the
identity already established, so the credentials are checked once.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from fastapi.responses import JSONResponse
from starlette.requests import HTTPConnection

from akgateway import metrics
from akgateway.api.auth import IDENTITY, identify, requested_services, tenant_of
from akgateway.api.context import Gateway
from akgateway.domain.answers import lease_status_json
from akgateway.errors import ApiError
from aktypes.ids import MAX_UINT32, MAX_UINT64, LeaseID

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("akgateway")

PATH = re.compile(r"/lease/([1-9][0-9]{0,19})/([1-9][0-9]{0,9})/([1-9][0-9]{0,9})/status")
HEADERS = [(b"content-type", b"application/json")]


def lease_status_fast_path(app: ASGIApp, gateway: Gateway) -> ASGIApp:
    """A lease's fresh status from memory; every other request to ``app``."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and gateway.leases is not None:
            found = PATH.fullmatch(scope["path"])
            if found is not None:
                try:
                    answer = await _answer(gateway, scope, found)
                except Exception as exc:  # the application answers it, and logs it once
                    log.debug("lease status from memory failed: %s", exc)
                    answer = None
                if answer is not None:
                    status, body = answer
                    headers = [*HEADERS, (b"content-length", str(len(body)).encode())]
                    await send(
                        {"type": "http.response.start", "status": status, "headers": headers}
                    )
                    await send({"type": "http.response.body", "body": body})
                    return
        await app(scope, receive, send)

    return asgi


async def _answer(gateway: Gateway, scope: Scope, found: re.Match[str]) -> tuple[int, bytes] | None:
    """(status, body), or None for the application to answer."""
    leases = gateway.leases
    dseq, gseq, oseq = (int(n) for n in found.groups())
    if leases is None or dseq > MAX_UINT64 or gseq > MAX_UINT32 or oseq > MAX_UINT32:
        return None
    connection = HTTPConnection(scope)
    try:
        tenant = tenant_of(await identify(connection, gateway))
        lease_id = LeaseID(
            owner=tenant.owner, dseq=dseq, gseq=gseq, oseq=oseq, provider=gateway.provider
        )
        held = leases.fresh(lease_id)
        if held is None:
            scope[IDENTITY] = tenant  # checked: the application takes it as it is
            return None
        # the services asked for, then (a grant naming services) every service of the lease
        asked = [requested_services(connection)]
        if tenant.leases.names_services(gateway.provider):
            asked.append(list(held.report.services))
        for services in asked:
            tenant.require(
                "status", gateway.provider, dseq=dseq, gseq=gseq, oseq=oseq, services=services
            )
    except ApiError as exc:
        return exc.status, bytes(JSONResponse({"message": exc.message}).body)
    if held.body is None:
        held.body = bytes(JSONResponse(lease_status_json(held.report)).body)
    metrics.LEASE_STATUS_SERVED.labels("memory").inc()
    return 200, held.body
