"""``k8s/``: valid for Kubernetes 1.32 (strict, offline), and ``kubectl apply -k`` on kubesim
brings up the CRDs and schedules every Deployment's and StatefulSet's pods."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from akbus.testing import eventually_sync
from akcluster.domain.objects.custom import crds
from kubesim.testing import KubeSimProcess

ROOT = Path(__file__).parents[1]
K8S = ROOT / "k8s"
SERVICES = {"relay", "cluster", "bidengine", "manifest", "balance", "gateway"}
OPERATORS = {"inventory-operator", "hostname-operator", "ip-operator"}


def kubectl(*args: str, kubeconfig: Path | None = None, stdin: str | None = None) -> str:
    command = ["kubectl", *(["--kubeconfig", str(kubeconfig)] if kubeconfig else []), *args]
    done = subprocess.run(
        command, check=False, input=stdin, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}"
    return done.stdout


def rendered() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(kubectl("kustomize", str(K8S))) if doc]


def test_every_object_is_valid_for_kubernetes_1_32_strictly() -> None:
    objects = rendered()
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert {("Deployment", name) for name in SERVICES | OPERATORS} <= kinds
    assert ("StatefulSet", "redis") in kinds
    for obj in objects:
        kubernetes_validate.validate(obj, "1.32", strict=True)


def test_the_crds_are_the_cluster_services_own() -> None:
    shipped = {
        o["metadata"]["name"]: o for o in rendered() if o["kind"] == "CustomResourceDefinition"
    }
    assert shipped == {c["metadata"]["name"]: c for c in crds()}


def test_only_the_cluster_and_the_operators_write_to_kubernetes_every_pod_locked_down() -> None:
    objects = rendered()
    deployments = {
        o["metadata"]["name"]: o for o in objects if o["kind"] in ("Deployment", "StatefulSet")
    }
    for name, obj in deployments.items():
        pod = obj["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True and context["capabilities"] == {
                "drop": ["ALL"]
            }, name
            assert container["resources"]["requests"] and container["readinessProbe"], name
        mounts_token = pod.get("automountServiceAccountToken", True)
        assert mounts_token == (name in {"cluster", "gateway"} | OPERATORS), name
    bindings = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRoleBinding"}
    subjects = sorted(s["name"] for b in bindings.values() for s in b["subjects"])
    assert subjects == sorted(["cluster", "gateway", *OPERATORS])
    roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}

    def written(role: str) -> set[str]:
        return {
            resource
            for rule in roles[f"akash-provider-{role}"]["rules"]
            if {"create", "delete"} & set(rule["verbs"])
            for resource in rule["resources"]
        }

    # each operator creates and deletes only what it makes (events aside)
    assert written("inventory-operator") == {"events"}
    assert written("hostname-operator") == {"ingresses", "httproutes", "events"}
    assert written("ip-operator") == {"services", "events"}
    gateway = next(
        o
        for o in objects
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "akash-provider-gateway"
    )
    writes = {v for rule in gateway["rules"] for v in rule["verbs"]} - {"get", "list", "watch"}
    assert writes == {"create"}  # pods/exec only
    assert [r["resources"] for r in gateway["rules"] if "create" in r["verbs"]] == [["pods/exec"]]


@pytest.fixture
def kubesim(tmp_path: Path) -> Any:
    with KubeSimProcess(tmp_path / "kubesim") as process:
        yield process


def test_kubectl_apply_k_on_kubesim_establishes_the_crds_and_schedules_the_pods(
    kubesim: Any,
) -> None:
    config = kubesim.kubeconfig  # kubesim serves no OpenAPI document: it validates itself
    # a cluster has a default storage class (Redis's volume asks for it)
    kubectl(
        "annotate",
        "sc",
        "beta2",
        "storageclass.kubernetes.io/is-default-class=true",
        kubeconfig=config,
    )
    kubectl("apply", "--validate=false", "-f", str(K8S / "namespace.yaml"), kubeconfig=config)
    for secret in (  # what an operator creates first (docs/deploy.md)
        ["akash-provider-key", "--from-literal=key.json={}", "--from-literal=passphrase=x"],
        ["akash-provider-tls", "--from-literal=provider.pem=x"],
        ["akash-provider-dashboard", "--from-literal=token=t"],
    ):
        made = kubectl(
            "create",
            "secret",
            "generic",
            "-n",
            "akash-services",
            *secret,
            "--dry-run=client",
            "-o",
            "yaml",
        )
        kubectl("apply", "--validate=false", "-f", "-", kubeconfig=config, stdin=made)
    kubectl("apply", "--validate=false", "-k", str(K8S), kubeconfig=config)
    kubectl(
        "apply", "--validate=false", "-k", str(K8S), kubeconfig=config
    )  # again: nothing to change, no error

    crd_list = json.loads(kubectl("get", "crd", "-o", "json", kubeconfig=config))["items"]
    established = {
        c["metadata"]["name"]
        for c in crd_list
        if any(
            x["type"] == "Established" and x["status"] == "True"
            for x in c.get("status", {}).get("conditions", [])
        )
    }
    assert established >= {
        "manifests.akash.network",
        "providerhosts.akash.network",
        "providerleasedips.akash.network",
    }

    expected = dict.fromkeys(SERVICES | OPERATORS, 2) | {"redis": 1}

    def scheduled() -> dict[str, int]:
        listed = kubectl("get", "pods", "-n", "akash-services", "-o", "json", kubeconfig=config)
        apps = [
            pod["metadata"]["labels"]["app.kubernetes.io/name"]
            for pod in json.loads(listed)["items"]
            if pod["spec"].get("nodeName")
        ]
        return {app: apps.count(app) for app in set(apps)}

    eventually_sync(scheduled, 60, "every pod scheduled", until=lambda found: found == expected)
