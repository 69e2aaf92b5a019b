"""What Akash's lease websockets take and send (``gateway/rest/router.go``,
``router_shell.go``): query parameters, frames, close codes. Pure: no I/O.

Numbers are read by :func:`akgateway.domain.params.number` (canonical ASCII digits only).

- ``/logs``: ``service`` (comma list), ``follow``, ``tail`` (-1: everything); text frames
  ``{"name": <pod>, "message": <line>}``.
- ``/kubeevents``: ``service``, ``follow``; text frames ``{type, reportingController,
  reportingInstance, reason, note, object{kind, namespace, name}}``.
- ``/shell``: ``cmd0``…``cmdN``, ``tty``, ``stdin``, ``service``, ``podIndex``; binary
  frames whose first byte says what follows (codes below).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from akgateway.domain.params import number
from akgateway.errors import BadRequest

# close codes
CLOSE_INTERNAL = 4000
CLOSE_LEASE_NOT_FOUND = 4001
CLOSE_UNAVAILABLE = 4002
# shell frame codes
STDOUT, STDERR, RESULT, FAILURE, STDIN, RESIZE = 100, 101, 102, 103, 104, 105
MAX_ARGS = 64
MAX_TAIL = 2**31 - 1  # Akash reads tail as an int32
MAX_POD_INDEX = 2**31 - 1  # and podIndex as a uint31
TRUE, FALSE = ("1", "true", "t", "yes"), ("0", "false", "f", "no")


def flag(query: Mapping[str, str], name: str, default: bool | None = None) -> bool:
    value = query.get(name)
    if value is None:
        if default is None:
            raise BadRequest(f"query parameter {name} is required (1 or 0)")
        return default
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise BadRequest(f"query parameter {name}={value!r}: expected true or false (1 or 0)")


def services_of(query: Mapping[str, str]) -> list[str]:
    return [s for s in (query.get("service") or "").split(",") if s]


@dataclass(frozen=True)
class LogsQuery:
    services: list[str]
    follow: bool
    tail: int | None  # None: every line


def logs_query(query: Mapping[str, str]) -> LogsQuery:
    raw = query.get("tail", "-1")
    tail = None if raw == "-1" else number(raw, "query parameter tail (-1: all)", 0, MAX_TAIL)
    return LogsQuery(services_of(query), flag(query, "follow", False), tail)


def log_frame(pod: str, line: str) -> str:
    return json.dumps({"name": pod, "message": line})


def event_frame(event: Mapping[str, Any]) -> str:
    """Akash's event message from a core/v1 Event (as the API serializes it)."""
    involved = event.get("involvedObject") or {}
    return json.dumps(
        {
            "type": event.get("type") or "",
            "reportingController": event.get("reportingComponent")
            or (event.get("source") or {}).get("component")
            or "",
            "reportingInstance": event.get("reportingInstance")
            or (event.get("source") or {}).get("host")
            or "",
            "reason": event.get("reason") or "",
            "note": event.get("message") or "",
            "object": {
                "kind": involved.get("kind") or "",
                "namespace": involved.get("namespace") or "",
                "name": involved.get("name") or "",
            },
        }
    )


def concerns(event: Mapping[str, Any], services: list[str]) -> bool:
    """Whether an event is about one of ``services`` (any, when none is named): its object
    is named after the service (a Deployment, its ReplicaSets and pods)."""
    if not services:
        return True
    name = str((event.get("involvedObject") or {}).get("name") or "")
    return any(name == s or name.startswith(f"{s}-") for s in services)


@dataclass(frozen=True)
class ShellQuery:
    argv: list[str]
    tty: bool
    stdin: bool
    service: str
    pod_index: int


def shell_query(query: Mapping[str, str]) -> ShellQuery:
    argv = []
    for i in range(MAX_ARGS + 1):
        arg = query.get(f"cmd{i}")
        if arg is None:
            break
        argv.append(arg)
    if not argv:
        raise BadRequest("query parameter cmd0 is required: the command (cmd1… its arguments)")
    if len(argv) > MAX_ARGS:
        raise BadRequest(f"a command of more than {MAX_ARGS} arguments")
    service = query.get("service") or ""
    if not service:
        raise BadRequest("query parameter service is required")
    raw = query.get("podIndex")
    if raw is None:
        raise BadRequest("query parameter podIndex is required")
    pod_index = number(raw, "query parameter podIndex", 0, MAX_POD_INDEX)
    return ShellQuery(argv, flag(query, "tty"), flag(query, "stdin"), service, pod_index)


def frame(code: int, data: bytes = b"") -> bytes:
    return bytes([code]) + data


def result_frame(exit_code: int, message: str = "") -> bytes:
    return frame(RESULT, json.dumps({"exit_code": exit_code, "message": message}).encode())


def resize(data: bytes) -> str:
    """A resize frame's payload (width, height: big-endian uint16) as Kubernetes' JSON."""
    if len(data) != 4:
        raise ValueError(f"a resize is 4 bytes (width, height), got {len(data)}")
    width, height = struct.unpack(">HH", data)
    return json.dumps({"Width": width, "Height": height})
