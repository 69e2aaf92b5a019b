"""Requests by path against kubesim over HTTP with the official client: any resource by its
path, answers as JSON, refusals as the server's status."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from akkube.calls import get_json, open_get, resource_path, send
from akkube.client import api_client


@pytest.fixture
def client(kubesim_kubeconfig: Path) -> Iterator[ApiClient]:
    made = api_client(kubesim_kubeconfig)
    yield made
    made.close()  # type: ignore[no-untyped-call]


def config_map(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_paths_of_core_and_grouped_resources() -> None:
    assert resource_path("v1", "nodes") == "/api/v1/nodes"
    assert resource_path("v1", "services", "ns", "web") == "/api/v1/namespaces/ns/services/web"
    assert (
        resource_path("akash.network/v2beta2", "manifests", "lease")
        == "/apis/akash.network/v2beta2/namespaces/lease/manifests"
    )


def test_create_read_patch_delete_by_path(client: ApiClient) -> None:
    collection = resource_path("v1", "configmaps", "default")
    created = send(client, "POST", collection, body=config_map("settings", mode="a"))
    assert (created.status, json.loads(created.data)["data"]) == (201, {"mode": "a"})

    path = resource_path("v1", "configmaps", "default", "settings")
    patched = send(
        client,
        "PATCH",
        path,
        body={"data": {"mode": "b"}},
        content_type="application/merge-patch+json",
    )
    assert patched.status == 200
    assert get_json(client, path)["data"] == {"mode": "b"}
    listed = send(client, "GET", collection, query=[("labelSelector", "absent=1")])
    assert json.loads(listed.data)["items"] == []
    assert send(client, "DELETE", path).status == 200


def test_a_refusal_is_an_answer_with_the_servers_reason(client: ApiClient) -> None:
    missing = send(client, "GET", resource_path("v1", "configmaps", "default", "nothing"))
    assert missing.status == 404
    assert json.loads(missing.data)["reason"] == "NotFound"
    collection = resource_path("v1", "configmaps", "default")
    send(client, "POST", collection, body=config_map("twice"))
    again = send(client, "POST", collection, body=config_map("twice"))
    assert (again.status, again.reason) == (409, "Conflict")


def test_a_stream_is_opened_unread_and_a_refusal_raises(client: ApiClient) -> None:
    response = open_get(client, "/api/v1/nodes", [("limit", 1)])
    try:
        page = json.loads(response.data)
    finally:
        response.release_conn()
    assert len(page["items"]) == 1
    with pytest.raises(ApiException) as caught:
        get_json(client, resource_path("v1", "namespaces", name="nowhere"))
    assert caught.value.status == 404
