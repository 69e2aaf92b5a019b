"""API conformance of kubesim through `kubernetes_asyncio`, in the test's own event loop.

A subset of the synchronous suite: CRUD, the three patch types, conflicts, custom
objects, discovery, and watches (replay from a resourceVersion, 410 Gone after a
compaction, bookmarks, selectors).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from akservice.testing import eventually
from kubesim.sim import KubeSim

T = TypeVar("T")

MERGE = "application/merge-patch+json"


@pytest.fixture
async def api(kubesim: KubeSim, tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    path = kubesim.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = await config.new_client_from_config(config_file=str(path))
    try:
        yield api_client
    finally:
        await api_client.close()


@pytest.fixture
async def ns(api: client.ApiClient) -> str:
    await client.CoreV1Api(api).create_namespace({"metadata": {"name": "test"}})
    return "test"


async def api_error(call: Awaitable[Any]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as info:
        await call
    return int(info.value.status), json.loads(info.value.body) if info.value.body else {}


async def wait_until(
    fetch: Callable[[], Awaitable[T]], done: Callable[[T], bool], timeout: float = 10.0
) -> T:
    return await eventually(fetch, timeout, "the cluster to catch up", until=done)


async def collect(
    list_call: Callable[..., Any], *args: Any, until: str | None = None, **kwargs: Any
) -> list[tuple[str, str, str]]:
    """(type, name, resourceVersion) of each event, up to the ADDED of `until` or the end."""
    seen = []
    async with watch.Watch() as w:
        async for event in w.stream(list_call, *args, **kwargs):
            meta = event["raw_object"]["metadata"]
            seen.append((event["type"], meta.get("name", ""), meta.get("resourceVersion", "")))
            if until is not None and event["type"] == "ADDED" and meta.get("name") == until:
                w.stop()
    return seen


def deployment(name: str, containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}},
        },
    }


async def test_crud(api: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_config_map(
        ns, {"metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "1"}}
    )
    assert created.metadata.namespace == ns
    assert created.metadata.uid
    read = await core.read_namespaced_config_map("cm", ns)
    assert read.data == {"k": "1"}
    assert read.metadata.resource_version == created.metadata.resource_version
    listed = await core.list_namespaced_config_map(ns, label_selector="a=b")
    assert [i.metadata.name for i in listed.items] == ["cm"]
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)

    read.data = {"k": "2"}
    replaced = await core.replace_namespaced_config_map("cm", ns, read)
    assert replaced.data == {"k": "2"}
    assert int(replaced.metadata.resource_version) > int(read.metadata.resource_version)

    read.data = {"k": "3"}  # still the old resourceVersion
    code, body = await api_error(core.replace_namespaced_config_map("cm", ns, read))
    assert (code, body["reason"]) == (409, "Conflict")

    code, body = await api_error(
        core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}})
    )
    assert (code, body["reason"]) == (409, "AlreadyExists")

    status = await core.delete_namespaced_config_map("cm", ns)
    assert status.status == "Success"
    code, body = await api_error(core.read_namespaced_config_map("cm", ns))
    assert (code, body["reason"]) == (404, "NotFound")


async def test_deployment_runs_and_patches(api: client.ApiClient, ns: str) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    await apps.create_namespaced_deployment(
        ns,
        deployment(
            "web",
            [
                {"name": "app", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "envoy:1.30"},
            ],
        ),
    )
    await wait_until(
        lambda: apps.read_namespaced_deployment("web", ns),
        lambda d: d.status.ready_replicas == 1,
    )
    pods = await core.list_namespaced_pod(ns, field_selector="status.phase=Running")
    assert len(pods.items) == 1

    # strategic merge (the client's choice for an object body): containers merge by name
    patched = await apps.patch_namespaced_deployment(
        "web",
        ns,
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "nginx:1.28",
                                "env": [{"name": "B", "value": "2"}],
                            }
                        ]
                    }
                }
            }
        },
    )
    containers = patched.spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [
        ("app", "nginx:1.28"),
        ("sidecar", "envoy:1.30"),
    ]
    assert [e.name for e in containers[0].env] == ["A", "B"]
    assert patched.metadata.generation == 2

    # JSON patch (a list body)
    patched = await apps.patch_namespaced_deployment(
        "web", ns, [{"op": "replace", "path": "/spec/replicas", "value": 2}]
    )
    assert patched.spec.replicas == 2
    # JSON merge patch: lists are replaced whole
    patched = await apps.patch_namespaced_deployment(
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "busybox"}]}}}},
        _content_type=MERGE,
    )
    assert [c.name for c in patched.spec.template.spec.containers] == ["only"]

    code, body = await api_error(
        apps.create_namespaced_deployment(ns, deployment("broken", [{"name": "app"}]))
    )
    assert code == 422
    assert "spec.template.spec.containers[0].image" in body["message"]


async def test_watch_replays_from_a_resource_version(api: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map(ns, {"metadata": {"name": "old"}})
    rv = (await core.list_namespaced_config_map(ns)).metadata.resource_version

    await core.create_namespaced_config_map(ns, {"metadata": {"name": "a"}})
    await core.patch_namespaced_config_map("a", ns, {"data": {"x": "1"}})
    await core.create_namespaced_secret(ns, {"metadata": {"name": "ignored"}})
    await core.delete_namespaced_config_map("old", ns)
    await core.create_namespaced_config_map(ns, {"metadata": {"name": "end"}})

    seen = await collect(
        core.list_namespaced_config_map, ns, until="end", resource_version=rv, timeout_seconds=5
    )
    assert [(kind, name) for kind, name, _ in seen] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "old"),
        ("ADDED", "end"),
    ]
    versions = [int(v) for _, _, v in seen]
    assert versions == sorted(versions)
    assert versions[0] > int(rv)

    # events that happen while the watch is open arrive too, typed
    async with watch.Watch() as w:
        stream = w.stream(
            core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=5
        )
        first = await stream.__anext__()
        assert isinstance(first["object"], client.V1ConfigMap)
        await core.create_namespaced_config_map(ns, {"metadata": {"name": "live"}})
        names = [first["object"].metadata.name]
        async for event in stream:
            names.append(event["object"].metadata.name)
            if names[-1] == "live":
                w.stop()
    assert names[-2:] == ["end", "live"]


async def test_watch_from_a_compacted_version_is_gone(
    api: client.ApiClient, ns: str, kubesim: KubeSim
) -> None:
    core = client.CoreV1Api(api)
    rv = (await core.list_namespaced_config_map(ns)).metadata.resource_version
    await core.create_namespaced_config_map(ns, {"metadata": {"name": "a"}})
    kubesim.store.compact()
    with pytest.raises(ApiException) as info:
        await collect(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=2)
    assert info.value.status == 410
    assert "Expired" in str(info.value.reason)

    await core.create_namespaced_config_map(ns, {"metadata": {"name": "b"}})
    first = await core.list_namespaced_config_map(ns, limit=1)
    token = first.metadata._continue
    assert token
    assert first.metadata.remaining_item_count == 1
    await core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}})
    kubesim.store.compact()
    code, body = await api_error(core.list_namespaced_config_map(ns, limit=1, _continue=token))
    assert (code, body["reason"]) == (410, "Expired")


async def test_watch_bookmarks_and_selectors(api: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map(ns, {"metadata": {"name": "x", "labels": {"app": "a"}}})
    rv = (await core.list_namespaced_config_map(ns)).metadata.resource_version
    await core.patch_namespaced_config_map("x", ns, {"metadata": {"labels": {"app": "b"}}})

    async with watch.Watch() as w:
        kinds = [
            event["type"]
            async for event in w.stream(
                core.list_namespaced_config_map,
                ns,
                label_selector="app=a",
                resource_version=rv,
                allow_watch_bookmarks=True,
                timeout_seconds=1,
            )
        ]
    assert kinds[0] == "DELETED"  # x left the selector
    assert set(kinds[1:]) == {"BOOKMARK"}
    assert len(kinds) >= 3


async def test_custom_objects(api: client.ApiClient, ns: str) -> None:
    ext, objects = client.ApiextensionsV1Api(api), client.CustomObjectsApi(api)
    await ext.create_custom_resource_definition(
        {
            "metadata": {"name": "gadgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "kind": "Gadget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {
                                        "type": "object",
                                        "properties": {"size": {"type": "integer", "minimum": 1}},
                                    },
                                    "status": {
                                        "type": "object",
                                        "properties": {"ok": {"type": "boolean"}},
                                    },
                                },
                            }
                        },
                    }
                ],
            },
        }
    )
    resources = await objects.get_api_resources("example.com", "v1")
    assert {r.name for r in resources.resources} == {"gadgets", "gadgets/status"}
    args = ("example.com", "v1", ns, "gadgets")
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    created = await objects.create_namespaced_custom_object(
        *args, {**body, "spec": {"size": 1, "junk": True}}
    )
    assert created["spec"] == {"size": 1}
    patched = await objects.patch_namespaced_custom_object(
        *args, "g", {"spec": {"size": 2}, "status": {"ok": True}}, _content_type=MERGE
    )
    assert patched["spec"] == {"size": 2}
    assert "status" not in patched
    status = await objects.patch_namespaced_custom_object_status(
        *args, "g", {"status": {"ok": True}, "spec": {"size": 3}}, _content_type=MERGE
    )
    assert status["status"] == {"ok": True}
    assert status["spec"] == {"size": 2}
    code, error = await api_error(
        objects.create_namespaced_custom_object(*args, {**body, "spec": {"size": 0}})
    )
    assert code == 422
    assert "spec.size" in error["message"]
    listed = await objects.list_namespaced_custom_object(*args)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["g"]
    await objects.delete_namespaced_custom_object(*args, "g")
    code, _ = await api_error(objects.get_namespaced_custom_object(*args, "g"))
    assert code == 404


async def test_discovery(api: client.ApiClient) -> None:
    assert (await client.CoreApi(api).get_api_versions()).versions == ["v1"]
    groups = [g.name for g in (await client.ApisApi(api).get_api_versions()).groups]
    assert "apps" in groups
    resources = await client.AppsV1Api(api).get_api_resources()
    assert "deployments" in [r.name for r in resources.resources]
    version = await client.VersionApi(api).get_code()
    assert version.git_version == "v1.32.0"
