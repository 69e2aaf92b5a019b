"""The FastAPI application: routes, JSON errors everywhere, metrics, OpenAPI.

Every error is ``{"message": …}`` with Akash's status codes: a request that does not fit a
route (a path number that is not one, out of range) is a 400 naming the field, an unknown
route a 404, a wrong method a 405 — never FastAPI's ``{"detail": …}``, and never a 500 for
bad input. OpenAPI is at ``/openapi.json`` with docs at ``/docs``. Request metrics go to
the process's default registry, which the runtime serves on the health port.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_fastapi_instrumentator import Instrumentator
from starlette.exceptions import HTTPException

from akgateway.context import Gateway
from akgateway.errors import ApiError
from akgateway.routes import router
from akgateway.websockets import router as websocket_router

log = logging.getLogger("akgateway")


def _message(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status)


async def on_api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)  # noqa: S101 - registered for ApiError only
    return _message(exc.status, exc.message)


async def on_invalid_request(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)  # noqa: S101 - registered for it only
    problems = []
    for error in exc.errors():
        loc = [str(p) for p in error.get("loc", ()) if p not in ("path", "query", "body")]
        problems.append(f"{'.'.join(loc) or 'request'}: {error.get('msg', 'invalid')}")
    return _message(400, "; ".join(problems) or "invalid request")


async def on_http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)  # noqa: S101 - registered for it only
    return JSONResponse(
        {"message": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers
    )


async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("request %s %s failed", request.method, request.url.path, exc_info=exc)
    return _message(500, "internal error")


def create_app(gateway: Gateway) -> FastAPI:
    app = FastAPI(
        title="Akash provider gateway",
        summary="Akash's tenant REST API: manifests, lease status, provider status",
        version=gateway.version,
        docs_url="/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.gateway = gateway
    app.include_router(router)
    app.include_router(websocket_router)
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_invalid_request)
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
    Instrumentator(should_group_status_codes=False).instrument(
        app, metric_namespace="provider", metric_subsystem="gateway"
    )
    return app
