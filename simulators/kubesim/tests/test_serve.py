"""`python -m kubesim serve`: the server command, its kubeconfig, kubectl, and its errors."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client, config

from akservice.testing import eventually_sync, free_port
from kubesim import tables
from kubesim.testing import KubeSimProcess

EXAMPLE_NODES = Path(__file__).parents[1] / "examples" / "nodes.yaml"


def kubectl() -> str:
    found = shutil.which("kubectl")
    assert found, "kubectl is needed on PATH for this test (.ci/run installs it when missing)"
    return found


def serve(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesim", "serve", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def example_server(tmp_path: Path) -> KubeSimProcess:
    return KubeSimProcess(tmp_path, None, "--nodes", str(EXAMPLE_NODES))


def test_kubectl_gets_the_nodes_of_the_nodes_file(example_server: KubeSimProcess) -> None:
    with example_server as server:
        out = subprocess.run(
            [kubectl(), "--kubeconfig", str(server.kubeconfig), "get", "nodes", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        listing = json.loads(out.stdout)
        assert listing["kind"] == "List"
        nodes = {item["metadata"]["name"]: item for item in listing["items"]}
        assert sorted(nodes) == ["gpu-a", "node-a", "node-b"]
        assert nodes["gpu-a"]["status"]["allocatable"]["nvidia.com/gpu"] == "4"
        assert nodes["node-a"]["status"]["capacity"]["cpu"] == "16"
        assert (
            nodes["node-a"]["metadata"]["labels"]["akash.network/capabilities.storage.class.beta3"]
            == "1"
        )

        table = subprocess.run(
            [kubectl(), "--kubeconfig", str(server.kubeconfig), "get", "nodes"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert table.returncode == 0, table.stderr
        rows = table.stdout.splitlines()
        assert rows[0].split()[:2] == ["NAME", "STATUS"]
        assert sorted(row.split()[0] for row in rows[1:]) == ["gpu-a", "node-a", "node-b"]


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
"""


def test_kubectl_apply_and_the_tables_of_kubectl_get(
    example_server: KubeSimProcess, tmp_path: Path
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT)

    def run(*args: str) -> str:
        cmd = [kubectl(), "--kubeconfig", str(server.kubeconfig), *args]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        return out.stdout

    with example_server as server:
        # kubesim serves no OpenAPI documents, so kubectl's client-side validation is off;
        # the server still decodes and validates what it is sent (fieldValidation=Ignore)
        assert run("apply", "--validate=false", "-f", str(manifest)).strip() == (
            "deployment.apps/web created"
        )
        deploy = eventually_sync(
            lambda: run("get", "deployment", "web"), 20, "2/2 ready", until=lambda out: "2/2" in out
        )
        header, row = deploy.splitlines()
        assert header.split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
        assert row.split()[:4] == ["web", "2/2", "2", "2"]
        pods = run("get", "pods", "-o", "wide").splitlines()
        assert pods[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
        assert [row.split()[1:3] for row in pods[1:]] == [["1/1", "Running"]] * 2
        assert {row.split()[6] for row in pods[1:]} <= {"gpu-a", "node-a", "node-b"}
        assert run("get", "pods", "--no-headers", "-l", "app=nothing") == ""
        names = run("get", "namespaces", "-o", "name").split()
        assert "namespace/default" in names


def test_kubectl_apply_drops_unknown_fields_as_a_real_server_does(
    example_server: KubeSimProcess, tmp_path: Path
) -> None:
    """`--validate=false` sends fieldValidation=Ignore: the typo is dropped, never stored."""
    manifest = tmp_path / "typo.yaml"
    manifest.write_text(DEPLOYMENT.replace("replicas: 2", "replicas: 2\n  replicaz: 3"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [kubectl(), "--kubeconfig", str(server.kubeconfig), *args]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        return out

    with example_server as server:
        applied = run("apply", "--validate=false", "-f", str(manifest))
        assert applied.stdout.strip() == "deployment.apps/web created"
        stored = json.loads(run("get", "deployment", "web", "-o", "json").stdout)
        assert "replicaz" not in stored["spec"]
        assert stored["spec"]["replicas"] == 2


def test_ages_read_like_kubectls() -> None:
    clock = datetime(2026, 1, 2, 0, 0, 0, tzinfo=UTC)
    stamp = "2026-01-01T00:00:00Z"
    assert tables.age(stamp, clock) == "24h"
    assert tables.age("2026-01-01T23:59:15Z", clock) == "45s"
    assert tables.age("2026-01-01T23:56:48Z", clock) == "3m12s"
    assert tables.age("2026-01-01T18:30:00Z", clock) == "5h30m"
    assert tables.age("2025-12-20T00:00:00Z", clock) == "13d"
    assert tables.age(None, clock) == "<unknown>"
    assert tables.wanted("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert not tables.wanted("application/json")


def test_the_kubeconfig_loads_in_the_official_client(example_server: KubeSimProcess) -> None:
    with example_server as server:
        config.load_kube_config(config_file=str(server.kubeconfig))
        try:
            version = client.VersionApi().get_code()
            assert (version.major, version.minor) == ("1", "32")
            core = client.CoreV1Api()
            core.create_namespace({"metadata": {"name": "from-client"}})
            assert core.read_namespace("from-client").status.phase == "Active"
        finally:
            client.Configuration.set_default(None)


def test_sigterm_stops_the_server_cleanly(tmp_path: Path) -> None:
    server = KubeSimProcess(tmp_path)
    server.start()
    assert server.stop(signal.SIGTERM) == 0
    log = server.log()
    assert f"kubesim serving Kubernetes 1.32 at {server.url}" in log
    assert "kubesim stopped" in log
    assert "Traceback" not in log


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        ("nodes:\n  - name: a\n    cpu: many\n", "nodes.0.cpu"),
        ("nodes:\n  - name: a\n    gpu: {model: a100, count: 1}\n", "nodes.0.gpu: Extra inputs"),
        ("nodes: [\n", "not valid YAML"),
        ("nodes:\n  - name: a\n    gpus: {model: a100, count: 0}\n", "nodes.0.gpus.count"),
    ],
)
def test_a_bad_nodes_file_is_one_clear_line(tmp_path: Path, nodes: str, expected: str) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(nodes)
    out = serve("--port", "0", "--nodes", str(path))
    assert out.returncode == 2
    assert out.stderr.startswith(f"kubesim: {path}: ")
    assert expected in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", 'the file is empty; it needs a "nodes:" list'),
        (b"\n# only a comment\n", 'the file is empty; it needs a "nodes:" list'),
        (b"- name: a\n- name: b\n", 'expected a mapping with a "nodes:" list, found a list'),
        (b"just a line\n", 'expected a mapping with a "nodes:" list, found a str'),
        (b"nodes: 5\n", "nodes: Input should be a valid tuple"),
        (b"nodes:\n  - 5\n", "nodes.0: Input should be a valid dictionary"),
        (b"nodes:\n  - name: Node_A\n", "nodes.0.name: 'Node_A' is not a valid node name"),
        (b"nodes:\n  - name: a..b\n", "nodes.0.name: 'a..b' is not a valid node name"),
        (b"nodes:\n  - name: " + b"a" * 254 + b"\n", "is not a valid node name"),
        (
            b"nodes:\n  - name: a\n    storage-classes: [Fast SSD]\n",
            "not a valid storage class name",
        ),
        (b"nodes:\n  - name: a\n    labels: {'bad key': x}\n", "labels: Invalid value"),
        (b"nodes:\n  - name: a\n    gpus: {model: 'a 100', count: 1}\n", "labels: Invalid value"),
        (b"nodes:\n  - name: a\n    pods: -1\n", "nodes.0.pods"),
        (b"nodes:\n  - name: a\n    cpu: '-2'\n", "must not be negative"),
        (b"nodes:\n  - name: a\n  - name: a\n", "node names must be unique"),
        (b"nodes: [{name: a}]\n---\nnodes: []\n", "not valid YAML"),
    ],
    ids=[
        "empty",
        "only-a-comment",
        "a-list",
        "a-string",
        "nodes-a-number",
        "a-node-a-number",
        "name-not-dns",
        "name-double-dot",
        "name-too-long",
        "storage-class-name",
        "label-key",
        "gpu-model-in-labels",
        "negative-pods",
        "negative-cpu",
        "duplicate-names",
        "two-documents",
    ],
)
def test_a_nodes_file_of_the_wrong_shape_is_one_clear_line(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_bytes(content)
    out = serve("--port", "0", "--nodes", str(path), timeout=20)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(f"kubesim: {path}: ")
    assert expected in out.stderr
    assert out.stderr.count("\n") == 1  # one line
    assert "Traceback" not in out.stderr


def test_a_kubeconfig_that_cannot_be_written_is_one_clear_line(tmp_path: Path) -> None:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    out = serve("--port", "0", "--kubeconfig", str(directory), timeout=20)
    assert (out.returncode, out.stderr) == (
        2,
        f"kubesim: cannot write the kubeconfig {directory}: it is a directory\n",
    )
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    out = serve("--port", "0", "--kubeconfig", str(a_file / "kubeconfig"), timeout=20)
    assert (out.returncode, out.stderr) == (
        2,
        f"kubesim: cannot write the kubeconfig {a_file / 'kubeconfig'}: {a_file} is not a directory\n",
    )
    # a place the server only finds it cannot write once it listens (/proc takes no files)
    out = serve("--port", "0", "--kubeconfig", "/proc/kubesim-kubeconfig", timeout=20)
    assert (out.returncode, out.stderr) == (
        2,
        "kubesim: cannot write the kubeconfig /proc/kubesim-kubeconfig: "
        "No such file or directory\n",
    )


def test_a_missing_nodes_file(tmp_path: Path) -> None:
    out = serve("--port", "0", "--nodes", str(tmp_path / "absent.yaml"))
    assert out.returncode == 2
    assert "cannot read nodes file" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_port_in_use_and_an_unknown_controller(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = serve("--port", str(port))
    assert out.returncode == 1
    assert out.stderr.strip().startswith(f"kubesim: cannot listen on 127.0.0.1:{port}")
    assert "Traceback" not in out.stderr

    out = serve("--port", str(free_port()), "--disable", "dns")
    assert out.returncode == 2
    assert "unknown controllers ['dns']" in out.stderr

    out = serve("--port", str(free_port()), "--event-ttl", "soon")
    assert (out.returncode, out.stderr.strip()) == (
        2,
        "kubesim: --event-ttl: 'soon' is not a duration (examples: 30s, 5m, 1h30m, 250ms)",
    )


def test_switched_off_controllers_leave_their_work_undone(tmp_path: Path) -> None:
    with KubeSimProcess(tmp_path, None, "--disable", "scheduler") as server:
        api = config.new_client_from_config(str(server.kubeconfig))
        try:
            core = client.CoreV1Api(api)
            core.create_namespaced_pod(
                "default",
                {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            )
            pod = core.read_namespaced_pod("p", "default")
            assert pod.spec.node_name is None
            assert pod.status.phase == "Pending"
        finally:
            api.close()


def test_help_lists_the_options() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kubesim", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0
    for option in ("--port", "--nodes", "--kubeconfig", "--kube-version", "--disable"):
        assert option in out.stdout


def test_the_kubeconfig_names_the_server_as_its_clients_reach_it(tmp_path: Path) -> None:
    """In a container network the server listens on 0.0.0.0 and is reached by its name."""
    with KubeSimProcess(tmp_path, None, "--server-url", "http://kubesim:6443") as server:
        text = server.kubeconfig.read_text()
    assert "server: http://kubesim:6443" in text
