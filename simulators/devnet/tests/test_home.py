"""The devnet home: one devnet at a time, where it listens, key names and the key list."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from akchain import jwt
from akchain.keys import Signer
from akdevnet.cli import app
from akdevnet.homedir import ENDPOINTS_FILE, read_endpoints
from akdevnet.settings import DevnetSettings
from akdevnet.testing import DevnetProcess

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
Cli = Callable[..., subprocess.CompletedProcess[str]]
ErrorLine = Callable[[subprocess.CompletedProcess[str]], str]


def test_a_second_devnet_on_the_same_home_is_refused_and_the_first_keeps_going(
    devnet: DevnetProcess, cli: Cli, error_line: ErrorLine
) -> None:
    assert devnet.process is not None
    first = devnet.process.pid
    second = cli(
        "start", "--home", str(devnet.home), "--rpc", "127.0.0.1:0", "--lcd", "127.0.0.1:0"
    )
    line = error_line(second)
    assert str(devnet.home) in line
    assert f"PID {first}" in line
    height = devnet.height()
    assert devnet.wait_height(height + 3, timeout=10) >= height + 3
    assert devnet.process.poll() is None
    # the OS drops the lock of a killed devnet: the next one starts at once
    devnet.restart(signal.SIGKILL)
    assert devnet.process.pid != first


def test_tenant_tools_find_a_devnet_on_other_ports_through_its_home(
    devnet: DevnetProcess, cli: Cli
) -> None:
    home = str(devnet.home)
    deployed = cli("tenant", "deploy", str(CORPUS / "tetris.yaml"), "--home", home)
    assert deployed.returncode == 0, deployed.stderr
    dseq = int(deployed.stdout)
    # killed without a chance to clean up, then started again on other ports
    devnet.kill()
    assert read_endpoints(devnet.home) is None  # the record of a killed devnet is stale
    moved = DevnetProcess(devnet.home)
    while moved.rpc_port == devnet.rpc_port:
        moved = DevnetProcess(devnet.home)
    with moved:
        closed = cli("tenant", "close", str(dseq), "--home", home)
    assert closed.returncode == 0, closed.stderr
    assert closed.stdout.strip() == f"closed {dseq}"
    assert not (devnet.home / ENDPOINTS_FILE).exists()  # removed by a devnet that stops


@pytest.mark.parametrize(
    ("command", "option", "variable"),
    [
        (["tenant", "deploy"], "--node", "AKDEVNET_NODE"),
        (["tenant", "deploy"], "--lcd", "AKDEVNET_LCD"),
        (["tenant", "accept"], "--home", "AKDEVNET_HOME"),
        (["bid"], "--node", "AKDEVNET_NODE"),
        (["simulate"], "--lcd", "AKDEVNET_LCD"),
        (["start"], "--rpc", "AKDEVNET_RPC_LISTEN"),
        (["start"], "--lcd", "AKDEVNET_LCD_LISTEN"),
        (["start"], "--block-time", "AKDEVNET_BLOCK_TIME"),
    ],
)
def test_help_names_the_environment_variable_behind_each_option(
    command: list[str], option: str, variable: str
) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if f" {option} " in line]
    assert f"env var: {variable}]" in line


def test_key_names_cannot_leave_the_keys_folder(
    devnet: DevnetProcess, cli: Cli, error_line: ErrorLine
) -> None:
    chain = ("--home", str(devnet.home), "--node", devnet.rpc_url, "--lcd", devnet.lcd_url)
    escape = cli("tenant", "new", "../../escaped", *chain)
    line = error_line(escape)
    assert "'../../escaped'" in line
    assert "key name" in line
    home_files = {p for p in devnet.home.parent.rglob("*") if p.is_file()}
    assert not [p for p in home_files if "escaped" in p.name]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["tenant", "new", ""], "empty"),
        (["tenant", "new", "a/b"], "path separator"),
        (["tenant", "new", ".."], "'..'"),
        (["tenant", "new", "x y"], "letters, digits"),
        (["tenant", "new", "é"], "letters, digits"),
        (["tenant", "bids", "1", "--key", "../tenant-1"], "path separator"),
        (["tenant", "cert", "-k", "a\\b"], "path separator"),
        (["bid", "1", "--key", "..\\provider"], "path separator"),
    ],
)
def test_bad_key_names_are_refused_before_anything_is_done(
    tmp_path: Path, args: list[str], why: str
) -> None:
    result = CliRunner().invoke(app, [*args, "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert "key name" in result.output
    assert why in result.output
    assert list(tmp_path.iterdir()) == []


def test_keys_lists_the_tenants_made_after_init(devnet: DevnetProcess, cli: Cli) -> None:
    chain = ("--home", str(devnet.home), "--node", devnet.rpc_url, "--lcd", devnet.lcd_url)
    made = cli("tenant", "new", "bob", *chain)
    assert made.returncode == 0, made.stderr
    listed = CliRunner().invoke(app, ["keys", "--home", str(devnet.home)])
    assert listed.exit_code == 0, listed.output
    rows = dict(line.split() for line in listed.output.splitlines())
    assert rows["bob"] == made.stdout.strip()
    assert rows["faucet"] == devnet.signer("faucet").address
    assert list(rows) == [  # genesis accounts first, in genesis order, then the others
        "faucet",
        "provider",
        "competitor",
        "auditor",
        "tenant-1",
        "tenant-2",
        "tenant-3",
        "bob",
    ]


def test_tenant_token_mints_a_jwt_of_the_tenants_key(tmp_path: Path) -> None:
    signer = Signer.generate()
    key = tmp_path / "tenant.json"
    signer.save(key, DevnetSettings().key_passphrase.get_secret_value(), scrypt_n=2**10)
    provider = Signer.generate().address
    runner = CliRunner()

    full = runner.invoke(app, ["tenant", "token", "--key", str(key), "--home", str(tmp_path)])
    assert full.exit_code == 0, full.output
    claims = jwt.check(full.output.strip(), signer.public_key)
    assert (claims.iss, claims.leases.access, claims.exp - claims.iat) == (
        signer.address,
        "full",
        900,
    )

    args = ["--provider", provider, "--dseq", "7", "--services", "web", "--scope", "logs,shell"]
    granular = runner.invoke(app, ["tenant", "token", "--key", str(key), *args])
    assert granular.exit_code == 0, granular.output
    leases = jwt.check(granular.output.strip(), signer.public_key).leases
    assert leases.refusal("logs", provider, dseq=7, services=["web"]) is None
    assert leases.refusal("status", provider, dseq=7) is not None

    bad = runner.invoke(app, ["tenant", "token", "--key", str(key), "--scope", "dance"])
    assert bad.exit_code == 1
    assert "token claims: scope" in bad.output
