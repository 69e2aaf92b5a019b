"""``akash-provider provider show|create|update`` against a real devnet and chain relay: the
record read back through the LCD, ``--dry-run`` changing nothing, a repeated or concurrent
update sent once; and a key imported with ``keys import`` registering a new provider."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from akbus import Bus, RedisSettings
from akchain import msgs
from akchain.keys import new_mnemonic
from akchain.lcd import LCDClient
from akchain.models import Provider
from akchainsvc.testing import RelayProcess
from akcli.main import app
from akcli.provider import Outcome, register
from akdevnet.testing import TEST_PASSPHRASE, DevnetProcess
from aktypes.coin import Coin
from aktypes.events import TxCommitted, envelope_from_fields
from aktypes.events.streams import CHAIN_RESULTS, CHAIN_TX
from aktypes.providerconfig import parse_provider_config

runner = CliRunner()
CLEAN = {
    "AP_KEY_FILE": None, "AP_KEY_PASSPHRASE": None, "AP_KEY_PASSPHRASE_FILE": None,
    "AP_PROVIDER_ADDRESS": None, "AP_API": None, "REDIS_URL": None,
}  # fmt: skip

UPDATED = """\
host: https://provider.example.com:8443
info:
  email: ops@example.com
  website: https://example.com
attributes:
  - key: region
    value: eu-west
  - key: tier
    value: 5
  - key: capabilities/storage/1/class
    value: beta3
"""


def cli(*args: str, stdin: str = "", env: dict[str, str | None] | None = None) -> Result:
    return runner.invoke(app, list(args), input=stdin, env={**CLEAN, **(env or {})})


def relay(devnet: DevnetProcess, redis_url: str, key_file: Path, log: Path) -> RelayProcess:
    return RelayProcess(
        redis_url=redis_url, node=devnet.rpc_url, api=devnet.lcd_url, key_file=key_file,
        passphrase=TEST_PASSPHRASE, log_path=log,
    )  # fmt: skip


@pytest.fixture
def provider_relay(devnet: DevnetProcess, redis_url: str, tmp_path: Path) -> Iterator[RelayProcess]:
    process = relay(devnet, redis_url, devnet.key_path("provider"), tmp_path / "relay.log")
    try:
        process.start()
        yield process
    finally:
        process.stop()


def record(devnet: DevnetProcess, owner: str) -> Provider:
    async def read() -> Provider:
        async with LCDClient(devnet.lcd_url) as lcd:
            return await lcd.provider(owner)

    return asyncio.run(read())


def stream(redis_url: str, name: str) -> list[object]:
    async def read() -> list[object]:
        bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
        try:
            return [envelope_from_fields(e.fields).payload for e in await bus.backend.entries(name)]
        finally:
            await bus.close()

    return asyncio.run(read())


def test_update_dry_run_then_once_then_nothing(
    devnet: DevnetProcess, redis_url: str, provider_relay: RelayProcess, tmp_path: Path
) -> None:
    owner = devnet.signer("provider").address
    before = record(devnet, owner)
    config = tmp_path / "provider.yaml"
    config.write_text(UPDATED)
    where = ("--api", devnet.lcd_url, "--redis-url", redis_url)

    preview = cli("provider", "update", str(config), "--dry-run", *where)
    assert preview.exit_code == 0, preview.stderr
    assert f"host: {before.host_uri!r} -> 'https://provider.example.com:8443'" in preview.stdout
    assert "info.email: '' -> 'ops@example.com'" in preview.stdout
    assert "attribute tier: 'community' -> '5'" in preview.stdout
    assert "attribute capabilities/storage/1/class: 'beta2' -> 'beta3'" in preview.stdout
    assert "attribute organization: removed (was 'akash-provider-devnet')" in preview.stdout
    assert "not sent (--dry-run)" in preview.stdout
    assert record(devnet, owner) == before
    assert stream(redis_url, CHAIN_TX) == []

    done = cli("provider", "update", str(config), *where)
    assert done.exit_code == 0, done.stderr
    assert f"{owner}: provider updated (tx " in done.stdout
    after = record(devnet, owner)
    assert after.host_uri == "https://provider.example.com:8443"
    assert (after.email, after.website) == ("ops@example.com", "https://example.com")
    assert {a.key: a.value for a in after.attributes} == {
        "region": "eu-west", "tier": "5", "capabilities/storage/1/class": "beta3",
    }  # fmt: skip
    assert len(stream(redis_url, CHAIN_TX)) == 1

    again = cli("provider", "update", str(config), *where)
    assert again.exit_code == 0, again.stderr
    assert "nothing to send" in again.stdout
    assert len(stream(redis_url, CHAIN_TX)) == 1

    shown = cli("provider", "show", "--api", devnet.lcd_url, "--address", owner)
    assert shown.exit_code == 0, shown.stderr
    assert "host: https://provider.example.com:8443\n" in shown.stdout
    assert "- key: tier\n  value: '5'\n" in shown.stdout

    # Two operators running the same update at once: one transaction on chain.
    config.write_text(UPDATED.replace("eu-west", "eu-north"))
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    command = [sys.executable, "-m", "akcli", "provider", "update", str(config), *where]
    twins = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    outputs = [twin.communicate(timeout=90) for twin in twins]
    assert [twin.returncode for twin in twins] == [0, 0], outputs
    assert all("Traceback" not in err for _, err in outputs)
    committed = [
        r for r in stream(redis_url, CHAIN_RESULTS)
        if isinstance(r, TxCommitted) and r.key.startswith("update-provider/")
    ]  # fmt: skip
    assert len(committed) == 2  # the first update, then the twins' one
    assert {a.key: a.value for a in record(devnet, owner).attributes}["region"] == "eu-north"

    # Someone puts the first record back (Go's CLI, say): the same change is sent again.
    async def put_back() -> None:
        first = parse_provider_config(UPDATED)
        async with devnet.clients() as clients:
            await clients.wallet("provider").send(
                msgs.update_provider(
                    owner, first.host, first.attributes, first.email, first.website
                )
            )

    asyncio.run(put_back())
    assert {a.key: a.value for a in record(devnet, owner).attributes}["region"] == "eu-west"
    again = cli("provider", "update", str(config), *where)
    assert again.exit_code == 0, again.stderr
    assert "attribute region: 'eu-west' -> 'eu-north'" in again.stdout
    assert {a.key: a.value for a in record(devnet, owner).attributes}["region"] == "eu-north"

    # From code, as a capabilities sync calls it: other attributes kept, capabilities replaced.
    async def sync() -> Outcome:
        bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
        try:
            async with LCDClient(devnet.lcd_url) as lcd:
                return await register(
                    bus, lcd, "update", owner, None, timeout=60,
                    capabilities={"capabilities/gpu/vendor/nvidia/model/h100": "true"},
                )  # fmt: skip
        finally:
            await bus.close()

    synced = asyncio.run(sync())
    assert [str(c) for c in synced.changes] == [
        "attribute capabilities/gpu/vendor/nvidia/model/h100: added 'true'",
        "attribute capabilities/storage/1/class: removed (was 'beta3')",
    ]
    assert synced.sent
    assert [(a.key, a.value) for a in record(devnet, owner).attributes] == [
        ("region", "eu-north"), ("tier", "5"), ("capabilities/gpu/vendor/nvidia/model/h100", "true"),
    ]  # fmt: skip


def test_a_new_account_s_imported_key_registers_a_provider(
    devnet: DevnetProcess, redis_url: str, tmp_path: Path
) -> None:
    store = tmp_path / "new-provider.json"
    imported = cli(
        "keys", "import", "--mnemonic", "--key-file", str(store),
        stdin=f"{new_mnemonic()}\n", env={"AP_KEY_PASSPHRASE": TEST_PASSPHRASE},
    )  # fmt: skip
    assert imported.exit_code == 0, imported.stderr
    address = imported.stdout.split()[0]

    async def fund() -> None:
        async with devnet.clients() as clients:
            faucet = clients.wallet("faucet")
            await faucet.send(
                msgs.send(faucet.address, address, [Coin(denom="uakt", amount=10**9)])
            )

    asyncio.run(fund())
    config = tmp_path / "provider.yaml"
    config.write_text(
        "host: https://new.example.com:8443\nattributes:\n  - {key: region, value: us}\n"
    )
    where = ("--api", devnet.lcd_url, "--redis-url", redis_url)

    missing = cli("provider", "show", "--api", devnet.lcd_url, "--address", address)
    assert missing.exit_code == 1 and missing.stderr.strip().endswith(
        "is not a registered provider"
    )
    not_yet = cli("provider", "update", str(config), "--dry-run", "--address", address, *where[:2])
    assert not_yet.exit_code == 1
    assert "`provider create` registers it" in not_yet.stderr
    preview = cli("provider", "create", str(config), "--dry-run", "--address", address, *where[:2])
    assert preview.exit_code == 0, preview.stderr
    assert "host: added 'https://new.example.com:8443'" in preview.stdout
    assert "attribute region: added 'us'" in preview.stdout

    process = relay(devnet, redis_url, store, tmp_path / "relay.log")
    try:
        process.start()
        created = cli("provider", "create", str(config), *where)
        assert created.exit_code == 0, created.stderr
        assert f"{address}: provider registered (tx " in created.stdout
        on_chain = record(devnet, address)
        assert on_chain.host_uri == "https://new.example.com:8443"
        assert [(a.key, a.value) for a in on_chain.attributes] == [("region", "us")]
        twice = cli("provider", "create", str(config), *where)
        assert twice.exit_code == 0 and "nothing to send" in twice.stdout
        other = cli(
            "provider",
            "create",
            str(config),
            *where,
            "--address",
            devnet.signer("provider").address,
        )
        assert other.exit_code == 1 and "the chain relay signs for" in other.stderr
    finally:
        process.stop()


def test_bad_files_and_an_unreachable_node_are_one_line(tmp_path: Path) -> None:
    config = tmp_path / "provider.yaml"
    config.write_text("host: http://plain.example.com\n")
    bad = cli("provider", "update", str(config), "--dry-run", "--address", "akash1x")
    assert bad.exit_code == 1
    assert bad.stderr.strip().splitlines() == [
        f"akash-provider provider: {config}: the scheme of host 'http://plain.example.com' "
        "must be https"
    ]
    gone = cli("provider", "update", str(tmp_path / "none.yaml"), "--dry-run")
    assert gone.exit_code == 1 and len(gone.stderr.strip().splitlines()) == 1
    config.write_text(UPDATED)
    down = cli(
        "provider", "update", str(config), "--dry-run", "--address", "akash1x",
        "--api", "http://127.0.0.1:9",
    )  # fmt: skip
    assert down.exit_code == 1
    lines = down.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot read the provider from the node" in lines[0]
