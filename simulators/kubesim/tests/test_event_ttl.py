"""Events as a cluster keeps them: a crash loop's events, as the kubelet records them, and
their deletion an event TTL after their last write (kube-apiserver's ``--event-ttl``), on
the server command with its flags, seen through the official client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from kubesim.testing import KubeSimProcess, wait_until

TTL_S = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeSimProcess]:
    tmp = tmp_path_factory.mktemp("ttl")
    with KubeSimProcess(tmp, None, "--event-ttl", f"{TTL_S}s", "--crash-interval", "0.2") as sim:
        yield sim


@pytest.fixture
def core(server: KubeSimProcess) -> Iterator[client.CoreV1Api]:
    api = config.new_client_from_config(str(server.kubeconfig))  # type: ignore[no-untyped-call]
    with api:
        yield client.CoreV1Api(api)


def _events(core: client.CoreV1Api, namespace: str) -> dict[str, Any]:
    """The namespace's events by reason (the last of each reason)."""
    return {e.reason: e for e in core.list_namespaced_event(namespace).items}


def test_a_crash_loops_events_then_their_expiry(
    server: KubeSimProcess, core: client.CoreV1Api
) -> None:
    core.create_namespace({"metadata": {"name": "crash"}})
    server.faults(crashloop={"namespace": "crash", "selector": "app=bad"})
    container = {"name": "app", "image": "nginx:1.27"}
    core.create_namespaced_pod(
        "crash",
        {
            "metadata": {"name": "bad", "labels": {"app": "bad"}},
            "spec": {"containers": [container]},
        },
    )
    found = wait_until(
        lambda: _events(core, "crash"),
        lambda got: "BackOff" in got and got["BackOff"].count >= 2,
    )
    pod = core.read_namespaced_pod("bad", "crash")
    restarts = pod.status.container_statuses[0].restart_count
    backoff = found["BackOff"]
    assert (backoff.type, backoff.source.component) == ("Warning", "kubelet")
    assert (
        backoff.message
        == f"Back-off restarting failed container app in pod bad_crash({pod.metadata.uid})"
    )
    assert backoff.involved_object.field_path == "spec.containers{app}"
    # each restart repeats the start's events, counted: one Started per start
    assert {"Scheduled", "Pulled", "Created", "Started", "BackOff"} <= set(found)
    assert found["Started"].count >= backoff.count + 1
    assert restarts >= backoff.count

    # healed: the pod runs, its events stop changing, and a TTL after its last write each
    # event is deleted
    server.faults(heal=True)
    wait_until(
        lambda: core.read_namespaced_pod("bad", "crash"),
        lambda p: bool(p.status.container_statuses[0].state.running),
    )
    healed = time.monotonic()
    assert wait_until(lambda: _events(core, "crash"), lambda got: not got) == {}
    assert time.monotonic() - healed >= TTL_S * 0.5  # not before their time


def test_an_event_written_again_lives_on(server: KubeSimProcess, core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "kept"}})
    event = {
        "metadata": {"name": "ping"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "kept"},
        "reason": "Ping",
        "message": "again",
        "count": 1,
    }
    core.create_namespaced_event("kept", event)
    started = last = time.monotonic()
    while last - started < 1.5 * TTL_S:  # written every 0.3 s: it outlives its TTL
        current = core.read_namespaced_event("ping", "kept")
        core.patch_namespaced_event("ping", "kept", {"count": current.count + 1})
        last = time.monotonic()
        time.sleep(0.3)
    assert core.read_namespaced_event("ping", "kept").count >= 5
    assert wait_until(lambda: _events(core, "kept"), lambda got: not got) == {}
    assert time.monotonic() - last >= TTL_S * 0.9  # a TTL after its last write
