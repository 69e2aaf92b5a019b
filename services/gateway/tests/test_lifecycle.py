"""The gateway process's start and stop, and its certificate commands without a chain: a
missing certificate, a busy port, bad settings, a node that does not answer, SIGTERM."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from akgateway.testing import GatewayProcess
from akservice.testing import eventually_sync, free_port
from aktypes.testing import address

PROVIDER = address(7)


def gateway(redis_url: str, tmp_path: Path, **env: str) -> GatewayProcess:
    return GatewayProcess(
        redis_url=redis_url,
        api=f"http://127.0.0.1:{free_port()}",  # nothing listens there
        tls_dir=tmp_path / "tls",
        log_path=tmp_path / "gateway.log",
        extra_env={"AP_PROVIDER_ADDRESS": PROVIDER, **env},
    )


def errors(process: GatewayProcess) -> list[str]:
    lines = [json.loads(line) for line in process.log().splitlines() if line.startswith("{")]
    return [line["event"] for line in lines if line.get("level") == "error"]


def run_to_exit(process: GatewayProcess, timeout: float = 20.0) -> int:
    process.start(wait_ready=False)
    assert process.process is not None
    return process.process.wait(timeout)


def test_a_missing_certificate_names_the_command_that_makes_it(
    redis_url: str, tmp_path: Path
) -> None:
    process = gateway(redis_url, tmp_path)
    assert run_to_exit(process) == 1
    [line] = errors(process)
    assert f"no provider certificate at {tmp_path / 'tls' / PROVIDER}.pem" in line
    assert "python -m akgateway cert generate" in line
    assert "Traceback" not in process.log()


def test_bad_settings_exit_2_naming_the_variable(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "akgateway"],
        env={"AP_GATEWAY_LISTEN": "nowhere", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "AP_GATEWAY_LISTEN='nowhere'" in done.stderr


def test_not_ready_and_not_listening_until_the_chain_answers_then_sigterm_stops_it(
    redis_url: str, tmp_path: Path
) -> None:
    process = gateway(redis_url, tmp_path)
    made = process.cert("generate", "gateway.example.com")
    assert made.returncode == 0, made.stderr
    assert "host URI is not known" in made.stderr  # the node does not answer: noted, not fatal
    assert "gateway.example.com" in made.stdout
    assert (tmp_path / "tls" / f"{PROVIDER}.pem").stat().st_mode & 0o777 == 0o600

    process.start(wait_ready=False)
    try:

        def waiting() -> bool:
            try:
                status, body = process.readiness()
            except OSError:  # the health port is not up yet
                return False
            return status == 503 and "waiting for the on-chain certificates" in json.dumps(body)

        eventually_sync(waiting, timeout_s=10, what="/readyz to say what the gateway waits for")
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", process.port), timeout=2).close()
        started = time.monotonic()
    finally:
        code = process.stop()
    assert code == 0
    assert time.monotonic() - started < 5


def test_a_busy_port_is_one_line(redis_url: str, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        process = gateway(redis_url, tmp_path, AP_GATEWAY_LISTEN=f"127.0.0.1:{port}")
        assert process.cert("generate").returncode == 0
        assert run_to_exit(process) == 1
    assert errors(process) == [
        f"cannot listen on 127.0.0.1:{port} (AP_GATEWAY_LISTEN): the address is already in use"
    ]


def test_publish_without_a_relay_says_so(redis_url: str, tmp_path: Path) -> None:
    process = gateway(redis_url, tmp_path)
    missing = process.cert("publish", "--timeout", "0.5")
    assert missing.returncode == 1
    assert "cert generate` first" in missing.stderr
    assert process.cert("generate").returncode == 0
    silent = process.cert("publish", "--timeout", "0.5")
    assert silent.returncode == 1
    assert "is the chain relay running" in silent.stderr
    assert len(silent.stderr.strip().splitlines()) == 2  # the note about the node, the error
