"""The FastAPI application: routes, JSON errors everywhere, metrics, OpenAPI.

Every error is ``{"message": …}`` with Akash's status codes: a request that does not fit a
route (a path number that is not one, out of range) is a 400 naming the field, an unknown
route a 404, a wrong method a 405 — never FastAPI's ``{"detail": …}``, and never a 500 for
bad input. A bug is a 500 and one log line (:class:`Unexpected`). OpenAPI is at
``/openapi.json`` with docs at ``/docs``. Request metrics go to the process's default
registry, which the runtime serves on the health port.
"""

from __future__ import annotations

import logging
import traceback

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_fastapi_instrumentator import Instrumentator
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from akgateway.api.context import Gateway
from akgateway.api.routes import router
from akgateway.api.websockets import router as websocket_router
from akgateway.errors import ApiError

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


def _where(exc: BaseException) -> str:
    """Where ``exc`` was raised: the innermost frame, as ``file:line in function``."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    last = frames[-1]
    return f"{last.filename.rsplit('/', 1)[-1]}:{last.lineno} in {last.name}"


class Unexpected:
    """An exception no handler answers becomes a 500 ``{"message": "internal error"}``
    (a websocket: close 1011) and ONE log line naming it and where it was raised.

    Starlette's own last resort answers too, but then raises the exception on, and uvicorn
    logs its traceback again: two tracebacks per request, which a stranger can repeat."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] in ("http.response.start", "websocket.accept", "websocket.close"):
                started = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            log.error(
                "request %s %s failed",
                scope.get("method", "WEBSOCKET"),
                scope.get("path", ""),
                extra={"error": f"{type(exc).__name__}: {exc}"[:300], "where": _where(exc)},
            )
            if started:
                return
            if scope["type"] == "http":
                await _message(500, "internal error")(scope, receive, send)
            else:
                await send({"type": "websocket.close", "code": 1011, "reason": ""})


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
    app.add_middleware(Unexpected)
    Instrumentator(should_group_status_codes=False).instrument(
        app, metric_namespace="provider", metric_subsystem="gateway"
    )
    return app
