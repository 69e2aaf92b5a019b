"""Keys: BIP39 → BIP32 → secp256k1 → bech32, deterministic low-S signatures, key files."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from akchain.errors import KeyFileError
from akchain.keys import CURVE_ORDER, Signer, address_of, new_mnemonic, verify

# The BIP39 test mnemonic; its Cosmos address at m/44'/118'/0'/0/0 is published widely
# (Cosmos SDK keyring tests, Keplr docs) as cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4.
ABANDON = " ".join(["abandon"] * 11 + ["about"])


def test_the_bip39_test_mnemonic_gives_the_known_cosmos_address() -> None:
    signer = Signer.from_mnemonic(ABANDON)
    assert (
        address_of(signer.public_key, "cosmos") == "cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4"
    )
    assert signer.address == "akash19rl4cm2hmr8afy4kldpxz3fka4jguq0a3mq6x0"


def test_an_invalid_mnemonic_is_refused() -> None:
    with pytest.raises(ValueError, match="not a valid BIP39 mnemonic"):
        Signer.from_mnemonic(" ".join(["abandon"] * 12))


def test_new_mnemonics_are_valid_and_distinct() -> None:
    first, second = new_mnemonic(), new_mnemonic(12)
    assert len(first.split()) == 24 and len(second.split()) == 12
    assert Signer.from_mnemonic(first).address != Signer.from_mnemonic(second).address


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=300))
def test_signatures_are_deterministic_low_s_and_verify(message: bytes) -> None:
    signer = Signer.from_mnemonic(ABANDON)
    signature = signer.sign(message)
    assert signature == signer.sign(message)
    assert len(signature) == 64
    assert int.from_bytes(signature[32:], "big") <= CURVE_ORDER // 2
    assert verify(signer.public_key, message, signature)
    assert not verify(signer.public_key, message + b"x", signature)
    high_s = signature[:32] + (CURVE_ORDER - int.from_bytes(signature[32:], "big")).to_bytes(
        32, "big"
    )
    assert not verify(signer.public_key, message, high_s)


def test_a_key_file_round_trips_with_its_passphrase(tmp_path: Path) -> None:
    signer = Signer.from_mnemonic(ABANDON)
    path = tmp_path / "keys" / "provider.json"
    signer.save(path, "correct horse battery staple", name="provider", scrypt_n=2**12)

    loaded = Signer.load(path, "correct horse battery staple")
    assert loaded.address == signer.address
    assert loaded.sign(b"bid") == signer.sign(b"bid")
    assert loaded.reveal_mnemonic() == ABANDON
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "abandon" not in text
    assert json.loads(text)["address"] == signer.address


def test_a_wrong_passphrase_says_so(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    Signer.generate().save(path, "right", scrypt_n=2**12)
    with pytest.raises(KeyFileError, match=r"^wrong passphrase for key file .*k\.json$"):
        Signer.load(path, "wrong")


def test_damaged_or_missing_key_files_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="does not exist"):
        Signer.load(tmp_path / "missing.json", "x")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(KeyFileError, match="not readable JSON"):
        Signer.load(garbage, "x")
    path = tmp_path / "k.json"
    Signer.generate().save(path, "pw", scrypt_n=2**12)
    document = json.loads(path.read_text())
    document["address"] = Signer.generate().address  # swapped address: authenticated data changes
    path.write_text(json.dumps(document))
    with pytest.raises(KeyFileError):
        Signer.load(path, "pw")


def test_secrets_stay_out_of_reprs() -> None:
    signer = Signer.from_mnemonic(ABANDON)
    assert repr(signer) == f"Signer({signer.address})"
    assert "abandon" not in repr(signer)
    assert "abandon" not in str(signer)
