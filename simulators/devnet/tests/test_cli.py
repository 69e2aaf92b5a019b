"""The CLI's answers to bad options and to deployments it cannot act on: one line, at once."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from akdevnet.cli import main
from akdevnet.testing import DevnetClients, DevnetProcess
from aktypes.sdl import SDL

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
TETRIS = str(CORPUS / "tetris.yaml")
Cli = Callable[..., subprocess.CompletedProcess[str]]
ErrorLine = Callable[[subprocess.CompletedProcess[str]], str]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["tenant", "deploy", TETRIS, "--deposit", "lots"], ["--deposit", "'lots'", "coin"]),
        (["tenant", "deploy", TETRIS, "--deposit", "-5uact"], ["--deposit", "'-5uact'"]),
        (["tenant", "deploy", TETRIS, "--dseq", "0"], ["'--dseq'", "greater than or equal to 1"]),
        (["tenant", "new", "carol", "--funds", "1000"], ["--funds", "'1000'", "coin"]),
        (["bid", "7", "--price", "abc"], ["--price", "'abc'", "price"]),
        (["bid", "7", "--deposit", "5"], ["--deposit", "'5'", "coin"]),
        (["tenant", "bids", "abc"], ["'dseq'", "valid integer"]),
        (["tenant", "accept", "1", "--wait", "-1"], ["'--wait'", "greater than or equal to 0"]),
        (["start", "--block-time", "fast"], ["--block-time", "'fast'", "duration"]),
        (["start", "--block-time", "0"], ["--block-time", "0.005"]),
        (["start", "--rpc", "localhost"], ["--rpc", "'localhost'", "host:port"]),
        (["start", "--lcd", "127.0.0.1:99999"], ["--lcd", "99999", "port"]),
        (["init", "--tenants", "-1"], ["'--tenants'", "greater than or equal to 0"]),
        (
            ["simulate", "--sdl-dir", ".", "--tenants", "0"],
            ["'--tenants'", "greater than or equal to 1"],
        ),
        (["events", "--from", "x"], ["'--from'", "valid integer"]),
    ],
)
def test_bad_option_values_get_one_line_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: list[str]
) -> None:
    code = main([*args, "--home", str(tmp_path / "home")])
    err = capsys.readouterr().err
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for part in expected:
        assert part in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "home" / "state.db").exists()


def test_a_price_in_another_denomination_than_the_order_is_refused_by_the_cli(
    devnet: DevnetProcess, cli: Cli, error_line: ErrorLine
) -> None:
    chain = ("--home", str(devnet.home), "--node", devnet.rpc_url, "--lcd", devnet.lcd_url)
    dseq = cli("tenant", "deploy", TETRIS, *chain)
    assert dseq.returncode == 0, dseq.stderr
    line = error_line(cli("bid", dseq.stdout.strip(), "--price", "10uakt", *chain))
    assert "--price" in line
    assert "uact" in line
    assert "uakt" in line


async def test_accept_says_at_once_that_a_deployment_is_closed_or_unknown(
    chain: DevnetClients, corpus: Callable[[str], SDL], cli: Cli, error_line: ErrorLine
) -> None:
    devnet = chain.devnet
    tenant = chain.tenant()
    deployment = await tenant.deploy(corpus("tetris.yaml"))
    await tenant.close(deployment.dseq)
    where = ("--home", str(devnet.home), "--node", devnet.rpc_url, "--lcd", devnet.lcd_url)
    closed = cli("tenant", "accept", str(deployment.dseq), "--wait", "600", *where, timeout=30)
    line = error_line(closed)
    assert f"deployment {deployment.dseq}" in line
    assert "is closed" in line
    unknown = cli("tenant", "accept", "424242", "--wait", "600", *where, timeout=30)
    line = error_line(unknown)
    assert "deployment 424242" in line
    assert "does not exist" in line
