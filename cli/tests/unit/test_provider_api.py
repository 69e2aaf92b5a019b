"""Which node ``akash-provider provider`` asks: the option, ``AP_API``, the devnet of a
running ``akash-provider run`` in this folder, else Akash's default port."""

from __future__ import annotations

from pathlib import Path

import pytest

from akcli.provider import EMBEDDED_DEVNET, api_url
from akdevnet.homedir import write_endpoints


def test_the_running_suite_s_devnet_is_the_default_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AP_API", raising=False)
    assert api_url(None) == "http://localhost:1317"  # nothing runs here
    EMBEDDED_DEVNET.mkdir(parents=True)
    write_endpoints(EMBEDDED_DEVNET, "http://127.0.0.1:2", "http://127.0.0.1:3")  # this pid
    assert api_url(None) == "http://127.0.0.1:3"
    monkeypatch.setenv("AP_API", "http://node:1317")
    assert api_url(None) == "http://node:1317"
    assert api_url("http://other:1317") == "http://other:1317"


def test_a_record_left_by_a_stopped_devnet_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AP_API", raising=False)
    EMBEDDED_DEVNET.mkdir(parents=True)
    record = '{"rpc": "http://127.0.0.1:2", "lcd": "http://127.0.0.1:3", "pid": 999999999}\n'
    (EMBEDDED_DEVNET / "endpoints.json").write_text(record)
    assert api_url(None) == "http://localhost:1317"
