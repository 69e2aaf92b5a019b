"""JSON-RPC 2.0 framing for the devnet's RPC: reading requests from raw frames, and the error
answers JSON-RPC 2.0 defines for what is not a request.

Every frame gets an answer: text that is not JSON is a parse error (-32700); JSON that is not
a request object is an invalid request (-32600, id null); ``params`` that are not an object
of named parameters are invalid params (-32602). A batch (a list of requests) is answered
with a list over HTTP; the websocket takes one request per frame, as CometBFT's does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
MAX_BODY = 1_000_000
"""Largest request body or websocket frame, in bytes (CometBFT's ``max_body_bytes``)."""
MAX_BATCH = 100

_MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}


class RPCFailure(Exception):
    """A JSON-RPC error: ``code``, its standard ``message`` and ``data`` saying what is wrong."""

    def __init__(self, code: int, data: str, message: str | None = None) -> None:
        self.code, self.data = code, data
        self.message = message or _MESSAGES.get(code, "Server error")
        super().__init__(data)


@dataclass(frozen=True)
class Request:
    id: str | int | float | None
    method: str
    params: dict[str, Any] = field(default_factory=dict)


def answer(request_id: Any, result: Any = None, error: RPCFailure | None = None) -> dict[str, Any]:
    """A JSON-RPC response object."""
    if error is not None:
        failure = {"code": error.code, "message": error.message, "data": error.data}
        return {"jsonrpc": "2.0", "id": request_id, "error": failure}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse(data: str | bytes) -> Any:
    """The JSON value of a frame or body; ``RPCFailure`` (parse error) saying why it is not."""
    try:
        text = data.decode() if isinstance(data, bytes) else data
        return json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise RPCFailure(PARSE_ERROR, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    except RecursionError:
        raise RPCFailure(PARSE_ERROR, "JSON nested too deeply") from None
    except ValueError as exc:
        raise RPCFailure(PARSE_ERROR, f"not JSON: {exc}") from exc


def kind(value: Any) -> str:
    """How a JSON value is called in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def read_request(message: Any) -> Request | dict[str, Any]:
    """The request in a parsed frame, or the error answer for a frame that is not one."""
    if not isinstance(message, dict):
        return answer(
            None,
            error=RPCFailure(INVALID_REQUEST, f"expected a request object, got {kind(message)}"),
        )
    request_id = message.get("id")
    if isinstance(request_id, float) and not math.isfinite(request_id):
        return answer(None, error=RPCFailure(INVALID_REQUEST, "id is a number out of range"))
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | float | None):
        return answer(
            None,
            error=RPCFailure(
                INVALID_REQUEST, f"id must be a string, a number or null, not {kind(request_id)}"
            ),
        )
    method = message.get("method")
    if not isinstance(method, str) or not method:
        got = "an empty one" if method == "" else kind(method)
        return answer(
            request_id,
            error=RPCFailure(INVALID_REQUEST, f"method must be a non-empty string, not {got}"),
        )
    params = message.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return answer(
            request_id,
            error=RPCFailure(
                INVALID_PARAMS, f"params must be an object of named parameters, not {kind(params)}"
            ),
        )
    return Request(request_id, method, params)
