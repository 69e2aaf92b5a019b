"""Cosmos SDK armored key exports: built here from the format's definition, and the SDK's own."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import bcrypt
import pytest
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from nacl.secret import SecretBox

from akchain.armor import ArmorError, WrongPassphrase, unarmor_private_key
from akchain.errors import KeyFileError
from akchain.keys import Signer

ABANDON = " ".join(["abandon"] * 11 + ["about"])
VECTOR = Path(__file__).parents[1] / "data" / "cosmos-sdk" / "keyring-import.armor"
VECTOR_PASSPHRASE = "this passphrase has been used for all test vectors"  # noqa: S105
SALT = bytes.fromhex("00112233445566778899AABBCCDDEEFF")
NONCE = bytes(range(24))
# Amino: sha256("tendermint/PrivKeySecp256k1") → prefix e1b0f79b, then the length 32.
AMINO_SECP256K1 = bytes.fromhex("e1b0f79b20")


def export(
    secret: bytes,
    passphrase: str,
    *,
    cost: int = 12,
    headers: str = "kdf: bcrypt\nsalt: 00112233445566778899AABBCCDDEEFF\ntype: secp256k1",
) -> str:
    """``provider-services keys export`` as the SDK defines it (without the optional
    checksum line, which Go's armor reader does not require)."""
    salt = base64.b64encode(SALT).decode().rstrip("=")
    salt = salt.translate(
        str.maketrans(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        )
    )
    key = hashlib.sha256(bcrypt.hashpw(passphrase.encode(), f"$2a${cost}${salt}".encode())).digest()
    box = SecretBox(key).encrypt(AMINO_SECP256K1 + secret, NONCE)
    body = base64.b64encode(bytes(box)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([
        "-----BEGIN TENDERMINT PRIVATE KEY-----", headers, "", *lines,
        "-----END TENDERMINT PRIVATE KEY-----",
    ])  # fmt: skip


def secret_of(signer: Signer) -> bytes:
    return signer._private.private_numbers().private_value.to_bytes(32, "big")


def test_an_export_of_the_test_mnemonic_imports_to_its_address() -> None:
    known = Signer.from_mnemonic(ABANDON)
    armored = export(secret_of(known), "export passphrase")
    assert unarmor_private_key(armored, "export passphrase").address == known.address
    assert known.address == "akash19rl4cm2hmr8afy4kldpxz3fka4jguq0a3mq6x0"


def test_the_sdk_keyring_test_vector_imports_and_its_checksum_is_checked() -> None:
    text = VECTOR.read_text()
    signer = unarmor_private_key(text, VECTOR_PASSPHRASE, bcrypt_cost=10)
    assert signer.address == "akash1cau0jdet9fya256jhaqrk2jsmgc5muqdjyf0ug"
    with pytest.raises(WrongPassphrase):
        unarmor_private_key(text, "wrong passphrase", bcrypt_cost=10)
    with pytest.raises(WrongPassphrase):  # the SDK's "wrong armor" case: another salt
        unarmor_private_key(text.replace("salt: 6B", "salt: 7B"), VECTOR_PASSPHRASE, bcrypt_cost=10)
    with pytest.raises(ArmorError, match="checksum does not match"):
        unarmor_private_key(text.replace("=/zZh", "=/zZi"), VECTOR_PASSPHRASE, bcrypt_cost=10)


def test_a_long_passphrase_counts_to_72_bytes_as_in_the_sdk() -> None:
    known = Signer.from_mnemonic(ABANDON)
    long = "x" * 72
    armored = export(secret_of(known), long, cost=4)
    assert unarmor_private_key(armored, long + "ignored", bcrypt_cost=4).address == known.address


def test_an_scrypt_export_of_a_newer_sdk_imports() -> None:
    known = Signer.from_mnemonic(ABANDON)
    key = Scrypt(salt=SALT, length=32, n=2**10, r=8, p=1).derive(b"pw")
    box = bytes(SecretBox(key).encrypt(AMINO_SECP256K1 + secret_of(known), NONCE))
    armored = "\n".join([
        "-----BEGIN TENDERMINT PRIVATE KEY-----", "kdf: scrypt",
        "kdfparams: n=1024,r=8,p=1,dklen=32", f"salt: {SALT.hex().upper()}", "type: secp256k1",
        "", base64.b64encode(box).decode(), "-----END TENDERMINT PRIVATE KEY-----",
    ])  # fmt: skip
    assert unarmor_private_key(armored, "pw").address == known.address


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda t: "", "no -----BEGIN"),
        (lambda t: "hello\nworld\n", "no -----BEGIN"),
        (lambda t: t.split("\n\n")[0], "ends before its body"),
        (lambda t: t.rsplit("\n", 1)[0], "truncated"),
        (lambda t: t.replace("PRIVATE KEY", "PUBLIC KEY"), "not a 'TENDERMINT PRIVATE KEY'"),
        (lambda t: t.replace("kdf: bcrypt", "kdf: argon2"), "unsupported key derivation"),
        (lambda t: t.replace("type: secp256k1", "type: ed25519"), "'ed25519' is not supported"),
        (lambda t: t.replace("salt: 0011", "salt: zz11"), "not hexadecimal"),
        (lambda t: t.replace("salt: 0011", "salt: 11"), "15 bytes, not 16"),
        (lambda t: t.replace("kdf: bcrypt", "kdf bcrypt"), "is not 'name: value'"),
    ],
)
def test_bad_exports_say_what_is_wrong(mangle: object, message: str) -> None:
    text = export(secret_of(Signer.from_mnemonic(ABANDON)), "pw", cost=4)
    with pytest.raises(ArmorError, match=message):
        unarmor_private_key(mangle(text), "pw", bcrypt_cost=4)  # type: ignore[operator]


def test_a_truncated_body_or_a_wrong_passphrase_is_one_error() -> None:
    text = export(secret_of(Signer.from_mnemonic(ABANDON)), "pw", cost=4)
    lines = text.splitlines()
    body = lines[5]
    cut = "\n".join([*lines[:5], body[:20], lines[-1]])
    with pytest.raises(ArmorError, match="too short"):
        unarmor_private_key(cut, "pw", bcrypt_cost=4)
    with pytest.raises(KeyFileError, match="wrong passphrase"):
        unarmor_private_key(text, "not it", bcrypt_cost=4)
    with pytest.raises(ArmorError, match="not base64"):
        unarmor_private_key(text.replace(body, body[:-3] + "!!!"), "pw", bcrypt_cost=4)


def test_something_else_inside_the_box_is_refused() -> None:
    text = export(b"\x01" * 31, "pw", cost=4)  # 36 bytes: not an Amino secp256k1 key
    with pytest.raises(ArmorError, match="not an Amino secp256k1 private key"):
        unarmor_private_key(text, "pw", bcrypt_cost=4)
