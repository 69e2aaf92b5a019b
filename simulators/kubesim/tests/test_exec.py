"""`pods/{name}/exec`: the official client's `stream` and `kubectl exec` against kubesim."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import WSClient

from kubesim.sandbox import FIRST_UID, UIDS, Limits, Sandbox
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
def run(core: client.CoreV1Api, ns: str, exec_sandbox: None) -> Iterator[Callable[..., WSClient]]:
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
    assert out == "out hi\n/tmp\n"  # the sandbox's own tmpfs
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
    assert "/dev/console" in lines  # bwrap gives the exec's own terminal that name
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


def sleeping(seconds: str) -> list[int]:
    """This machine's pids of the sandboxed `sleep <seconds>` commands."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if (
                proc.name.isdigit()
                and (proc / "cmdline").read_bytes() == f"sleep\0{seconds}\0".encode()
            ):
                found.append(int(proc.name))
    return found


def test_a_client_going_away_kills_the_command(run: Callable[..., WSClient], pod: str) -> None:
    ws = run(["sh", "-c", "echo started; exec sleep 60.25"])
    wait_until(lambda: ws.read_stdout(timeout=1), lambda out: "started" in out)
    wait_until(lambda: sleeping("60.25"), lambda pids: len(pids) == 1)  # sh execs it next
    ws.close()
    wait_until(lambda: sleeping("60.25"), lambda pids: not pids)


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
@pytest.mark.usefixtures("exec_sandbox")
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


# -- the sandbox -------------------------------------------------------------------------------


def test_the_command_sees_no_file_of_this_machine(
    run: Callable[..., WSClient], pod: str, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.key"
    secret.write_text("provider key\n")
    ws = run(["sh", "-c", f"cat {secret}; cat /etc/hostname; ls {Path.cwd()}; ls /; id -u"])
    out, err = finish(ws)
    assert "provider key" not in out
    assert out.split() == ["bin", "dev", "etc", "proc", "root", "sbin", "tmp", "usr", "0"]
    assert err.count("No such file or directory") == 3, err
    # nothing written in /tmp outlives the exec
    assert finish(run(["sh", "-c", "echo x > /tmp/mine; ls /tmp"])) == ("mine\n", "")
    assert finish(run(["ls", "/tmp"])) == ("", "")  # noqa: S108 - the sandbox's


def test_the_command_sees_no_environment_but_the_containers(
    run: Callable[..., WSClient], pod: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AP_KEY_PASSPHRASE", "hunter2")  # kubesim's own environment
    out, _ = finish(run(["sh", "-c", "env; cat /proc/1/environ; ls /proc | grep -c '^[0-9]'"]))
    *env, processes = out.splitlines()
    assert sorted(env) == [
        "GREETING=hi", "HOME=/tmp", "HOSTNAME=box", "PATH=/bin:/usr/bin:/sbin:/usr/sbin",
        "PWD=/tmp", "SHLVL=2",
    ]  # fmt: skip
    assert int(processes) <= 4  # bwrap's pid 1, the shell, its pipeline: no other process


def test_the_command_has_no_network(run: Callable[..., WSClient], pod: str, tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "redis.sock"))
    unix.listen()
    listener.settimeout(0.5)
    with listener, unix:
        port = listener.getsockname()[1]
        ws = run(["sh", "-c", f"echo hi | nc 127.0.0.1 {port}; ls {tmp_path}; ip -o addr"])
        out, err = finish(ws)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert "can't connect" in err
    assert "redis.sock" not in out
    assert [line.split()[1] for line in out.splitlines()] == ["lo", "lo"]  # its own loopback


def test_the_command_runs_as_a_user_of_the_pods_own(run: Callable[..., WSClient], pod: str) -> None:
    ws = run(["sh", "-c", "echo started; exec sleep 60.5"])
    wait_until(lambda: ws.read_stdout(timeout=1), lambda out: "started" in out)
    (pid,) = wait_until(lambda: sleeping("60.5"), lambda pids: len(pids) == 1)
    owner = Path(f"/proc/{pid}").stat().st_uid
    if os.geteuid() == 0:
        assert FIRST_UID <= owner < FIRST_UID + UIDS
    else:
        assert owner == os.geteuid()
    status = Path(f"/proc/{pid}/status").read_text()
    assert "CapEff:\t0000000000000000" in status


@pytest.fixture(scope="module")
def confined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoreRun]:
    """A simulator whose execs have small limits and a 5 s timeout, and a pod on it."""
    limits = Limits(cpu_seconds=1, memory=32 * 1024 * 1024, file_size=1024 * 1024, processes=16)
    with ThreadedKubeSim(sandbox=Sandbox(limits=limits)) as sim:
        sim.running.api.execs.timeout = 5
        path = sim.write_kubeconfig(tmp_path_factory.mktemp("confined") / "kubeconfig")
        api = config.new_client_from_config(str(path))
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "test"}})
        make_pod(core, "test", "box")

        opened: list[WSClient] = []

        def start(command: list[str]) -> WSClient:
            ws: WSClient = stream(
                core.connect_get_namespaced_pod_exec, "box", "test", command=command,
                stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False,
            )  # fmt: skip
            opened.append(ws)
            return ws

        yield start
        for ws in opened:
            ws.close()
            if ws.sock is not None:
                ws.sock.shutdown()
        api.close()


CoreRun = Callable[[list[str]], WSClient]


def test_limits_stop_a_cpu_loop_a_memory_hog_and_a_file_too_big(confined: CoreRun) -> None:
    started = time.monotonic()
    ws = confined(["sh", "-c", "while :; do :; done"])
    finish(ws)
    assert ws.returncode in {137, 152}  # SIGKILL or SIGXCPU, after one CPU second
    assert time.monotonic() - started < 4.5  # before the exec's timeout
    ws = confined(["sh", "-c", "x=$(head -c 64000000 /dev/zero | tr '\\0' a); echo ${#x}"])
    out, err = finish(ws)
    assert ws.returncode != 0, (out, err)
    assert "64000000" not in out
    ws = confined(["sh", "-c", "head -c 2000000 /dev/zero > /tmp/big; wc -c < /tmp/big"])
    assert finish(ws)[0] == "1048576\n"  # the file stopped at the limit


def test_a_fork_bomb_is_stopped(confined: CoreRun) -> None:
    started = time.monotonic()
    ws = confined(["sh", "-c", "f() { f | f & }; f; sleep 30.75"])
    _, err = finish(ws)
    if os.geteuid() == 0:  # a pod's own uid: its process count is bounded
        assert "can't fork" in err
    assert ws.returncode == 137  # and the timeout ends it, bomb and all
    assert time.monotonic() - started < 10
    wait_until(lambda: sleeping("30.75"), lambda pids: not pids)  # none of another test


def test_without_a_sandbox_nothing_runs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    marker = tmp_path / "ran"
    with ThreadedKubeSim(sandbox=Sandbox(bwrap=str(tmp_path / "no-bwrap"))) as sim:
        assert sim.running.api.execs.sandbox.reason == (
            f"bubblewrap is not installed ({tmp_path}/no-bwrap not found)"
        )
        api = config.new_client_from_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "test"}})
        make_pod(core, "test", "box")
        caplog.clear()
        ws = stream(
            core.connect_get_namespaced_pod_exec, "box", "test",
            command=["sh", "-c", f"touch {marker}; echo secret-arg"],
            stderr=True, stdout=True, _preload_content=False,
        )  # fmt: skip
        finish(ws)
        ws.sock.shutdown()
        api.close()
    status = json.loads(ws.peek_channel(3))
    assert status["reason"] == "InternalError"
    assert "exec is refused: this cluster has no sandbox" in status["message"]
    assert "no-bwrap not found" in status["message"]
    assert not marker.exists()
    refusals = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in refusals] == [
        f"exec 'sh' refused: no sandbox (bubblewrap is not installed ({tmp_path}/no-bwrap "
        "not found))"
    ]
    assert "secret-arg" not in caplog.text  # the access log names the command only
    assert "command=sh&" in caplog.text
