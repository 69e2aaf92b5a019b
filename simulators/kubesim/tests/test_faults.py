"""Fault switches: what a client sees when the cluster misbehaves, and that it recovers.

Switched in-process on a threaded simulator and over HTTP on the server command; observed
only through the official `kubernetes` client (and a bare socket for refused connections).
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from kubesim.testing import KubeSimProcess, ThreadedKubeSim, wait_until


def status_of(call: Callable[[], Any]) -> int:
    """The HTTP status a client call ends with (200 when it succeeds)."""
    try:
        call()
    except ApiException as exc:
        return int(exc.status)
    return 200


def accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


def ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def test_unavailable_answers_503_then_recovers(
    kubesim_thread: ThreadedKubeSim, k8s: client.ApiClient
) -> None:
    core = client.CoreV1Api(k8s)
    core.create_namespace({"metadata": {"name": "before"}})
    kubesim_thread.call(lambda: kubesim_thread.faults.unavailable(2))
    with pytest.raises(ApiException) as down:
        core.list_namespace()
    assert down.value.status == 503
    assert json.loads(down.value.body)["reason"] == "ServiceUnavailable"
    wait_until(lambda: status_of(core.list_namespace), lambda code: code == 200, timeout=10)
    names = [n.metadata.name for n in core.list_namespace().items]
    assert "before" in names  # nothing was lost during the outage


def test_an_outage_ends_open_watches(
    kubesim_thread: ThreadedKubeSim, k8s: client.ApiClient
) -> None:
    core = client.CoreV1Api(k8s)
    rv = core.list_namespace().metadata.resource_version
    started = time.monotonic()
    seen = []
    w = watch.Watch()
    timer = threading.Timer(
        0.3, lambda: kubesim_thread.call(lambda: kubesim_thread.faults.unavailable(2))
    )
    timer.start()
    try:
        seen.extend(
            event["type"]
            for event in w.stream(core.list_namespace, resource_version=rv, timeout_seconds=30)
        )
    except (ApiException, urllib3.exceptions.HTTPError):
        pass  # the client may also see the 503 when it reconnects
    finally:
        timer.join()
    assert time.monotonic() - started < 10  # the stream ended with the outage, not its timeout
    assert seen == []
    kubesim_thread.call(kubesim_thread.faults.available)
    assert status_of(core.list_namespace) == 200


def test_refused_connections_then_the_same_port_listens_again(
    kubesim_thread: ThreadedKubeSim, k8s: client.ApiClient
) -> None:
    core = client.CoreV1Api(k8s)
    port = kubesim_thread.running.port
    assert accepts(port)
    kubesim_thread.call(lambda: kubesim_thread.faults.unavailable(2.0, refuse=True))
    wait_until(lambda: accepts(port), lambda up: not up, timeout=5)
    with pytest.raises(urllib3.exceptions.MaxRetryError) as refused:
        core.list_namespace(_request_timeout=1)
    assert isinstance(refused.value.reason, urllib3.exceptions.NewConnectionError)
    wait_until(lambda: accepts(port), lambda up: up, timeout=10)
    assert kubesim_thread.running.port == port
    wait_until(lambda: status_of(core.list_namespace), lambda code: code == 200, timeout=5)


def test_slow_responses_run_into_client_timeouts(
    kubesim_thread: ThreadedKubeSim, k8s: client.ApiClient
) -> None:
    core = client.CoreV1Api(k8s)
    kubesim_thread.call(lambda: kubesim_thread.faults.slow(2.0, seconds=30))
    with pytest.raises(urllib3.exceptions.MaxRetryError) as timed_out:
        core.list_namespace(_request_timeout=0.3)  # the client retries, then gives up
    assert isinstance(timed_out.value.reason, urllib3.exceptions.ReadTimeoutError)
    started = time.monotonic()
    assert core.list_namespace().items  # a patient client still gets its answer
    assert time.monotonic() - started >= 2.0
    kubesim_thread.call(lambda: kubesim_thread.faults.slow(0.0, seconds=1))
    assert core.list_namespace(_request_timeout=2).items


def test_a_crash_looping_workload_and_its_recovery(
    kubesim_thread: ThreadedKubeSim, k8s: client.ApiClient
) -> None:
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    core.create_namespace({"metadata": {"name": "crash"}})
    kubesim_thread.call(lambda: kubesim_thread.faults.crashloop("crash", "app=bad"))
    apps.create_namespaced_deployment("crash", deployment("bad"))
    apps.create_namespaced_deployment("crash", deployment("good"))

    wait_until(
        lambda: apps.read_namespaced_deployment("good", "crash"),
        lambda d: d.status is not None and d.status.available_replicas == 1,
    )
    (pod,) = wait_until(
        lambda: core.list_namespaced_pod("crash", label_selector="app=bad").items,
        lambda items: (
            len(items) == 1
            and bool(items[0].status.container_statuses)
            and items[0].status.container_statuses[0].restart_count >= 2
        ),
    )
    (state,) = pod.status.container_statuses
    assert state.state.waiting.reason == "CrashLoopBackOff"
    assert state.last_state.terminated.exit_code == 1
    assert not state.ready
    assert not ready(pod)
    bad = apps.read_namespaced_deployment("bad", "crash")
    assert not bad.status.available_replicas
    events = core.list_namespaced_event(
        "crash", field_selector=f"involvedObject.name={pod.metadata.name}"
    ).items
    assert any(e.reason == "BackOff" and e.type == "Warning" for e in events)

    kubesim_thread.call(kubesim_thread.faults.heal)
    healed = wait_until(
        lambda: apps.read_namespaced_deployment("bad", "crash"),
        lambda d: d.status is not None and d.status.available_replicas == 1,
    )
    assert healed.status.ready_replicas == 1
    (pod,) = core.list_namespaced_pod("crash", label_selector="app=bad").items
    assert pod.status.container_statuses[0].restart_count >= 2  # the restarts stay counted
    assert pod.status.container_statuses[0].state.running is not None


def test_a_node_turning_not_ready(kubesim_thread: ThreadedKubeSim, k8s: client.ApiClient) -> None:
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    core.create_namespace({"metadata": {"name": "nodes"}})
    apps.create_namespaced_deployment("nodes", deployment("spread", replicas=4))
    wait_until(
        lambda: apps.read_namespaced_deployment("spread", "nodes"),
        lambda d: d.status is not None and d.status.available_replicas == 4,
    )
    pods = core.list_namespaced_pod("nodes").items
    assert {p.spec.node_name for p in pods} == {"node-a", "node-b"}

    kubesim_thread.call(lambda: kubesim_thread.faults.node_ready("node-b", False))
    node = wait_until(
        lambda: core.read_node("node-b"),
        lambda n: {c.type: c.status for c in n.status.conditions}["Ready"] == "False",
    )
    assert [t.key for t in node.spec.taints] == ["node.kubernetes.io/unreachable"]
    degraded = wait_until(
        lambda: apps.read_namespaced_deployment("spread", "nodes"),
        lambda d: (d.status.ready_replicas or 0) < 4,
    )
    on_b = [p for p in core.list_namespaced_pod("nodes").items if p.spec.node_name == "node-b"]
    assert degraded.status.ready_replicas == 4 - len(on_b)
    assert on_b and not any(ready(p) for p in on_b)
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=node-b")
    assert any(e.reason == "NodeNotReady" for e in events.items)

    apps.patch_namespaced_deployment("spread", "nodes", {"spec": {"replicas": 6}})
    new = wait_until(
        lambda: [
            p
            for p in core.list_namespaced_pod("nodes").items
            if p.metadata.uid not in {q.metadata.uid for q in pods}
        ],
        lambda items: len(items) == 2 and all(p.spec.node_name for p in items),
    )
    assert {p.spec.node_name for p in new} == {"node-a"}  # nothing new on a NotReady node

    kubesim_thread.call(lambda: kubesim_thread.faults.node_ready("node-b", True))
    wait_until(
        lambda: apps.read_namespaced_deployment("spread", "nodes"),
        lambda d: d.status is not None and d.status.available_replicas == 6,
    )
    assert not core.read_node("node-b").spec.taints


def post_faults(process: KubeSimProcess, body: Any) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(  # noqa: S310 - our own server
        f"{process.url}/_kubesim/faults",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:  # noqa: S310
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_fault_switches_over_http(kubesim_process: KubeSimProcess) -> None:
    api = config.new_client_from_config(str(kubesim_process.kubeconfig))
    core = client.CoreV1Api(api)
    try:
        assert post_faults(kubesim_process, {"unavailable": {"seconds": 2}})[0] == 200
        assert status_of(core.list_node) == 503
        wait_until(lambda: status_of(core.list_node), lambda code: code == 200, timeout=10)

        kubesim_process.faults(node={"name": "node-a", "ready": False})
        wait_until(
            lambda: core.read_node("node-a"),
            lambda n: {c.type: c.status for c in n.status.conditions}["Ready"] == "False",
        )
        kubesim_process.faults(node={"name": "node-a", "ready": True})
        wait_until(
            lambda: core.read_node("node-a"),
            lambda n: {c.type: c.status for c in n.status.conditions}["Ready"] == "True",
        )

        code, body = post_faults(kubesim_process, {"unavailable": {"seconds": -1}})
        assert code == 400
        assert body["reason"] == "BadRequest"
        assert "unavailable.seconds" in body["message"]
        code, body = post_faults(kubesim_process, {"crashloop": {"namespace": "x"}})
        assert (code, body["reason"]) == (400, "BadRequest")
        assert "crashloop.selector: Field required" in body["message"]
        code, body = post_faults(kubesim_process, {"flood": True})
        assert code == 400
        assert "flood" in body["message"]
        assert status_of(core.list_node) == 200  # refused switches changed nothing
    finally:
        api.close()
