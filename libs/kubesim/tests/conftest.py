"""Shared fixtures of the conformance suite: a synchronous client and a test namespace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config


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
