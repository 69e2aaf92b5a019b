"""What pods take as the scheduler counts it, and what claims use."""

from __future__ import annotations

from typing import Any

from akkube.pods import claim_of, is_default_class, pod_requests, pod_use

Obj = dict[str, Any]
GiB = 2**30


def pod(on: str | None, *containers: Obj, phase: str = "Running", **spec: Any) -> Obj:
    return {
        "metadata": {"name": "p", "namespace": "n", "uid": f"uid-{id(containers)}"},
        "spec": {"nodeName": on, "containers": list(containers), **spec},
        "status": {"phase": phase},
    }


def box(cpu: str = "0", memory: str = "0", **more: Any) -> Obj:
    return {
        "name": "c",
        "image": "x",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
        **more,
    }


def test_a_pod_takes_its_init_peak_sidecars_and_memory_volumes() -> None:
    spec = pod(
        "n1",
        box("1", "1Gi"),
        box("500m", "1Gi"),
        initContainers=[
            box("4", "1Gi"),  # alone (with the sidecar before it)
            box("250m", "512Mi", restartPolicy="Always"),  # a sidecar: throughout
        ],
        volumes=[{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}],
    )
    used = pod_requests(spec)
    assert used.cpu == max(1500 + 250, 4000)
    assert used.memory == max(2 * GiB + 512 * 2**20, GiB) + 2 * GiB


def test_limits_stand_in_for_missing_requests_and_gpus_count() -> None:
    container = {
        "name": "c",
        "image": "x",
        "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "1"}},
    }
    used = pod_requests(pod("n1", container))
    assert (used.cpu, used.gpu) == (1000, 2)


def test_overhead_comes_on_top_and_a_disk_empty_dir_takes_nothing() -> None:
    spec = pod(
        "n1",
        box("1", "1Gi"),
        overhead={"cpu": "250m", "memory": "128Mi"},
        volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "5Gi"}}],
    )
    used = pod_requests(spec)
    assert (used.cpu, used.memory, used.ephemeral) == (1250, GiB + 128 * 2**20, 0)


def test_only_bound_unfinished_pods_take_resources() -> None:
    assert pod_use(pod("n1", box("1"))) is not None
    assert pod_use(pod(None, box("1"))) is None
    assert pod_use(pod("n1", box("1"), phase="Succeeded")) is None
    assert pod_use(pod("n1", box("1"), phase="Failed")) is None


def test_a_claim_uses_the_larger_of_its_request_and_what_it_was_given() -> None:
    asked = {"spec": {"storageClassName": "beta3", "resources": {"requests": {"storage": "1Gi"}}}}
    given = asked | {"status": {"capacity": {"storage": "2Gi"}}}
    assert claim_of(asked) == ("beta3", GiB)
    assert claim_of(given) == ("beta3", 2 * GiB)
    assert claim_of({"spec": {}}) == (None, 0)  # no class named: the default class's


def test_the_default_storage_class_is_the_annotated_one() -> None:
    annotation = "storageclass.kubernetes.io/is-default-class"
    assert is_default_class({"metadata": {"annotations": {annotation: "true"}}})
    assert not is_default_class({"metadata": {"annotations": {annotation: "false"}}})
    assert not is_default_class({"metadata": {}})
