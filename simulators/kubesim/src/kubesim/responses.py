"""What the API answers: JSON bodies with their `Warning` headers, objects as served, and
the `Status` bodies of success.

Every answer of the REST API goes through :func:`json_response`, errors included (their
`Status` bodies are built in :mod:`kubesim.errors`).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pydantic_core
from aiohttp import web

from kubesim import errors
from kubesim.catalog import ResourceType


def json_response(body: Any, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    data = pydantic_core.to_json(body)  # compact, and a list of 10,000 objects 2.5× faster
    # aiohttp warns of raw bodies over 1 MiB (an error under `-W error`): stream those
    payload: bytes | io.BytesIO = io.BytesIO(data) if len(data) > 2**20 else data
    response = web.Response(status=status, body=payload, content_type="application/json")
    for text in _bounded(warnings or []):  # as the real server sends them: one header each
        response.headers.add("Warning", "299 - " + json.dumps(text))
    return response


def _bounded(warnings: list[str]) -> list[str]:
    """Warnings as the real server bounds them — each at most 256 characters, no more than
    4096 characters in all — and at most 50 of them (Python's http.client, under the
    official client, refuses a response with more than 100 headers)."""
    shown: list[str] = []
    total = 0
    for warning in warnings[:50]:
        text = warning if len(warning) <= 256 else warning[:253] + "..."
        total += len(text)
        if total > 4096:
            break
        shown.append(text)
    return shown


def present(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as served (a custom resource in the version asked for); never changed."""
    return {**obj, "apiVersion": rtype.api_version} if rtype.custom else obj


def success(**fields: Any) -> dict[str, Any]:
    """A `Status` of success, as the real server answers actions without an object."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", **fields}


def deleted_status(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The `Status` the real server answers for an object deleted at once."""
    meta = obj["metadata"]
    return success(details=errors.details_of(rtype, meta["name"]) | {"uid": meta.get("uid")})
