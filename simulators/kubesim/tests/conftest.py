"""Shared fixtures of the conformance suite: a synchronous client, a test namespace, and raw
HTTP to the simulator for requests the official clients would never send."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from kubernetes import client, config

from kubesim.testing import ThreadedKubeSim

NOTHING: Any = object()


@pytest.fixture
def k8s(kubesim_kubeconfig: Path) -> Iterator[client.ApiClient]:
    """An official (synchronous) client talking to the `kubesim_thread` simulator."""
    api = config.new_client_from_config(str(kubesim_kubeconfig))
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def ns(k8s: client.ApiClient) -> str:
    """A fresh namespace for the test's objects."""
    client.CoreV1Api(k8s).create_namespace({"metadata": {"name": "test"}})
    return "test"


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    raw: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.raw)

    @property
    def warnings(self) -> list[str]:
        return self.headers.get_all("Warning") or []


def send_raw(
    url: str,
    method: str,
    path: str,
    body: Any = NOTHING,
    *,
    content_type: str = "application/json",
    raw: bytes | None = None,
    timeout: float = 30,
) -> Reply:
    """One request on a connection of its own; `body` goes as JSON, `raw` as it is."""
    data = raw if raw is not None else None if body is NOTHING else json.dumps(body).encode()
    headers = {"Content-Type": content_type} if data is not None else {}
    conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=timeout)
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        conn.close()


@pytest.fixture(scope="session")
def raw_request() -> Callable[..., Reply]:
    """`raw_request(url, method, path, body, content_type=..., raw=...)`: see `send_raw`."""
    return send_raw


@pytest.fixture
def raw_http(kubesim_thread: ThreadedKubeSim) -> Callable[..., Reply]:
    """`raw_http(method, path, body, content_type=..., raw=...)` to `kubesim_thread`."""

    def send(method: str, path: str, body: Any = NOTHING, **options: Any) -> Reply:
        return send_raw(kubesim_thread.url, method, path, body, **options)

    return send
