"""The simulated cluster behaves like one: pods scheduled onto nodes that fit them, then run.

Two nodes from a cluster file, one with four A100 GPUs. Everything goes through the official
`kubernetes` client: a Deployment becoming available, requests that fit no node, GPU
placement by model, rollouts, StatefulSets with their claims, garbage collection, pod logs,
exec, and the 422 for an invalid object.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream

from kubesim.cluster import ClusterSpec
from kubesim.testing import ThreadedKubeSim, wait_until

CLUSTER = """
nodes:
  - name: cpu-node
    cpu: "4"
    memory: 16Gi
    ephemeral-storage: 100Gi
    storage-classes: [beta2]
  - name: gpu-node
    cpu: "8"
    memory: 64Gi
    ephemeral-storage: 200Gi
    storage-classes: [beta3]
    gpus: {vendor: nvidia, model: a100, count: 4, memory: 80Gi, interface: sxm}
"""


@pytest.fixture(scope="module")
def cluster_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    """The official client against a simulator built from the two-node cluster file."""
    workdir = tmp_path_factory.mktemp("cluster")
    nodes = workdir / "nodes.yaml"
    nodes.write_text(CLUSTER)
    with ThreadedKubeSim(ClusterSpec.load(nodes)) as sim:
        api = config.new_client_from_config(str(sim.write_kubeconfig(workdir / "kubeconfig")))
        try:
            yield api
        finally:
            api.close()


@pytest.fixture
def ns(cluster_api: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    name = request.node.name.replace("_", "-")[:60].rstrip("-")
    core = client.CoreV1Api(cluster_api)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def deployment(
    name: str,
    replicas: int = 1,
    image: str = "nginx:1.27",
    requests: dict[str, str] | None = None,
    **pod_spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": image}
    if requests is not None:
        container["resources"] = {"requests": requests, "limits": requests}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container], **pod_spec},
            },
        },
    }


def pods_of(core: client.CoreV1Api, ns: str, app: str) -> list[Any]:
    return list(core.list_namespaced_pod(ns, label_selector=f"app={app}").items)


def gpu_affinity(model: str) -> dict[str, Any]:
    """Node affinity as a provider writes it for a GPU model (Akash capability labels)."""
    key = f"akash.network/capabilities.gpu.vendor.nvidia.model.{model}"
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "Exists"}]}]
            }
        }
    }


def test_nodes_come_from_the_cluster_file(cluster_api: client.ApiClient) -> None:
    nodes = {n.metadata.name: n for n in client.CoreV1Api(cluster_api).list_node().items}
    assert sorted(nodes) == ["cpu-node", "gpu-node"]
    gpu = nodes["gpu-node"]
    assert gpu.status.allocatable["nvidia.com/gpu"] == "4"
    assert gpu.status.allocatable["cpu"] == "8"
    assert gpu.metadata.labels["nvidia.com/gpu.product"] == "a100"
    assert (
        gpu.metadata.labels["akash.network/capabilities.gpu.vendor.nvidia.model.a100.ram.80Gi"]
        == "4"
    )
    assert "nvidia.com/gpu" not in nodes["cpu-node"].status.allocatable
    ready = {c.type: c.status for c in nodes["cpu-node"].status.conditions}
    assert ready["Ready"] == "True"


def test_three_replicas_become_available(cluster_api: client.ApiClient, ns: str) -> None:
    apps, core = client.AppsV1Api(cluster_api), client.CoreV1Api(cluster_api)
    apps.create_namespaced_deployment(
        ns, deployment("web", replicas=3, requests={"cpu": "1", "memory": "1Gi"})
    )
    done = wait_until(
        lambda: apps.read_namespaced_deployment("web", ns),
        lambda d: d.status.available_replicas == 3,
    )
    assert (done.status.replicas, done.status.ready_replicas, done.status.updated_replicas) == (
        3,
        3,
        3,
    )
    assert done.status.observed_generation == done.metadata.generation
    available = {c.type: c.status for c in done.status.conditions}
    assert available["Available"] == "True"
    pods = pods_of(core, ns, "web")
    assert len(pods) == 3
    assert all(p.status.phase == "Running" and p.spec.node_name for p in pods)
    assert all({c.type: c.status for c in p.status.conditions}["Ready"] == "True" for p in pods)
    assert len({p.status.pod_ip for p in pods}) == 3


def test_requests_that_fit_no_node_stay_pending_with_a_reason(
    cluster_api: client.ApiClient, ns: str
) -> None:
    apps, core = client.AppsV1Api(cluster_api), client.CoreV1Api(cluster_api)
    apps.create_namespaced_deployment(ns, deployment("huge", requests={"cpu": "16"}))
    (pod,) = wait_until(
        lambda: pods_of(core, ns, "huge"),
        lambda items: (
            len(items) == 1
            and any(c.type == "PodScheduled" for c in items[0].status.conditions or [])
        ),
    )
    assert pod.status.phase == "Pending"
    assert pod.spec.node_name is None
    (scheduled,) = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    assert scheduled.message == "0/2 nodes are available: 2 Insufficient cpu."
    events = wait_until(
        lambda: (
            core.list_namespaced_event(
                ns, field_selector=f"involvedObject.name={pod.metadata.name}"
            ).items
        ),
        lambda items: any(e.reason == "FailedScheduling" for e in items),
    )
    failed = next(e for e in events if e.reason == "FailedScheduling")
    assert failed.type == "Warning"
    assert failed.message == scheduled.message
    deployment_status = apps.read_namespaced_deployment("huge", ns).status
    assert not deployment_status.available_replicas
    assert deployment_status.unavailable_replicas == 1


def test_a_cordoned_node_takes_no_new_pods_until_uncordoned(
    cluster_api: client.ApiClient, ns: str
) -> None:
    apps, core = client.AppsV1Api(cluster_api), client.CoreV1Api(cluster_api)
    gpu_only = {"nodeSelector": {"kubernetes.io/hostname": "gpu-node"}}
    core.patch_node("gpu-node", {"spec": {"unschedulable": True}})
    try:
        apps.create_namespaced_deployment(ns, deployment("cordoned", **gpu_only))
        (pod,) = wait_until(
            lambda: pods_of(core, ns, "cordoned"),
            lambda items: (
                len(items) == 1
                and any(c.type == "PodScheduled" for c in items[0].status.conditions or [])
            ),
        )
        assert pod.spec.node_name is None
        (scheduled,) = [c for c in pod.status.conditions if c.type == "PodScheduled"]
        assert "1 node(s) were unschedulable" in scheduled.message
    finally:
        core.patch_node("gpu-node", {"spec": {"unschedulable": False}})
    (placed,) = wait_until(
        lambda: pods_of(core, ns, "cordoned"),
        lambda items: len(items) == 1 and items[0].spec.node_name == "gpu-node",
    )
    assert placed.spec.node_name == "gpu-node"


def test_gpu_pods_land_only_on_a_node_with_that_model(
    cluster_api: client.ApiClient, ns: str
) -> None:
    apps, core = client.AppsV1Api(cluster_api), client.CoreV1Api(cluster_api)
    apps.create_namespaced_deployment(
        ns,
        deployment(
            "trainer",
            replicas=2,
            requests={"cpu": "1", "nvidia.com/gpu": "1"},
            affinity=gpu_affinity("a100"),
        ),
    )
    apps.create_namespaced_deployment(
        ns,
        deployment(
            "wrong-model",
            requests={"cpu": "1", "nvidia.com/gpu": "1"},
            affinity=gpu_affinity("h100"),
        ),
    )
    apps.create_namespaced_deployment(
        ns, deployment("greedy", requests={"cpu": "1", "nvidia.com/gpu": "8"})
    )
    placed = wait_until(
        lambda: pods_of(core, ns, "trainer"),
        lambda items: len(items) == 2 and all(p.status.phase == "Running" for p in items),
    )
    assert {p.spec.node_name for p in placed} == {"gpu-node"}

    (wrong,) = wait_until(
        lambda: pods_of(core, ns, "wrong-model"),
        lambda items: len(items) == 1 and bool(items[0].status.conditions),
    )
    assert wrong.spec.node_name is None
    (reason,) = [c for c in wrong.status.conditions if c.type == "PodScheduled"]
    assert reason.message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )
    (greedy,) = wait_until(
        lambda: pods_of(core, ns, "greedy"),
        lambda items: len(items) == 1 and bool(items[0].status.conditions),
    )
    assert greedy.spec.node_name is None
    (reason,) = [c for c in greedy.status.conditions if c.type == "PodScheduled"]
    assert reason.message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def test_rollout_scale_down_and_garbage_collection(cluster_api: client.ApiClient, ns: str) -> None:
    apps, core = client.AppsV1Api(cluster_api), client.CoreV1Api(cluster_api)
    apps.create_namespaced_deployment(ns, deployment("app", replicas=2))
    wait_until(
        lambda: apps.read_namespaced_deployment("app", ns),
        lambda d: d.status.available_replicas == 2,
    )
    (first,) = apps.list_namespaced_replica_set(ns).items

    apps.patch_namespaced_deployment(
        "app",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}},
    )
    rolled = wait_until(
        lambda: apps.read_namespaced_deployment("app", ns),
        lambda d: (
            d.status.observed_generation == 2
            and d.status.updated_replicas == 2
            and d.status.available_replicas == 2
            and d.status.replicas == 2
        ),
    )
    assert rolled.metadata.generation == 2
    sets = {rs.metadata.name: rs for rs in apps.list_namespaced_replica_set(ns).items}
    assert len(sets) == 2
    assert sets[first.metadata.name].spec.replicas == 0
    wait_until(
        lambda: pods_of(core, ns, "app"),
        lambda items: (
            len(items) == 2 and {p.spec.containers[0].image for p in items} == {"nginx:1.28"}
        ),
    )

    apps.patch_namespaced_deployment("app", ns, {"spec": {"replicas": 1}})
    wait_until(
        lambda: apps.read_namespaced_deployment("app", ns),
        lambda d: d.status.replicas == 1 and d.status.available_replicas == 1,
    )
    assert len(pods_of(core, ns, "app")) == 1

    apps.delete_namespaced_deployment("app", ns)
    wait_until(
        lambda: (apps.list_namespaced_replica_set(ns).items, pods_of(core, ns, "app")),
        lambda found: found == ([], []),
    )


def test_statefulset_pods_come_up_in_order_with_bound_claims(
    cluster_api: client.ApiClient, ns: str
) -> None:
    apps, core = client.AppsV1Api(cluster_api), client.CoreV1Api(cluster_api)
    body = deployment("db", replicas=3)
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = "db"
    body["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "beta3",
                "resources": {"requests": {"storage": "10Gi"}},
            },
        }
    ]
    apps.create_namespaced_stateful_set(ns, body)
    done = wait_until(
        lambda: apps.read_namespaced_stateful_set("db", ns),
        lambda s: s.status.ready_replicas == 3,
    )
    assert done.status.current_replicas == 3
    pods = {p.metadata.name: p for p in pods_of(core, ns, "db")}
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    started = [pods[f"db-{i}"].metadata.creation_timestamp for i in range(3)]
    assert started == sorted(started)
    claims = {c.metadata.name: c for c in core.list_namespaced_persistent_volume_claim(ns).items}
    assert sorted(claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert {c.status.phase for c in claims.values()} == {"Bound"}
    volume = core.read_persistent_volume(claims["data-db-0"].spec.volume_name)
    assert volume.spec.storage_class_name == "beta3"
    assert volume.spec.capacity["storage"] == "10Gi"


def test_pod_logs_and_exec(cluster_api: client.ApiClient, ns: str) -> None:
    apps, core = client.AppsV1Api(cluster_api), client.CoreV1Api(cluster_api)
    apps.create_namespaced_deployment(ns, deployment("talker", image="busybox:1.36"))
    (pod,) = wait_until(
        lambda: pods_of(core, ns, "talker"),
        lambda items: len(items) == 1 and items[0].status.phase == "Running",
    )
    name = pod.metadata.name
    text = wait_until(
        lambda: core.read_namespaced_pod_log(name, ns),
        lambda out: out.count("\n") >= 2,
    )
    lines = text.splitlines()
    assert lines[0] == "kubesim: container app started (image busybox:1.36)"
    assert lines[1].startswith(f"kubesim: {name}/app running, tick 1")
    assert core.read_namespaced_pod_log(name, ns, tail_lines=1).count("\n") == 1
    stamped = core.read_namespaced_pod_log(name, ns, timestamps=True).splitlines()[0]
    assert stamped.split(" ", 1)[1] == lines[0]
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod_log(name, ns, container="nope")
    assert missing.value.status == 400
    assert "container nope is not valid" in json.loads(missing.value.body)["message"]

    ws = stream(
        core.connect_get_namespaced_pod_exec,
        name,
        ns,
        command=["sh", "-c", "echo hi"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    ws.run_forever(timeout=20)
    assert ws.read_stdout() == "hi\n"  # run in kubesim's exec sandbox (kubesim.execs)
    assert ws.returncode == 0
    ws.sock.shutdown()  # websocket-client leaves the socket open once the server closed


def test_a_container_without_an_image_is_refused_with_422(
    cluster_api: client.ApiClient, ns: str
) -> None:
    apps = client.AppsV1Api(cluster_api)
    body = deployment("broken")
    del body["spec"]["template"]["spec"]["containers"][0]["image"]
    with pytest.raises(ApiException) as refused:
        apps.create_namespaced_deployment(ns, body)
    assert refused.value.status == 422
    status = json.loads(refused.value.body)
    assert status["kind"] == "Status"
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "Deployment"
    assert status["details"]["name"] == "broken"
    fields = [cause["field"] for cause in status["details"]["causes"]]
    assert "spec.template.spec.containers[0].image" in fields
    assert "spec.template.spec.containers[0].image" in status["message"]
    assert apps.list_namespaced_deployment(ns).items == []  # nothing was stored


def test_cluster_file_errors_name_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "nodes.yaml"
    bad.write_text("nodes:\n  - name: n1\n    cpu: lots\n")
    with pytest.raises(ValueError, match=r"nodes\.yaml: nodes\.0\.cpu: .*lots"):
        ClusterSpec.load(bad)
    bad.write_text("nodes:\n  - name: n1\n  - name: n1\n")
    with pytest.raises(ValueError, match="node names must be unique"):
        ClusterSpec.load(bad)
    with pytest.raises(ValueError, match="cannot read nodes file"):
        ClusterSpec.load(tmp_path / "missing.yaml")
