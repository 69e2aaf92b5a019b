"""Users and RBAC: tokens, the real server's 401/403 answers, roles and bindings of every
kind, the access reviews (through the official client and through kubectl over https)."""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kubesim.authz import Attributes, User, Users, rule_allows
from kubesim.testing import KubeSimProcess, ThreadedKubeSim

USERS = Users(
    {
        "alice-token": User("alice", ("viewers",)),
        "bob-token": User("bob"),
        "sa-token": User("system:serviceaccount:apps:builder"),
    }
)
RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[ThreadedKubeSim, Callable[[str], client.ApiClient]]]:
    """A simulator with users, and a client for a token (closed at the end)."""
    made: list[client.ApiClient] = []
    with ThreadedKubeSim(users=USERS) as sim:

        def as_user(token: str) -> client.ApiClient:
            path = sim.write_kubeconfig(tmp_path / f"kubeconfig-{token}", token=token)
            made.append(config.new_client_from_config(str(path)))
            return made[-1]

        yield sim, as_user
    for api in made:
        api.close()


def status_of(call: Callable[[], Any]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as caught:
        call()
    return int(caught.value.status), json.loads(caught.value.body)


def grant(admin: client.ApiClient, name: str, rules: list[dict[str, Any]], **binding: Any) -> None:
    """A ClusterRole ``name`` and a binding of it (ClusterRoleBinding unless a namespace)."""
    rbac = client.RbacAuthorizationV1Api(admin)
    rbac.create_cluster_role({"metadata": {"name": name}, "rules": rules})
    body = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": binding.get("kind", "ClusterRole"), "name": name},
        "subjects": binding["subjects"],
    }
    if "namespace" in binding:
        rbac.create_namespaced_role_binding(binding["namespace"], body)
    else:
        rbac.create_cluster_role_binding(body)


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/nodes", {}, ("list", "", "nodes", "", "", "")),
        ("GET", "/api/v1/nodes", {"watch": "true"}, ("watch", "", "nodes", "", "", "")),
        ("GET", "/api/v1/nodes/a", {}, ("get", "", "nodes", "", "", "a")),
        ("PATCH", "/api/v1/nodes/a/status", {}, ("patch", "", "nodes", "status", "", "a")),
        ("GET", "/api/v1/namespaces/x", {}, ("get", "", "namespaces", "", "x", "x")),
        (
            "PUT",
            "/api/v1/namespaces/x/finalize",
            {},
            ("update", "", "namespaces", "finalize", "x", "x"),
        ),
        ("GET", "/api/v1/namespaces/x/pods/p/log", {}, ("get", "", "pods", "log", "x", "p")),
        (
            "POST",
            "/apis/apps/v1/namespaces/x/deployments",
            {},
            ("create", "apps", "deployments", "", "x", ""),
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/x/deployments",
            {},
            ("deletecollection", "apps", "deployments", "", "x", ""),
        ),
        (
            "DELETE",
            "/apis/akash.network/v2beta2/namespaces/lease/manifests/m",
            {},
            ("delete", "akash.network", "manifests", "", "lease", "m"),
        ),
    ],
)
def test_requests_are_read_as_the_real_servers_request_info(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    attrs = Attributes.of_request(method, path, query)
    assert attrs.resource_request
    found = (
        attrs.verb,
        attrs.group,
        attrs.resource,
        attrs.subresource,
        attrs.namespace,
        attrs.name,
    )
    assert found == expected


@pytest.mark.parametrize("path", ["/version", "/api", "/apis/apps/v1", "/healthz"])
def test_discovery_and_probes_are_non_resource_requests(path: str) -> None:
    attrs = Attributes.of_request("GET", path, {})
    assert (attrs.resource_request, attrs.verb, attrs.path) == (False, "get", path)


@pytest.mark.parametrize(
    ("rule", "request_", "allowed"),
    [
        (
            {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes"]},
            ("delete", "", "nodes", ""),
            True,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]},
            ("list", "", "nodes", ""),
            False,
        ),
        (
            {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["nodes"]},
            ("get", "", "nodes", ""),
            False,
        ),
        (
            {"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]},
            ("get", "x.io", "things", ""),
            True,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            ("get", "", "pods", "log"),
            False,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]},
            ("get", "", "pods", "log"),
            True,
        ),
        (
            {"verbs": ["patch"], "apiGroups": [""], "resources": ["*/status"]},
            ("patch", "", "nodes", "status"),
            True,
        ),
        (
            {"verbs": ["patch"], "apiGroups": [""], "resources": ["*/status"]},
            ("patch", "", "nodes", ""),
            False,
        ),
    ],
)
def test_rules_match_verbs_groups_and_resources_as_rbac_does(
    rule: dict[str, Any], request_: tuple[str, str, str, str], allowed: bool
) -> None:
    verb, group, resource, sub = request_
    attrs = Attributes(verb=verb, group=group, resource=resource, subresource=sub, name="n")
    assert rule_allows(attrs, rule) is allowed


def test_resource_names_and_non_resource_urls() -> None:
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}
    assert rule_allows(Attributes("get", resource="secrets", name="a"), rule)
    assert not rule_allows(Attributes("get", resource="secrets", name="b"), rule)
    assert not rule_allows(Attributes("list", resource="secrets"), rule | {"verbs": ["list"]})
    urls = {"verbs": ["get"], "nonResourceURLs": ["/metrics", "/debug/*"]}
    assert rule_allows(Attributes("get", "/debug/pprof", resource_request=False), urls)
    assert rule_allows(Attributes("get", "/metrics", resource_request=False), urls)
    assert not rule_allows(Attributes("get", "/metricsz", resource_request=False), urls)
    assert not rule_allows(Attributes("post", "/metrics", resource_request=False), urls)


def test_without_users_every_request_is_served_as_before(raw_request: Any) -> None:
    send_raw = raw_request
    with ThreadedKubeSim() as sim:
        reply = send_raw(sim.url, "GET", "/api/v1/nodes")  # no token at all
        assert reply.status == 200
        review = {"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}}
        answer = send_raw(
            sim.url, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review
        )
        assert answer.status == 201 and answer.body["status"] == {"allowed": True}


def test_no_token_or_an_unknown_one_is_401_and_probes_stay_open(
    cluster: Any, raw_request: Any
) -> None:
    sim, as_user = cluster
    send_raw = raw_request
    reply = send_raw(sim.url, "GET", "/api/v1/nodes")
    assert reply.status == 401
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
    code, _ = status_of(lambda: client.CoreV1Api(as_user("nobody")).list_node())
    assert code == 401
    assert send_raw(sim.url, "GET", "/readyz").status == 200
    assert send_raw(sim.url, "GET", "/version").status == 200
    assert send_raw(sim.url, "GET", "/apis").status == 401  # discovery needs a user


def test_the_admin_token_may_do_anything(cluster: Any) -> None:
    _, as_user = cluster
    admin = as_user("kubesim")
    assert len(client.CoreV1Api(admin).list_node().items) == 2
    client.CoreV1Api(admin).create_namespace({"metadata": {"name": "apps"}})


def test_a_refusal_is_the_real_servers_403(cluster: Any) -> None:
    _, as_user = cluster
    alice = as_user("alice-token")
    code, body = status_of(lambda: client.CoreV1Api(alice).list_node())
    assert code == 403
    assert body["reason"] == "Forbidden" and body["details"] == {"kind": "nodes"}
    assert body["message"] == (
        'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" '
        "at the cluster scope"
    )
    code, body = status_of(
        lambda: client.AppsV1Api(alice).read_namespaced_deployment("web", "default")
    )
    assert code == 403
    assert body["details"] == {"kind": "deployments", "group": "apps", "name": "web"}
    assert body["message"] == (
        'deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" '
        'in API group "apps" in the namespace "default"'
    )


def test_a_cluster_role_bound_to_a_group_lets_its_members_in(cluster: Any) -> None:
    _, as_user = cluster
    admin, alice, bob = as_user("kubesim"), as_user("alice-token"), as_user("bob-token")
    rules = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]
    grant(admin, "node-reader", rules, subjects=[{"kind": "Group", "name": "viewers"}])
    assert len(client.CoreV1Api(alice).list_node().items) == 2
    assert client.CoreV1Api(alice).read_node("node-a").metadata.name == "node-a"
    code, _ = status_of(lambda: client.CoreV1Api(alice).patch_node("node-a", {}))
    assert code == 403  # only get and list
    code, _ = status_of(lambda: client.CoreV1Api(alice).patch_node_status("node-a", {}))
    assert code == 403  # nodes/status is not nodes
    code, _ = status_of(lambda: client.CoreV1Api(bob).list_node())
    assert code == 403  # not in the group


def test_a_role_binding_grants_in_its_namespace_only(cluster: Any) -> None:
    _, as_user = cluster
    admin, bob = as_user("kubesim"), as_user("bob-token")
    core = client.CoreV1Api(admin)
    for name in ("one", "two"):
        core.create_namespace({"metadata": {"name": name}})
    client.RbacAuthorizationV1Api(admin).create_namespaced_role(
        "one",
        {
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["list"]}],
        },
    )
    grant(
        admin,
        "pod-reader",
        [],
        kind="Role",
        namespace="one",
        subjects=[{"kind": "User", "name": "bob", "apiGroup": RBAC}],
    )
    assert client.CoreV1Api(bob).list_namespaced_pod("one").items == []
    code, body = status_of(lambda: client.CoreV1Api(bob).list_namespaced_pod("two"))
    assert code == 403 and 'in the namespace "two"' in body["message"]
    code, _ = status_of(lambda: client.CoreV1Api(bob).list_pod_for_all_namespaces())
    assert code == 403  # a RoleBinding never reaches the cluster scope


def test_a_service_account_subject_and_a_binding_to_a_missing_role(cluster: Any) -> None:
    _, as_user = cluster
    admin, builder = as_user("kubesim"), as_user("sa-token")
    client.CoreV1Api(admin).create_namespace({"metadata": {"name": "apps"}})
    rules = [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}]
    subject = {"kind": "ServiceAccount", "name": "builder", "namespace": "apps"}
    grant(admin, "deployer", rules, namespace="apps", subjects=[subject])
    assert client.AppsV1Api(builder).list_namespaced_deployment("apps").items == []
    client.RbacAuthorizationV1Api(admin).create_cluster_role_binding(
        {
            "metadata": {"name": "dangling"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "gone"},
            "subjects": [subject],
        }
    )
    code, body = status_of(lambda: client.CoreV1Api(builder).list_node())
    assert code == 403
    assert body["message"].endswith(
        'at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'
    )


def test_access_and_rules_reviews_answer_for_the_asker(cluster: Any) -> None:
    _, as_user = cluster
    admin, alice = as_user("kubesim"), as_user("alice-token")
    rules = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]
    grant(admin, "node-reader", rules, subjects=[{"kind": "Group", "name": "viewers"}])
    authz = client.AuthorizationV1Api(alice)

    def can(verb: str, resource: str, **more: str) -> Any:
        attributes = {"verb": verb, "resource": resource, **more}
        review = {"spec": {"resourceAttributes": attributes}}
        return authz.create_self_subject_access_review(review).status

    listed = can("list", "nodes")
    assert listed.allowed is True
    assert listed.reason == (
        'RBAC: allowed by ClusterRoleBinding "node-reader" of ClusterRole "node-reader" '
        'to Group "viewers"'
    )
    assert can("patch", "nodes").allowed is False
    assert can("create", "namespaces").allowed is False
    rules_review = authz.create_self_subject_rules_review({"spec": {"namespace": "default"}})
    resource_rules = [(r.verbs, r.resources) for r in rules_review.status.resource_rules]
    assert (["get", "list"], ["nodes"]) in resource_rules
    admin_review = client.AuthorizationV1Api(admin).create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}}
    )
    assert admin_review.status.allowed is True


def test_the_reviews_are_in_discovery_and_take_only_post(cluster: Any, raw_request: Any) -> None:
    sim, as_user = cluster
    send_raw = raw_request
    admin = as_user("kubesim")
    groups = {g.name for g in client.ApisApi(admin).get_api_versions().groups}
    assert {"authorization.k8s.io", "authentication.k8s.io"} <= groups
    code, listed = as_admin(sim.url, "GET", "/apis/authorization.k8s.io/v1")
    assert code == 200
    names = {r["name"]: r["verbs"] for r in listed["resources"]}
    assert names == {"selfsubjectaccessreviews": ["create"], "selfsubjectrulesreviews": ["create"]}
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    assert send_raw(sim.url, "GET", path).status == 401  # who asks comes first
    assert as_admin(sim.url, "GET", path)[0] == 405
    code, body = as_admin(sim.url, "POST", path, {"spec": {}})
    assert code == 422 and "exactly one of nonResourceAttributes" in body["message"]
    code, body = as_admin(
        sim.url, "POST", path, {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/x"}}}
    )
    assert code == 201 and body["status"]["allowed"] is True


def as_admin(url: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """A request with the admin's token, for what the official client would not send."""
    conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
    headers = {"Authorization": "Bearer kubesim", "Content-Type": "application/json"}
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_a_users_file_that_does_not_read_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "users.yaml"
    bad.write_text("users:\n  - {name: a, token: kubesim}\n")
    done = subprocess.run(
        [sys.executable, "-m", "kubesim", "serve", "--port", "0", "--users", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"kubesim: {bad}: users.0.token: 'kubesim' is the admin's token (kubernetes-admin)"
    ]
    bad.write_text("users:\n  - {name: a, token: t}\n  - {name: b, token: t}\n")
    with pytest.raises(ValueError, match="tokens must be unique"):
        Users.load(bad)
    bad.write_text("- a\n")
    with pytest.raises(ValueError, match='expected a mapping with a "users:" list'):
        Users.load(bad)
    bad.write_text("users:\n  - {name: a}\n")
    with pytest.raises(ValueError, match="users.0.token: Field required"):
        Users.load(bad)


NODE_READERS = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: node-reader}
rules: [{apiGroups: [""], resources: [nodes], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: viewers-read-nodes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects: [{kind: Group, name: viewers, apiGroup: rbac.authorization.k8s.io}]
"""


def kubectl(
    config_path: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    found = shutil.which("kubectl")
    assert found, "kubectl is needed on PATH for this test"
    return subprocess.run(
        [found, "--kubeconfig", str(config_path), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_kubectl_auth_can_i_and_whoami_over_https(tmp_path: Path) -> None:
    with KubeSimProcess(tmp_path, None, users=USERS, https=True) as server:
        assert server.url.startswith("https://")
        alice = server.kubeconfig_for("alice-token")
        admin = server.kubeconfig
        denied = kubectl(alice, "get", "nodes")
        assert denied.returncode == 1
        assert 'User "alice" cannot list resource "nodes"' in denied.stderr
        assert kubectl(alice, "auth", "can-i", "list", "nodes").stdout.strip() == "no"
        applied = kubectl(admin, "apply", "--validate=false", "-f", "-", stdin=NODE_READERS)
        assert applied.returncode == 0, applied.stderr
        can = kubectl(alice, "auth", "can-i", "list", "nodes")
        assert (can.returncode, can.stdout.strip()) == (0, "yes")
        cannot = kubectl(alice, "auth", "can-i", "create", "namespaces")
        assert (cannot.returncode, cannot.stdout.strip()) == (1, "no")
        listing = kubectl(alice, "auth", "can-i", "--list")
        assert any(line.split()[:1] == ["nodes"] for line in listing.stdout.splitlines())
        who = kubectl(alice, "auth", "whoami", "-o", "json")
        assert json.loads(who.stdout)["status"]["userInfo"] == {
            "username": "alice",
            "groups": ["viewers", "system:authenticated"],
        }
        assert kubectl(admin, "get", "nodes").returncode == 0
        unknown = kubectl(server.kubeconfig_for("wrong"), "get", "nodes")
        assert "Unauthorized" in unknown.stderr
