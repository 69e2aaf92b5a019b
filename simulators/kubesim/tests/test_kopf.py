"""An unmodified kopf operator runs against kubesim: create, update and delete handlers,
its finalizer and its status patches, all over the server command's HTTP API."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from akservice.testing import ServiceProcess, eventually_sync
from kubesim.testing import KubeSimProcess

T = TypeVar("T")

OPERATOR = Path(__file__).with_name("kopf_operator.py")
GROUP, VERSION, PLURAL = "demo.kubesim.test", "v1", "greetings"
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "greeting", "kind": "Greeting"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"message": {"type": "string"}},
                                "required": ["message"],
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


class Operator(ServiceProcess):
    """The operator as users run it: `python -m kopf run` in a process of its own."""

    def __init__(self, kubeconfig: Path, log: Path) -> None:
        command = [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces",
                   "--verbose", str(OPERATOR)]  # fmt: skip
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1"}
        super().__init__(command, log_path=log, ready=lambda: True, env=env, name="kopf")
        self.start()

    def tail(self) -> str:
        return "\n".join(self.log().splitlines()[-40:])


@pytest.fixture
def cluster(kubesim_process: KubeSimProcess) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(str(kubesim_process.kubeconfig))
    client.ApiextensionsV1Api(api).create_custom_resource_definition(CRD)
    client.CoreV1Api(api).create_namespace({"metadata": {"name": "demo"}})
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def operator(
    kubesim_process: KubeSimProcess, cluster: client.ApiClient, tmp_path: Path
) -> Iterator[Operator]:
    running = Operator(kubesim_process.kubeconfig, tmp_path / "operator.log")
    try:
        yield running
    finally:
        running.stop()


def wait_for(
    operator: Operator, fetch: Callable[[], T], done: Callable[[T], bool], timeout: float = 30
) -> T:
    """`eventually_sync`, failing at once (with the operator's log) if the operator died."""

    def alive_fetch() -> T:
        if not operator.running():
            pytest.fail(f"the operator exited; its log:\n{operator.tail()}")
        return fetch()

    try:
        return eventually_sync(alive_fetch, timeout, "the operator's work", until=done)
    except AssertionError as exc:
        pytest.fail(f"{exc}\noperator log:\n{operator.tail()}")


def test_kopf_operator_handles_create_update_delete(
    cluster: client.ApiClient, operator: Operator
) -> None:
    custom, core = client.CustomObjectsApi(cluster), client.CoreV1Api(cluster)

    def greeting() -> dict[str, Any]:
        found: dict[str, Any] = custom.get_namespaced_custom_object(
            GROUP, VERSION, "demo", PLURAL, "hello"
        )
        return found

    def configmap() -> Any:
        try:
            return core.read_namespaced_config_map("hello-greeting", "demo")
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        "demo",
        PLURAL,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Greeting",
            "metadata": {"name": "hello"},
            "spec": {"message": "hello, world"},
        },
    )

    # create: the child object exists, owned by the Greeting; the status carries both the
    # handler's result and its explicit patch; kopf's finalizer is on the object
    made = wait_for(operator, configmap, lambda cm: cm is not None)
    assert made.data == {"message": "hello, world"}
    owner = greeting()
    assert [(o.kind, o.name, o.uid, o.controller) for o in made.metadata.owner_references] == [
        ("Greeting", "hello", owner["metadata"]["uid"], True)
    ]
    created = wait_for(
        operator, greeting, lambda g: (g.get("status") or {}).get("phase") == "Greeted"
    )
    assert created["status"]["create_fn"] == {"configmap": "hello-greeting"}
    assert FINALIZER in created["metadata"]["finalizers"]
    assert created["spec"] == {"message": "hello, world"}  # status patches leave spec alone

    # update: a new message reaches the ConfigMap; the update handler's result in status
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "demo", PLURAL, "hello", {"spec": {"message": "hello again"}}
    )
    updated = wait_for(
        operator, greeting, lambda g: (g.get("status") or {}).get("phase") == "Updated"
    )
    assert updated["status"]["update_fn/spec.message"] == {"message": "hello again"}
    assert updated["metadata"]["generation"] == 2
    assert configmap().data == {"message": "hello again"}

    # delete: held by the finalizer until the delete handler has run, then gone
    custom.delete_namespaced_custom_object(GROUP, VERSION, "demo", PLURAL, "hello")
    wait_for(operator, configmap, lambda cm: cm is None)

    def absent() -> bool:
        try:
            greeting()
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    wait_for(operator, absent, lambda gone: gone)
    log = operator.log()
    handled = log.find("Handler 'delete_fn' succeeded")
    released = log.find("Removing the finalizer, thus allowing the actual deletion")
    assert 0 <= handled < released, operator.tail()  # held until the handler had run
    assert "Traceback" not in log

    # the Event the create handler posted through kopf, about the Greeting
    events = core.list_namespaced_event("demo", field_selector="involvedObject.name=hello").items
    greeted = [e for e in events if e.reason == "Greeted"]
    assert len(greeted) == 1, [(e.reason, e.message) for e in events]
    assert greeted[0].type == "Normal"
    assert greeted[0].message == "configmap hello-greeting holds the message"
    assert greeted[0].involved_object.uid == owner["metadata"]["uid"]
    assert operator.stop() == 0
