"""Onboarding against a real kubesim process: the admin's kubeconfig sets the cluster up
(CRDs, namespaces, the kubeconfig sealed) and a second run changes nothing; a user who may
only read nodes is told what is missing and nothing changes; a server that is too old,
gone, or refuses the token is said to be so. The permissions asked about come from the
provider's RBAC, and the packaged copy of it is ``k8s/rbac.yaml``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from akcluster.domain.objects.custom import crds
from akkube.client import api_client
from akoperators.domain.onboard import (
    ONBOARDING_NEEDS,
    Permission,
    required_permissions,
    server_version,
    summarize_node,
)
from akoperators.onboard import check, onboard, provider_rbac
from akoperators.testing import OperatorProcess
from akservice.secrets import Vault, VaultError
from akservice.testing import free_port, http_status
from kubesim.authz import User, Users
from kubesim.cluster import ClusterSpec
from kubesim.testing import KubeSimProcess, ThreadedKubeSim

ROOT = Path(__file__).parents[3]
AKASH_CRDS = {
    "manifests.akash.network",
    "providerhosts.akash.network",
    "providerleasedips.akash.network",
}
NODES = ClusterSpec.model_validate(
    {
        "nodes": [
            {
                "name": "cpu-a",
                "cpu": "16",
                "memory": "64Gi",
                "storage-classes": ["beta2", "beta3"],
                "akash-labels": False,  # a cluster the provider has never run on
            },
            {
                "name": "gpu-a",
                "cpu": "32",
                "memory": "256Gi",
                "storage-classes": ["beta3"],
                "akash-labels": False,
                "gpus": {
                    "vendor": "nvidia",
                    "model": "a100",
                    "count": 4,
                    "memory": "80Gi",
                    "interface": "sxm",
                },
            },
        ]
    }
)
LIMITED = "limited-token"


@pytest.fixture
def kubesim(tmp_path: Path) -> Iterator[KubeSimProcess]:
    users = Users({LIMITED: User("limited")})
    folder = tmp_path / "kubesim"
    folder.mkdir()
    with KubeSimProcess(folder, NODES, users=users) as process:
        yield process


@pytest.fixture
def admin(kubesim: KubeSimProcess) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(str(kubesim.kubeconfig))
    yield api
    api.close()


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(tmp_path / "home" / ".akash-provider" / "secret.key")


def state(admin: client.ApiClient) -> dict[str, Any]:
    """What onboarding may change, as the admin sees it."""
    ext, core = client.ApiextensionsV1Api(admin), client.CoreV1Api(admin)
    return {
        "crds": {
            c.metadata.name: c.metadata.resource_version
            for c in ext.list_custom_resource_definition().items
        },
        "namespaces": {
            n.metadata.name: n.metadata.resource_version for n in core.list_namespace().items
        },
        "nodes": {n.metadata.name: n.metadata.labels for n in core.list_node().items},
    }


def test_the_packaged_rbac_is_k8s_rbac() -> None:
    shipped = [d for d in yaml.safe_load_all((ROOT / "k8s" / "rbac.yaml").read_text()) if d]
    assert provider_rbac() == shipped, (
        "services/operators/src/akoperators/data/rbac.yaml must be a copy of k8s/rbac.yaml"
    )


def test_the_permissions_checked_are_the_rbacs_rules() -> None:
    wanted = required_permissions(provider_rbac(), ())
    named = {str(p) for p in wanted}
    # one of each kind of rule: a cluster service's write, a subresource, an operator's
    assert "create apps/deployments" in named
    assert "create core/pods/exec" in named
    assert "patch core/nodes" in named  # the inventory operator labels nodes
    assert "patch akash.network/providerhosts/status" in named
    assert len(named) == len(wanted)  # each once
    role = {
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "lease"},
        "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["a"]}
        ],
    }
    both = required_permissions([role], ONBOARDING_NEEDS[:1])
    assert [str(p) for p in both] == [
        "get core/secrets a in lease",
        "get apiextensions.k8s.io/customresourcedefinitions",
    ]
    assert both[0] == Permission("get", "", "secrets", "lease", "a")


def test_versions_and_nodes_read_as_the_report_shows_them() -> None:
    assert server_version({"major": "1", "minor": "27+"}) == (1, 27)
    assert server_version({"major": "", "minor": "", "gitVersion": "v1.30.2-gke.1"}) == (1, 30)
    node = {
        "metadata": {"name": "g", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100"}},
        "spec": {"unschedulable": True},
        "status": {
            "allocatable": {"cpu": "7500m", "memory": "30Gi", "nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    summary = summarize_node(node)
    assert (summary.state, summary.cpu, summary.memory) == ("ready, cordoned", "7500m", "30Gi")
    assert [str(g) for g in summary.gpus] == ["8× nvidia NVIDIA-H100"]
    bare = summarize_node({"metadata": {"name": "b"}, "status": {"conditions": []}})
    assert (bare.state, bare.gpus) == ("not ready", ())


async def test_onboarding_sets_up_the_cluster_and_a_second_run_changes_nothing(
    kubesim: KubeSimProcess, admin: client.ApiClient, vault: Vault
) -> None:
    before = state(admin)
    report = await onboard(kubesim.kubeconfig, crds(), vault=vault)
    text = report.render()
    assert report.complete, text
    assert report.missing == []
    assert report.checked == len(required_permissions(provider_rbac())) > 100
    assert report.user == "kubernetes-admin"
    assert report.crds == dict.fromkeys(sorted(AKASH_CRDS), "created")
    assert report.namespaces == {"akash-services": "created", "lease": "created"}
    listed = client.ApiextensionsV1Api(admin).list_custom_resource_definition().items
    established = {
        c.metadata.name
        for c in listed
        if any(x.type == "Established" and x.status == "True" for x in c.status.conditions)
    }
    assert established >= AKASH_CRDS
    names = {n.metadata.name for n in client.CoreV1Api(admin).list_namespace().items}
    assert {"akash-services", "lease"} <= names
    assert "Nodes (2):" in text
    assert "gpu-a: ready; cpu 32, memory 256Gi; 4× nvidia a100" in text
    assert "cpu-a: ready; cpu 16, memory 64Gi; no GPU" in text
    assert "Storage classes: beta2, beta3" in text
    assert "no IngressClass akash-ingress-class" in text
    assert "MetalLB is not installed" in text
    assert text.endswith("Ready: the cluster has what the provider needs.")
    assert vault.open("kubeconfig") == kubesim.kubeconfig.read_bytes()
    assert f"Sealed: {vault.root / 'kubeconfig.sealed'}" in text
    # the nodes carry the labels the inventory operator's discovery gives them
    labels = state(admin)["nodes"]
    gpu = "akash.network/capabilities.gpu.vendor.nvidia.model.a100"
    assert labels["gpu-a"]["akash.network"] == labels["cpu-a"]["akash.network"] == "true"
    assert labels["gpu-a"][gpu] == labels["gpu-a"][f"{gpu}.ram.80Gi"] == "4"
    assert labels["gpu-a"][f"{gpu}.interface.sxm"] == "4"
    assert not any(k.startswith("akash.network") for k in before["nodes"]["gpu-a"])
    assert report.labels == {"cpu-a": "labelled", "gpu-a": "labelled"}

    after = state(admin)
    again = await onboard(kubesim.kubeconfig, crds(), vault=vault)
    assert again.complete and not again.changed
    assert again.crds == dict.fromkeys(sorted(AKASH_CRDS), "unchanged")
    assert again.namespaces == {"akash-services": "unchanged", "lease": "unchanged"}
    assert again.labels == {"cpu-a": "unchanged", "gpu-a": "unchanged"}
    assert state(admin) == after

    checked = await check(kubesim.kubeconfig, crds())
    assert checked.complete, checked.render()
    assert checked.crds == dict.fromkeys(sorted(AKASH_CRDS), "installed")
    assert state(admin) == after


async def test_check_finds_what_onboarding_would_do_and_onboarding_upgrades_a_crd(
    kubesim: KubeSimProcess, admin: client.ApiClient
) -> None:
    fresh = await check(kubesim.kubeconfig, crds())
    assert not fresh.complete
    assert "CRD manifests.akash.network is not installed" in fresh.problems
    assert "namespace akash-services is missing" in fresh.problems
    assert fresh.render().endswith("(akash-provider cluster onboard sets up what it can).")
    assert state(admin)["crds"] == {}  # a check writes nothing
    await onboard(kubesim.kubeconfig, crds())
    ext = client.ApiextensionsV1Api(admin)
    ext.patch_custom_resource_definition(
        "manifests.akash.network", {"spec": {"names": {"shortNames": ["mf"]}}}
    )
    stale = await check(kubesim.kubeconfig, crds())
    assert stale.problems == ["CRD manifests.akash.network is out of date"]
    upgraded = await onboard(kubesim.kubeconfig, crds())
    assert upgraded.crds["manifests.akash.network"] == "updated"
    assert upgraded.crds["providerhosts.akash.network"] == "unchanged"
    names = ext.read_custom_resource_definition("manifests.akash.network").spec.names
    assert names.short_names == ["mani"]
    assert (await check(kubesim.kubeconfig, crds())).complete


async def test_a_user_who_may_only_read_nodes_is_told_what_is_missing_and_nothing_changes(
    kubesim: KubeSimProcess, admin: client.ApiClient, vault: Vault
) -> None:
    rbac = client.RbacAuthorizationV1Api(admin)
    rbac.create_cluster_role(
        {
            "metadata": {"name": "node-reader"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
        }
    )
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": "limited-node-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "node-reader",
            },
            "subjects": [{"kind": "User", "name": "limited"}],
        }
    )
    before = state(admin)
    limited = kubesim.kubeconfig_for(LIMITED)
    report = await onboard(limited, crds(), vault=vault)
    text = report.render()
    assert not report.complete
    assert report.user == "limited"
    missing = {str(p) for p in report.missing}
    assert {
        "create apiextensions.k8s.io/customresourcedefinitions",
        "create core/namespaces",
        "create apps/deployments",
        "patch core/nodes",
        "create core/pods/exec",
    } <= missing
    assert "list core/nodes" not in missing and "get core/nodes" not in missing
    assert len(missing) == report.checked - 2  # all but get and list nodes
    assert "  ✗ create core/namespaces  (akash-provider-cluster)" in text
    assert "Nodes (2):" in text  # what it may read, it reports
    assert "cannot read storage classes: 403" in text
    assert text.endswith("run this again.") and "nothing was changed" in text
    assert report.crds == {} and report.namespaces == {} and not report.sealed
    assert state(admin) == before  # no CRD, no namespace, no label
    assert not set(state(admin)["crds"]) & AKASH_CRDS
    with pytest.raises(VaultError, match="nothing is sealed"):
        vault.open("kubeconfig")


async def test_a_server_that_is_too_old_gone_or_refusing_the_token(tmp_path: Path) -> None:
    with ThreadedKubeSim(kube_version="1.26") as old:
        report = await onboard(old.write_kubeconfig(tmp_path / "old"), crds())
        assert report.problems == ["Kubernetes 1.26 is too old: the provider needs 1.27 or newer"]
        assert report.checked == 0  # nothing asked beyond that
        assert (
            old.call(
                lambda: old.running.store.items(
                    ("apiextensions.k8s.io", "customresourcedefinitions")
                )
            )
            == []
        )
    gone = tmp_path / "gone"
    gone.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    report = await check(gone, crds())
    assert not report.complete
    assert report.problems[0].startswith("the API server does not answer")
    with ThreadedKubeSim(users=Users({})) as sim:
        refused = await check(sim.write_kubeconfig(tmp_path / "bad", token="wrong"), crds())
        assert refused.problems == ["the API server refused the kubeconfig's credentials (401)"]


async def test_services_and_operators_use_the_sealed_kubeconfig(
    kubesim: KubeSimProcess, admin: client.ApiClient, vault: Vault, redis_url: str, tmp_path: Path
) -> None:
    report = await onboard(kubesim.kubeconfig, crds(), vault=vault)
    assert report.complete, report.render()
    sealed = vault.root / "kubeconfig.sealed"
    assert b"kubesim" not in sealed.read_bytes()  # the token is not there in the clear
    # the cluster service's and the gateway's client (akkube's), opened in memory
    made = api_client(sealed)
    try:
        names = {n.metadata.name for n in client.CoreV1Api(made).list_node().items}
    finally:
        made.close()
    assert names == {"cpu-a", "gpu-a"}
    # an operator (kopf's login and the operator's own client) on the sealed kubeconfig
    operator = OperatorProcess(
        "ip",
        redis_url=redis_url,
        log_path=tmp_path / "ip.log",
        kubeconfig=sealed,
        env={"AP_IP_POOL": "203.0.113.10", "AP_LEADER_ELECTION_NAMESPACE": "akash-services"},
    )
    with operator:  # ready: kopf logged in and watches
        status, body = http_status(f"{operator.health_url}/v1/pool")
        assert (status, body["capacity"]) == (200, 1)  # type: ignore[index]
        # it leads on its Lease in the provider's namespace, which the shipped Role allows
        lease = client.CoordinationV1Api(admin).read_namespaced_lease(
            "akash-provider-ip-operator", "akash-services"
        )
        assert lease.spec.holder_identity == operator.readiness()[1]["identity"]  # type: ignore[index]
    # a wrong key file: the service says so in one line and stops
    vault.key_file.write_bytes(os.urandom(32))
    failing = OperatorProcess(
        "hostname", redis_url=redis_url, log_path=tmp_path / "h.log", kubeconfig=sealed
    )
    with pytest.raises(RuntimeError, match="exited with 1"):
        failing.start()
    assert "wrong key file" in failing.log() and "Traceback" not in failing.log()
