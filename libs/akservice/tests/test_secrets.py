"""The vault: sealed files round-trip, refuse another key plainly, and rotation re-seals
everything and loses nothing when it is interrupted — even by a killed process."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from akservice import StartupError
from akservice.secrets import (
    FORMAT,
    KEY_BYTES,
    Vault,
    VaultError,
    key_id,
    read_key,
    seal,
    unseal,
)

KUBECONFIG = b"apiVersion: v1\nkind: Config\nusers: [{name: x, user: {token: s3cret}}]\n"
PROVIDER_KEY = b'{"format": "akash-provider-key/1", "ciphertext": "..."}\n'


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(tmp_path / "home" / "secret.key")


def test_a_new_key_is_32_random_bytes_for_the_owner_only(vault: Vault) -> None:
    key = vault.ensure_key()
    assert len(key) == KEY_BYTES
    assert stat.S_IMODE(vault.key_file.stat().st_mode) == 0o600
    assert vault.ensure_key() == key  # made once
    assert Vault(vault.root.parent / "other" / "secret.key").ensure_key() != key


def test_seal_and_open_round_trip_and_nothing_readable_is_left(vault: Vault) -> None:
    path = vault.seal("kubeconfig", KUBECONFIG)
    assert path == vault.root / "kubeconfig.sealed"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_bytes()
    assert b"s3cret" not in raw and b"apiVersion" not in raw
    document = json.loads(raw)
    assert document["format"] == FORMAT and document["name"] == "kubeconfig"
    assert document["key_id"] == key_id(read_key(vault.key_file))
    assert vault.open("kubeconfig") == KUBECONFIG
    source = vault.root.parent / "key.json"
    source.write_bytes(PROVIDER_KEY)
    vault.seal_file("provider-key", source)
    assert vault.open("provider-key") == PROVIDER_KEY
    assert vault.names() == ["kubeconfig", "provider-key"]
    assert not list(vault.root.glob(".*.tmp"))


def test_the_wrong_key_fails_clearly(vault: Vault, tmp_path: Path) -> None:
    vault.seal("kubeconfig", KUBECONFIG)
    other = os.urandom(KEY_BYTES)
    vault.key_file.write_bytes(other)  # someone else's key file in its place
    with pytest.raises(VaultError, match="was sealed with key .* wrong key file") as caught:
        vault.open("kubeconfig")
    assert isinstance(caught.value, StartupError)  # a service stops with this one line
    sealed = (vault.root / "kubeconfig.sealed").read_bytes()
    with pytest.raises(VaultError, match="wrong key file"):
        unseal(other, "kubeconfig", sealed)


def test_a_sealed_file_is_bound_to_its_name_and_tampering_shows(vault: Vault) -> None:
    key = vault.ensure_key()
    sealed = seal(key, "kubeconfig", KUBECONFIG)
    with pytest.raises(VaultError, match="holds 'kubeconfig', not 'provider-key'"):
        unseal(key, "provider-key", sealed)
    document = json.loads(sealed)
    document["name"] = "provider-key"  # renamed: the authenticated data says otherwise
    with pytest.raises(VaultError, match="does not authenticate"):
        unseal(key, "provider-key", json.dumps(document).encode())
    document = json.loads(sealed)
    cipher = bytearray(document["ciphertext"].encode())
    cipher[0] = ord("A") if cipher[0] != ord("A") else ord("B")
    document["ciphertext"] = cipher.decode()
    with pytest.raises(VaultError, match="damaged"):
        unseal(key, "kubeconfig", json.dumps(document).encode())
    with pytest.raises(VaultError, match="not an akash-provider-sealed/1 file"):
        unseal(key, "kubeconfig", b'{"format": "other"}')


def test_a_key_file_open_to_others_or_of_the_wrong_size_is_refused(vault: Vault) -> None:
    vault.ensure_key()
    vault.key_file.chmod(0o644)
    with pytest.raises(VaultError, match=r"open to others \(mode 0644\): chmod 600"):
        read_key(vault.key_file)
    vault.key_file.chmod(0o600)
    vault.key_file.write_bytes(b"short")
    with pytest.raises(VaultError, match="holds 5 bytes"):
        read_key(vault.key_file)
    with pytest.raises(VaultError, match="does not exist"):
        read_key(vault.root / "missing.key")
    with pytest.raises(VaultError, match="nothing is sealed as 'kubeconfig'"):
        vault.open("kubeconfig")
    with pytest.raises(VaultError, match="not a sealed file's name"):
        vault.seal("../escape", b"x")


def test_rotation_reseals_everything_and_the_old_key_no_longer_opens(vault: Vault) -> None:
    vault.seal("kubeconfig", KUBECONFIG)
    vault.seal("provider-key", PROVIDER_KEY)
    old = read_key(vault.key_file)
    old_files = {n: vault.path(n).read_bytes() for n in vault.names()}
    assert sorted(vault.rotate()) == ["kubeconfig", "provider-key"]
    new = read_key(vault.key_file)
    assert new != old
    assert not vault.old_key_file.exists() and not vault.new_key_file.exists()
    assert vault.open("kubeconfig") == KUBECONFIG
    assert vault.open("provider-key") == PROVIDER_KEY
    for name in vault.names():
        sealed = vault.path(name).read_bytes()
        assert sealed != old_files[name]
        with pytest.raises(VaultError, match="wrong key file"):
            unseal(old, name, sealed)
    vault.key_file.write_bytes(old)  # the old key back in place opens nothing
    with pytest.raises(VaultError, match="wrong key file"):
        vault.open("kubeconfig")


class Crash(Exception):
    pass


def test_a_rotation_interrupted_between_files_loses_nothing(vault: Vault) -> None:
    names = ["a", "b", "c"]
    for name in names:
        vault.seal(name, f"secret {name}".encode())
    old = read_key(vault.key_file)
    fresh = os.urandom(KEY_BYTES)

    def crash(name: str) -> None:
        raise Crash(name)  # after the first file: the others are still under the old key

    with pytest.raises(Crash):
        vault.rotate(fresh, between=crash)
    assert vault.old_key_file.exists() and vault.new_key_file.exists()
    assert read_key(vault.key_file) == old  # not promoted yet
    held = {n: json.loads(vault.path(n).read_bytes())["key_id"] for n in names}
    assert sorted(held.values()) == sorted([key_id(fresh), key_id(old), key_id(old)])
    # in that state every secret still opens (a service starting now)
    assert [vault.open(n) for n in names] == [f"secret {n}".encode() for n in names]
    # the next rotation finishes this one first, then makes its own
    assert sorted(vault.recover()) == sorted(n for n, k in held.items() if k == key_id(old))
    assert read_key(vault.key_file) == fresh
    assert not vault.old_key_file.exists() and not vault.new_key_file.exists()
    assert [vault.open(n) for n in names] == [f"secret {n}".encode() for n in names]


def test_a_rotation_killed_mid_way_loses_nothing(vault: Vault) -> None:
    names = [f"secret-{i}" for i in range(4)]
    for name in names:
        vault.seal(name, name.encode() * 10)
    # a real process, killed (no cleanup, no finally) after its second file
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from akservice.secrets import Vault
        done = []
        def between(name):
            done.append(name)
            if len(done) == 2:
                os._exit(9)
        Vault(Path({str(vault.key_file)!r})).rotate(between=between)
        """
    )
    killed = subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    assert killed.returncode == 9
    assert vault.new_key_file.exists()  # it was mid-way
    assert [vault.open(n) for n in names] == [n.encode() * 10 for n in names]
    assert sorted(vault.rotate()) == names  # finishes the killed one, then rotates again
    assert [vault.open(n) for n in names] == [n.encode() * 10 for n in names]
    ids = {json.loads(vault.path(n).read_bytes())["key_id"] for n in names}
    assert ids == {key_id(read_key(vault.key_file))}


def test_a_rotation_interrupted_after_the_new_key_is_in_place(vault: Vault) -> None:
    """The last step: the new key promoted, the old one not yet dropped."""
    vault.seal("kubeconfig", KUBECONFIG)
    old = read_key(vault.key_file)
    fresh = os.urandom(KEY_BYTES)
    (vault.root / "kubeconfig.sealed").write_bytes(seal(fresh, "kubeconfig", KUBECONFIG))
    vault.old_key_file.write_bytes(old)
    vault.old_key_file.chmod(0o600)
    vault.key_file.write_bytes(fresh)
    assert vault.recover() == []
    assert not vault.old_key_file.exists()
    assert vault.open("kubeconfig") == KUBECONFIG
