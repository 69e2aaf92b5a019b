"""``akash-provider keys import|show``: a mnemonic and a Cosmos SDK export (built here from the
format's definition) land in the key store the chain relay unlocks; bad inputs are one line."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest
from nacl.secret import SecretBox
from typer.testing import CliRunner, Result

from akchain.keys import Signer
from akcli.main import app

runner = CliRunner()
ABANDON = " ".join(["abandon"] * 11 + ["about"])
ABANDON_ADDRESS = "akash19rl4cm2hmr8afy4kldpxz3fka4jguq0a3mq6x0"
STORE_PASS = "store passphrase"  # noqa: S105 - a test store
CLEAN = {"AP_KEY_FILE": None, "AP_KEY_PASSPHRASE": None, "AP_KEY_PASSPHRASE_FILE": None}


def exported(signer: Signer, passphrase: str, salt: bytes = b"\x5a" * 16) -> str:
    """What ``provider-services keys export`` prints for ``signer``: sha256(bcrypt cost 12 of the
    passphrase with the salt) keys a secretbox (nonce first) of the Amino-encoded key."""
    bcrypt_salt = base64.b64encode(salt).decode().rstrip("=")
    bcrypt_salt = bcrypt_salt.translate(
        str.maketrans(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        )
    )
    key = hashlib.sha256(bcrypt.hashpw(passphrase.encode(), f"$2a$12${bcrypt_salt}".encode()))
    secret = signer._private.private_numbers().private_value.to_bytes(32, "big")
    box = bytes(
        SecretBox(key.digest()).encrypt(bytes.fromhex("e1b0f79b20") + secret, os.urandom(24))
    )
    body = base64.b64encode(box).decode()
    return "\n".join([
        "-----BEGIN TENDERMINT PRIVATE KEY-----", "kdf: bcrypt", f"salt: {salt.hex().upper()}",
        "type: secp256k1", "", body[:64], body[64:], "-----END TENDERMINT PRIVATE KEY-----", "",
    ])  # fmt: skip


def keys(*args: str, stdin: str = "", env: dict[str, str | None] | None = None) -> Result:
    return runner.invoke(app, ["keys", *args], input=stdin, env={**CLEAN, **(env or {})})


def one_line_error(result: Result, code: int, text: str) -> None:
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_mnemonic_from_standard_input_imports_to_its_address(tmp_path: Path) -> None:
    store = tmp_path / "provider-key.json"
    result = keys("import", "--mnemonic", stdin=f"  {ABANDON}  \n", env={
        "AP_KEY_FILE": str(store), "AP_KEY_PASSPHRASE": STORE_PASS,
    })  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{ABANDON_ADDRESS} imported into {store}\n"
    assert ABANDON not in result.stdout + result.stderr
    assert Signer.load(store, STORE_PASS).address == Signer.from_mnemonic(ABANDON).address
    shown = keys("show", env={"AP_KEY_FILE": str(store)})
    assert (shown.exit_code, shown.stdout) == (0, f"{ABANDON_ADDRESS}\n")


def test_an_sdk_export_imports_to_the_address_of_its_mnemonic(tmp_path: Path) -> None:
    source = tmp_path / "key.pem"
    source.write_text(exported(Signer.from_mnemonic(ABANDON), "export pass"))
    store = tmp_path / "store.json"
    passphrase_file = tmp_path / "pass"
    passphrase_file.write_text(STORE_PASS + "\n")
    result = keys(
        "import", str(source), "--key-file", str(store), "--name", "main",
        stdin="export pass\n", env={"AP_KEY_PASSPHRASE_FILE": str(passphrase_file)},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert Signer.load(store, STORE_PASS).address == ABANDON_ADDRESS
    assert keys("show", "--key-file", str(store)).stdout == f"{ABANDON_ADDRESS}\n"


def test_the_store_passphrase_is_asked_after_the_secret_when_not_set(tmp_path: Path) -> None:
    store = tmp_path / "k.json"
    result = keys("import", "--mnemonic", "--key-file", str(store), stdin=f"{ABANDON}\nasked\n")
    assert result.exit_code == 0, result.stderr
    assert Signer.load(store, "asked").address == ABANDON_ADDRESS


@pytest.mark.parametrize(
    ("content", "stdin", "message"),
    [
        (None, "export pass\nx\n", "wrong passphrase"),
        ("some text\n", "export pass\nx\n", "not an armored key"),
        ("truncated", "export pass\nx\n", "truncated"),
        (b"\xff\xfe\x00binary", "export pass\nx\n", "is not text"),
        (None, "", "standard input ended before the passphrase of the exported key"),
    ],
)
def test_bad_exports_are_one_line_and_leave_no_store(
    tmp_path: Path, content: str | bytes | None, stdin: str, message: str
) -> None:
    text = exported(Signer.from_mnemonic(ABANDON), "export pass")
    source = tmp_path / "key.pem"
    if content is None:
        source.write_text(text)
        stdin = stdin.replace("export pass", "not the passphrase") if stdin else stdin
    elif content == "truncated":
        source.write_text(text[: len(text) // 2])
    elif isinstance(content, bytes):
        source.write_bytes(content)
    else:
        source.write_text(content)
    store = tmp_path / "store.json"
    result = keys("import", str(source), "--key-file", str(store), stdin=stdin)
    one_line_error(result, 1, message)
    assert not store.exists()


def test_bad_mnemonics_and_uses_are_one_line(tmp_path: Path) -> None:
    store = tmp_path / "k.json"
    bad_checksum = " ".join(["abandon"] * 12)
    one_line_error(
        keys("import", "--mnemonic", "--key-file", str(store), stdin=f"{bad_checksum}\npw\n"),
        1,
        "bad checksum",
    )
    one_line_error(keys("import", "--key-file", str(store)), 2, "either an exported key FILE")
    one_line_error(
        keys("import", "--mnemonic", "--hd-path", "44/118", stdin=f"{ABANDON}\n"), 2, "--hd-path"
    )
    one_line_error(keys("import", str(tmp_path / "nope.pem"), "--key-file", str(store)), 1, "nope")
    one_line_error(keys("show", "--key-file", str(store)), 1, "does not exist")
    assert not store.exists()
    assert (
        keys("import", "--mnemonic", "--key-file", str(store), stdin=f"{ABANDON}\npw\n").exit_code
        == 0
    )
    one_line_error(
        keys("import", "--mnemonic", "--key-file", str(store), stdin=f"{ABANDON}\npw\n"),
        1,
        "exists; --force replaces it",
    )
    store.chmod(0o644)
    forced = keys(
        "import", "--mnemonic", "--force", "--key-file", str(store), stdin=f"{ABANDON}\nnew\n"
    )
    assert forced.exit_code == 0, forced.stderr
    assert Signer.load(store, "new").address == ABANDON_ADDRESS
    assert store.stat().st_mode & 0o777 == 0o600


def test_a_real_process_reads_secrets_from_its_standard_input(tmp_path: Path) -> None:
    """No terminal: the mnemonic and the passphrase are lines of stdin, never arguments."""
    store = tmp_path / "k.json"
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    done = subprocess.run(
        [sys.executable, "-m", "akcli", "keys", "import", "--mnemonic", "--key-file", str(store)],
        input=f"{' '.join(['abandon'] * 12)}\npw\n", capture_output=True, text=True, env=env,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "akcli", "keys", "import", "--mnemonic", "--key-file", str(store)],
        input=f"{ABANDON}\npw\n", capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, f"{ABANDON_ADDRESS} imported into {store}\n")
