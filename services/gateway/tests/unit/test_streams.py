"""Akash's lease websocket contract: query parameters, frames, event messages."""

from __future__ import annotations

import json

import pytest

from akgateway.domain import streams
from akgateway.errors import BadRequest


def test_logs_query_defaults_and_checks() -> None:
    assert streams.logs_query({}) == streams.LogsQuery([], False, None)
    query = streams.logs_query({"service": "web,db", "follow": "true", "tail": "10"})
    assert query == streams.LogsQuery(["web", "db"], True, 10)
    for bad in ("x", "-2", "+1", "1.0", "0_1", " 1", "²", "01", "٣", "", str(2**31)):
        with pytest.raises(BadRequest, match=r"tail \(-1: all\)"):
            streams.logs_query({"tail": bad})
    with pytest.raises(BadRequest, match="follow='maybe'"):
        streams.logs_query({"follow": "maybe"})


def test_shell_query_needs_every_parameter() -> None:
    full = {"cmd0": "sh", "cmd1": "-c", "cmd2": "ls", "tty": "1", "stdin": "0"}
    full |= {"service": "web", "podIndex": "2"}
    assert streams.shell_query(full) == streams.ShellQuery(
        ["sh", "-c", "ls"], True, False, "web", 2
    )
    for missing in ("cmd0", "tty", "stdin", "service", "podIndex"):
        query = {k: v for k, v in full.items() if k != missing}
        with pytest.raises(BadRequest, match=missing):
            streams.shell_query(query)
    for bad in ("-1", "+0", "²", "00", "1e3", " 0", str(2**31)):
        with pytest.raises(BadRequest, match="podIndex"):
            streams.shell_query(full | {"podIndex": bad})


def test_shell_frames_and_resize() -> None:
    assert streams.frame(streams.STDOUT, b"hi") == b"dhi"  # 100 = 'd'
    assert json.loads(streams.result_frame(3, "boom")[1:]) == {"exit_code": 3, "message": "boom"}
    assert streams.result_frame(0)[0] == 102
    assert json.loads(streams.resize(bytes([0, 80, 0, 24]))) == {"Width": 80, "Height": 24}
    with pytest.raises(ValueError, match="4 bytes"):
        streams.resize(b"\x00\x50")


def test_event_messages_have_akashs_shape_and_filter_by_service() -> None:
    event = {
        "type": "Normal",
        "reason": "ScalingReplicaSet",
        "message": "Scaled up replica set web-5d8 to 2",
        "reportingComponent": "",
        "source": {"component": "deployment-controller"},
        "involvedObject": {"kind": "Deployment", "namespace": "ns1", "name": "web"},
    }
    assert json.loads(streams.event_frame(event)) == {
        "type": "Normal",
        "reportingController": "deployment-controller",
        "reportingInstance": "",
        "reason": "ScalingReplicaSet",
        "note": "Scaled up replica set web-5d8 to 2",
        "object": {"kind": "Deployment", "namespace": "ns1", "name": "web"},
    }
    pod = {"involvedObject": {"name": "web-5d8-x2"}}
    assert streams.concerns(event, []) and streams.concerns(pod, ["web"])
    assert not streams.concerns(pod, ["webapp"]) and not streams.concerns(pod, ["db"])
