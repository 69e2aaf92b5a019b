"""Unit tests of kubesim.patch: JSON patch, JSON merge patch and strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim import patch, schemas
from kubesim.errors import ApiError


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a/one"]},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1",
                            "args": ["--a", "--b"],
                            "env": [{"name": "A", "value": "1"}],
                            "ports": [{"containerPort": 80, "name": "http"}],
                        },
                        {"name": "sidecar", "image": "envoy:1"},
                    ],
                    "tolerations": [{"key": "x", "operator": "Exists"}],
                    "volumes": [
                        {"name": "data", "emptyDir": {}},
                        {"name": "conf", "configMap": {"name": "conf"}},
                    ],
                },
            },
        },
    }


def strategic(target: dict[str, Any], body: Any, kind: str = "Deployment") -> Any:
    api_version = "apps/v1" if kind == "Deployment" else "v1"
    root = schemas.patch_root(kind, api_version, "1.32")
    assert root is not None
    return patch.strategic_merge_patch(copy.deepcopy(target), body, root)


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    pod_spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return pod_spec


def test_schema_knows_the_merge_keys() -> None:
    root = schemas.patch_root("Deployment", "apps/v1", "1.32")
    assert root is not None
    containers = root.field("spec").field("template").field("spec").field("containers")
    assert (containers.strategy, containers.merge_key) == ("merge", "name")
    assert containers.items().field("ports").merge_key == "containerPort"
    assert root.field("metadata").field("finalizers").strategy == "merge"
    assert root.field("spec").field("template").field("spec").field("tolerations").strategy == ""
    assert schemas.patch_root("Widget", "example.com/v1", "1.32") is None


# -- JSON merge patch (RFC 7386) -----------------------------------------------------------
def test_merge_patch_merges_maps_and_deletes_with_null() -> None:
    target = {"a": {"b": 1, "c": 2}, "d": 3}
    result = patch.merge_patch(target, {"a": {"b": 9, "c": None, "e": {"f": 1}}, "d": None})
    assert result == {"a": {"b": 9, "e": {"f": 1}}}
    assert target == {"a": {"b": 1, "c": 2}, "d": 3}  # the target is left alone


def test_merge_patch_replaces_lists_and_scalars() -> None:
    target = {"list": [1, 2, 3], "obj": {"x": 1}, "s": "v"}
    assert patch.merge_patch(target, {"list": [4]}) == {"list": [4], "obj": {"x": 1}, "s": "v"}
    assert patch.merge_patch(target, {"obj": "flat"})["obj"] == "flat"
    assert patch.merge_patch(target, {"s": {"now": "map"}})["s"] == {"now": "map"}
    assert patch.merge_patch(target, {}) == target
    # RFC 7386 appendix A: a non-object patch replaces the target
    assert patch.merge_patch({"a": "b"}, ["c"]) == ["c"]
    assert patch.merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert patch.merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}


# -- JSON patch (RFC 6902) -------------------------------------------------------------------
def test_json_patch_applies_operations_in_order() -> None:
    obj = deployment()
    result = patch.json_patch(
        obj,
        [
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "replace", "path": "/spec/replicas", "value": 3},
            {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
            {"op": "remove", "path": "/spec/template/spec/containers/1"},
            {"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations"},
            {"op": "move", "from": "/metadata/finalizers", "path": "/metadata/kept"},
        ],
    )
    assert result["spec"]["replicas"] == 3
    assert result["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert result["metadata"]["annotations"] == {"app": "web", "tier": "front"}
    assert [c["name"] for c in spec_of(result)["containers"]] == ["app"]
    assert "finalizers" not in result["metadata"]
    assert result["metadata"]["kept"] == ["a/one"]
    assert obj == deployment()  # the target is left alone


def test_json_patch_failures() -> None:
    with pytest.raises(ApiError) as info:
        patch.json_patch(deployment(), [{"op": "test", "path": "/spec/replicas", "value": 2}])
    assert info.value.code == 422
    with pytest.raises(ApiError) as info:
        patch.json_patch(deployment(), [{"op": "remove", "path": "/spec/nothing"}])
    assert info.value.code == 422
    with pytest.raises(ApiError) as info:
        patch.json_patch(deployment(), {"op": "remove", "path": "/spec"})
    assert (info.value.code, info.value.reason) == (400, "BadRequest")
    with pytest.raises(ApiError) as info:
        patch.json_patch(deployment(), [1, {"op": "remove", "path": "/spec"}])
    assert (info.value.code, info.value.reason) == (400, "BadRequest")
    # what the patch makes of the object is the store's to refuse (422 on the field `patch`)
    assert patch.json_patch(deployment(), [{"op": "replace", "path": "", "value": [1]}]) == [1]


# -- strategic merge patch ---------------------------------------------------------------------
def test_strategic_merge_patch_merges_containers_by_name() -> None:
    result = strategic(
        deployment(),
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "sidecar", "image": "envoy:2"},
                            {"name": "new", "image": "busybox"},
                        ]
                    }
                }
            }
        },
    )
    containers = spec_of(result)["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("app", "nginx:1"),
        ("sidecar", "envoy:2"),
        ("new", "busybox"),
    ]
    assert containers[0] == deployment()["spec"]["template"]["spec"]["containers"][0]


def test_strategic_merge_patch_merges_nested_lists_by_their_keys() -> None:
    result = strategic(
        deployment(),
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                "args": ["--c"],
                            }
                        ]
                    }
                }
            }
        },
    )
    app = spec_of(result)["containers"][0]
    assert app["env"] == [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]
    assert app["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]
    assert app["args"] == ["--c"]  # no patch strategy: the list is replaced
    assert app["image"] == "nginx:1"


def test_strategic_merge_patch_replaces_lists_without_a_strategy() -> None:
    result = strategic(
        deployment(), {"spec": {"template": {"spec": {"tolerations": [{"key": "y"}]}}}}
    )
    assert spec_of(result)["tolerations"] == [{"key": "y"}]


def test_strategic_merge_patch_treats_scalar_merge_lists_as_sets() -> None:
    result = strategic(deployment(), {"metadata": {"finalizers": ["a/two", "a/one"]}})
    assert result["metadata"]["finalizers"] == ["a/one", "a/two"]
    removed = strategic(
        result, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/one", "a/none"]}}
    )
    assert removed["metadata"]["finalizers"] == ["a/two"]
    cleared = strategic(result, {"metadata": {"finalizers": None}})
    assert "finalizers" not in cleared["metadata"]


def test_strategic_merge_patch_directives() -> None:
    # delete a list item by its key
    result = strategic(
        deployment(),
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}}}},
    )
    assert [c["name"] for c in spec_of(result)["containers"]] == ["sidecar"]
    # replace a whole list
    result = strategic(
        deployment(),
        {
            "spec": {
                "template": {
                    "spec": {"containers": [{"$patch": "replace"}, {"name": "x", "image": "y"}]}
                }
            }
        },
    )
    assert spec_of(result)["containers"] == [{"name": "x", "image": "y"}]
    # replace a map
    result = strategic(
        deployment(),
        {"spec": {"selector": {"$patch": "replace", "matchLabels": {"other": "x"}}}},
    )
    assert result["spec"]["selector"] == {"matchLabels": {"other": "x"}}
    # delete a map
    result = strategic(deployment(), {"spec": {"selector": {"$patch": "delete"}}})
    assert "selector" not in result["spec"]
    # retain only some keys of a map (volumes use merge,retainKeys)
    result = strategic(
        deployment(),
        {
            "spec": {
                "template": {
                    "spec": {
                        "volumes": [
                            {
                                "name": "data",
                                "hostPath": {"path": "/x"},
                                "$retainKeys": ["name", "hostPath"],
                            }
                        ]
                    }
                }
            }
        },
    )
    assert spec_of(result)["volumes"] == [
        {"name": "data", "hostPath": {"path": "/x"}},
        {"name": "conf", "configMap": {"name": "conf"}},
    ]
    # $setElementOrder is accepted (kubectl sends it)
    result = strategic(
        deployment(),
        {
            "spec": {
                "template": {
                    "spec": {
                        "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
                        "containers": [{"name": "app", "image": "nginx:2"}],
                    }
                }
            }
        },
    )
    assert [c["image"] for c in spec_of(result)["containers"]] == ["nginx:2", "envoy:1"]
    assert "$setElementOrder/containers" not in spec_of(result)


def test_strategic_merge_patch_on_a_service_merges_ports_by_port() -> None:
    service = {
        "metadata": {"name": "s"},
        "spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]},
    }
    result = strategic(service, {"spec": {"ports": [{"port": 443, "nodePort": 30443}]}}, "Service")
    assert result["spec"]["ports"] == [
        {"name": "http", "port": 80},
        {"name": "https", "port": 443, "nodePort": 30443},
    ]


def test_strategic_merge_patch_maps_and_labels() -> None:
    result = strategic(
        deployment(), {"metadata": {"labels": {"app": None, "x": "y"}, "annotations": {"a": "b"}}}
    )
    assert result["metadata"]["labels"] == {"x": "y"}
    assert result["metadata"]["annotations"] == {"a": "b"}
    assert result["spec"] == deployment()["spec"]


def test_strategic_merge_patch_errors() -> None:
    with pytest.raises(ApiError) as info:
        strategic(deployment(), [{"op": "add"}])
    assert info.value.code == 400
    with pytest.raises(ApiError) as info:
        strategic(
            deployment(), {"spec": {"template": {"spec": {"containers": [{"image": "no-name"}]}}}}
        )
    assert info.value.code == 400
    assert "merge key" in info.value.message
    with pytest.raises(ApiError) as info:
        strategic(deployment(), {"spec": {"template": {"spec": {"containers": ["scalar"]}}}})
    assert info.value.code == 400


def test_strategic_merge_patch_over_a_value_of_another_type() -> None:
    # a map patched over a scalar (or a missing value) becomes that map, for validation to judge
    result = strategic(deployment(), {"spec": {"replicas": {"oops": 1}}})
    assert result["spec"]["replicas"] == {"oops": 1}
    result = strategic(deployment(), {"spec": {"paused": {"a": {"b": None, "c": 1}}}})
    assert result["spec"]["paused"] == {"a": {"c": 1}}
