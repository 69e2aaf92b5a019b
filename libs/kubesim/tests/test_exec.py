"""`pods/{name}/exec`: the official client's `stream` and `kubectl exec` against kubesim."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import WSClient

from kubesim.testing import ThreadedKubeSim, wait_until

Reply = Any  # conftest's Reply


def make_pod(core: client.CoreV1Api, ns: str, name: str, *containers: str) -> None:
    core.create_namespaced_pod(
        ns,
        {
            "metadata": {"name": name},
            "spec": {
                "containers": [
                    {"name": c, "image": "busybox", "env": [{"name": "GREETING", "value": "hi"}]}
                    for c in containers or ("main",)
                ]
            },
        },
    )
    wait_until(lambda: core.read_namespaced_pod(name, ns), lambda p: p.status.phase == "Running")


@pytest.fixture
def core(k8s: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(k8s)


@pytest.fixture
def pod(core: client.CoreV1Api, ns: str) -> str:
    make_pod(core, ns, "box")
    return "box"


@pytest.fixture
def run(core: client.CoreV1Api, ns: str) -> Iterator[Callable[..., WSClient]]:
    """`run(command, stdin=..., tty=..., name=...)`: a started exec, closed after the test."""
    opened: list[WSClient] = []

    def start(
        command: list[str], *, stdin: bool = False, tty: bool = False, name: str = "box", **kw: Any
    ) -> WSClient:
        ws: WSClient = stream(
            core.connect_get_namespaced_pod_exec,
            name,
            ns,
            command=command,
            stderr=True,
            stdin=stdin,
            stdout=True,
            tty=tty,
            _preload_content=False,
            **kw,
        )
        opened.append(ws)
        return ws

    yield start
    for ws in opened:
        ws.close()
        if ws.sock is not None:  # websocket-client leaves the socket open once the server closed
            ws.sock.shutdown()


def finish(ws: WSClient) -> tuple[str, str]:
    ws.run_forever(timeout=20)
    assert not ws.is_open()
    return ws.read_stdout() or "", ws.read_stderr() or ""


def test_echo(run: Callable[..., WSClient], pod: str) -> None:
    ws = run(["echo", "hello"])
    assert ws.subprotocol == "v5.channel.k8s.io"
    assert finish(ws) == ("hello\n", "")
    assert json.loads(ws.peek_channel(3)) == {"metadata": {}, "status": "Success"}
    assert ws.returncode == 0


def test_non_zero_exit_code(run: Callable[..., WSClient], pod: str) -> None:
    ws = run(["sh", "-c", "exit 3"])
    finish(ws)
    assert ws.peek_channel(3) == (
        '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit '
        'code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode",'
        '"details":{"causes":[{"reason":"ExitCode","message":"3"}]}}'
    )
    assert ws.returncode == 3


def test_stdout_and_stderr_apart_and_the_container_env(
    run: Callable[..., WSClient], pod: str
) -> None:
    ws = run(["sh", "-c", 'echo "out $GREETING"; echo err >&2; pwd'])
    out, err = finish(ws)
    assert out.startswith("out hi\n")
    assert "kubesim-exec-" in out  # a temp dir of its own
    assert err == "err\n"


def test_long_output_arrives_whole(run: Callable[..., WSClient], pod: str) -> None:
    out, _ = finish(run(["seq", "1", "100000"]))
    assert out == "".join(f"{i}\n" for i in range(1, 100001))


def test_stdin(run: Callable[..., WSClient], pod: str) -> None:
    ws = run(["sh", "-c", "read x; echo got $x"], stdin=True)
    ws.write_stdin("there\n")
    assert finish(ws) == ("got there\n", "")
    # v5: closing stdin ends `cat`
    ws = run(["cat"], stdin=True)
    ws.write_stdin(b"one\ntwo\n")
    ws.close_channel(0)
    assert finish(ws) == ("one\ntwo\n", "")
    assert ws.returncode == 0


def test_tty_and_resize(run: Callable[..., WSClient], pod: str) -> None:
    ws = run(["sh", "-c", "tty; read x; stty size; echo oops >&2"], stdin=True, tty=True)
    ws.write_channel(4, json.dumps({"Width": 100, "Height": 40}))
    ws.write_stdin("go\n")
    out, err = finish(ws)
    assert ws.returncode == 0
    lines = out.replace("\r\n", "\n").splitlines()  # the terminal's \r\n
    assert "go" in lines  # the terminal echoes its input
    assert any(line.startswith("/dev/pts/") for line in lines)
    assert lines[-2:] == ["40 100", "oops"]  # the terminal carries stderr too
    assert err == ""


def test_older_protocols(run: Callable[..., WSClient], pod: str) -> None:
    ws = run(
        ["sh", "-c", "echo v4; exit 2"], _headers={"sec-websocket-protocol": "v4.channel.k8s.io"}
    )
    assert ws.subprotocol == "v4.channel.k8s.io"
    assert finish(ws) == ("v4\n", "")
    assert ws.returncode == 2
    ws = run(["sh", "-c", "exit 2"], _headers={"sec-websocket-protocol": "channel.k8s.io"})
    assert ws.subprotocol == "channel.k8s.io"
    finish(ws)  # v1 tells a failure in plain text
    assert ws.peek_channel(3) == (
        "command terminated with non-zero exit code: error executing command "
        "[sh -c exit 2], exit code 2"
    )


def test_command_not_found(run: Callable[..., WSClient], pod: str) -> None:
    ws = run(["nosuch", "arg"])
    finish(ws)
    status = json.loads(ws.peek_channel(3))
    assert status["status"] == "Failure"
    assert status["reason"] == "InternalError"
    assert 'exec: "nosuch": executable file not found in $PATH' in status["message"]


def test_the_container_is_named_when_there_are_several(
    core: client.CoreV1Api, run: Callable[..., WSClient], ns: str
) -> None:
    make_pod(core, ns, "pair", "a", "b")
    with pytest.raises(ApiException, match="400"):
        run(["true"], name="pair")
    ws = run(["echo", "b"], name="pair", container="b")
    assert finish(ws) == ("b\n", "")


def test_errors(
    run: Callable[..., WSClient], pod: str, ns: str, raw_http: Callable[..., Reply]
) -> None:
    with pytest.raises(ApiException, match="404"):
        run(["true"], name="nosuch")
    base = f"/api/v1/namespaces/{ns}/pods"
    missing = raw_http("GET", f"{base}/nosuch/exec?command=true&stdout=true")
    assert (missing.status, missing.body["reason"]) == (404, "NotFound")
    no_command = raw_http("GET", f"{base}/box/exec?stdout=true")
    assert no_command.status == 400
    assert no_command.body["message"] == "you must specify at least one command for the container"
    plain = raw_http("POST", f"{base}/box/exec?command=true&stdout=true")
    assert plain.status == 400
    assert plain.body["kind"] == "Status"
    assert "websocket" in plain.body["message"]
    no_streams = raw_http("GET", f"{base}/box/exec?command=true")
    assert no_streams.status == 400
    attach = raw_http("GET", f"{base}/box/attach?stdout=true")
    assert attach.status == 400


def test_a_client_going_away_kills_the_command(
    run: Callable[..., WSClient], pod: str, tmp_path: Path
) -> None:
    marker = tmp_path / "pid"
    ws = run(["sh", "-c", f"echo $$ > {marker}; echo started; sleep 60"])
    wait_until(lambda: ws.read_stdout(timeout=1), lambda out: "started" in out)
    pid = int(marker.read_text())
    ws.close()
    wait_until(lambda: Path(f"/proc/{pid}").exists(), lambda alive: not alive)


def test_stopping_the_server_ends_the_commands(tmp_path: Path) -> None:
    sim = ThreadedKubeSim().__enter__()
    api = config.new_client_from_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    try:
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "test"}})
        make_pod(core, "test", "box")
        ws = stream(
            core.connect_get_namespaced_pod_exec,
            "box",
            "test",
            command=["sh", "-c", "echo started; sleep 60"],
            stdout=True,
            stderr=True,
            _preload_content=False,
        )
        wait_until(lambda: ws.read_stdout(timeout=1), lambda out: "started" in out)
    finally:
        sim.__exit__(None, None, None)
    ws.run_forever(timeout=10)
    assert ws.returncode == 137  # killed
    ws.sock.shutdown()
    api.close()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kubectl_exec(pod: str, ns: str, kubesim_kubeconfig: Path) -> None:
    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", "--kubeconfig", str(kubesim_kubeconfig), "-n", ns, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = kubectl("exec", pod, "--", "echo", "hi")
    assert (done.returncode, done.stdout) == (0, "hi\n"), done.stderr
    failed = kubectl("exec", pod, "--", "sh", "-c", "exit 4")
    assert failed.returncode == 4, failed.stderr
    piped = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(kubesim_kubeconfig),
            "-n",
            ns,
            "exec",
            "-i",
            pod,
            "--",
            "cat",
        ],
        input="fed\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (piped.returncode, piped.stdout) == (0, "fed\n"), piped.stderr
