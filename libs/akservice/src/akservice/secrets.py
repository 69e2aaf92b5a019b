"""Secrets at rest: the provider's kubeconfig (and key file), sealed with one key file.

The key file (``~/.akash-provider/secret.key`` by default, mode 0600) holds 32 random
bytes. Each secret is a ``<name>.sealed`` file beside it: a JSON document, AES-256-GCM as
the provider's key file already is (:mod:`akchain.keys`), with the id of the key that
sealed it, bound with the secret's name into the authenticated data so a sealed file
cannot be passed off as another::

    {"format": "akash-provider-sealed/1", "name": "kubeconfig", "key_id": "3f9c…",
     "cipher": {"name": "aes-256-gcm", "nonce": "…"}, "ciphertext": "…"}

Rotation never loses a secret, whenever it is interrupted. It keeps the current key as
``secret.key.old`` and writes the new one to ``secret.key.new``; re-seals each file with
the new key (written beside it, fsynced, renamed over it); renames the new key over
``secret.key``; and only then drops ``.old``. Every file names its key, and opening tries
the three key files, so each secret opens at every step; the next rotation (or
:meth:`Vault.recover`) finishes an interrupted one first. Errors are :class:`VaultError`.

A service is given a sealed secret by its path (``AP_KUBECONFIG=~/.akash-provider/
kubeconfig.sealed``): :func:`open_sealed` opens it with the key file beside it, in memory;
:func:`kubeconfig_of` reads a kubeconfig, sealed or not.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from akservice.health import StartupError

FORMAT = "akash-provider-sealed/1"
KEY_BYTES = 32
DEFAULT_KEY_FILE = Path("~/.akash-provider/secret.key")
SUFFIX = ".sealed"
KUBECONFIG = "kubeconfig"
PROVIDER_KEY = "provider-key"
_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{0,62}$")


class VaultError(StartupError):
    """A key or sealed file that is missing, unreadable, damaged, or the wrong key (a
    service that meets one at start stops with its message)."""


def is_sealed(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


def open_sealed(path: Path) -> bytes:
    """What the sealed file ``path`` holds, opened with the key file beside it
    (``secret.key``, as ``akash-provider cluster onboard`` leaves them)."""
    path = path.expanduser()
    return Vault(path.parent / DEFAULT_KEY_FILE.name).open(path.name.removesuffix(SUFFIX))


def kubeconfig_of(path: Path) -> dict[str, object]:
    """The kubeconfig in ``path`` (sealed or not) as a dict, for a client made from it."""
    try:
        text = open_sealed(path) if is_sealed(path) else path.expanduser().read_bytes()
    except OSError as exc:
        raise VaultError(f"kubeconfig {path} cannot be read: {exc.strerror}") from None
    loaded = yaml.safe_load(text)
    if not isinstance(loaded, dict):
        raise VaultError(f"{path} does not hold a kubeconfig (a YAML mapping)")
    return loaded


def new_key() -> bytes:
    return os.urandom(KEY_BYTES)


def key_id(key: bytes) -> str:
    """A short public name of a key: which key sealed a file, without showing the key."""
    return hashlib.sha256(b"akash-provider-vault/" + key).hexdigest()[:16]


def seal(key: bytes, name: str, plain: bytes) -> bytes:
    """The sealed document of ``plain`` under ``key``, bound to ``name``."""
    nonce, kid = os.urandom(12), key_id(key)
    cipher = AESGCM(key).encrypt(nonce, plain, _aad(name, kid))
    document = {
        "format": FORMAT,
        "name": name,
        "key_id": kid,
        "cipher": {"name": "aes-256-gcm", "nonce": _b64(nonce)},
        "ciphertext": _b64(cipher),
    }
    return json.dumps(document, indent=2).encode() + b"\n"


def unseal(key: bytes, name: str, sealed: bytes, *, where: str = "sealed data") -> bytes:
    """What :func:`seal` sealed; VaultError for another key, another name or damage."""
    document = _Sealed.read(sealed, where)
    if document.name != name:
        raise VaultError(f"{where} holds {document.name!r}, not {name!r}")
    if document.key_id != key_id(key):
        raise VaultError(
            f"{where} was sealed with key {document.key_id}, not with this key "
            f"({key_id(key)}): wrong key file"
        )
    try:
        return AESGCM(key).decrypt(document.nonce, document.ciphertext, _aad(name, key_id(key)))
    except InvalidTag:
        raise VaultError(f"{where} is damaged: it does not authenticate") from None


def read_key(path: Path) -> bytes:
    """The key in ``path``: 32 bytes, readable by its owner only."""
    try:
        mode = path.stat().st_mode
        key = path.read_bytes()
    except FileNotFoundError:
        raise VaultError(f"key file {path} does not exist") from None
    except OSError as exc:
        raise VaultError(f"key file {path} cannot be read: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise VaultError(
            f"key file {path} is open to others (mode {stat.S_IMODE(mode):04o}): chmod 600 it"
        )
    if len(key) != KEY_BYTES:
        raise VaultError(f"key file {path} holds {len(key)} bytes, not a {KEY_BYTES}-byte key")
    return key


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` so a crash leaves the old or the new, never half:
    write beside it, fsync, rename over it, fsync the folder."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(descriptor, mode)  # a leftover temporary may have had another mode
        os.write(descriptor, data)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)
    _sync_folder(path.parent)


class Vault:
    """The sealed files beside one key file."""

    def __init__(self, key_file: Path = DEFAULT_KEY_FILE) -> None:
        self.key_file = key_file.expanduser()
        self.root = self.key_file.parent

    @property
    def new_key_file(self) -> Path:
        return self.key_file.with_name(self.key_file.name + ".new")

    @property
    def old_key_file(self) -> Path:
        return self.key_file.with_name(self.key_file.name + ".old")

    def path(self, name: str) -> Path:
        if not _NAME.match(name):
            raise VaultError(f"{name!r} is not a sealed file's name (a-z, 0-9, '.', '-')")
        return self.root / f"{name}{SUFFIX}"

    def names(self) -> list[str]:
        """The sealed files there are, by name."""
        if not self.root.is_dir():
            return []
        return sorted(p.name.removesuffix(SUFFIX) for p in self.root.glob(f"*{SUFFIX}"))

    def ensure_key(self) -> bytes:
        """The key, made (32 random bytes, 0600) when there is none yet."""
        if not self.key_file.exists() and not self.new_key_file.exists():
            write_atomically(self.key_file, new_key())
        return read_key(self.key_file)

    def seal(self, name: str, plain: bytes) -> Path:
        """Seal ``plain`` as ``name`` (replacing what was sealed as ``name``)."""
        target = self.path(name)
        with self._locked():
            self._finish()  # never seal with a key a half-done rotation is replacing
            write_atomically(target, seal(self.ensure_key(), name, plain))
            return target

    def seal_file(self, name: str, source: Path) -> Path:
        try:
            plain = source.read_bytes()
        except OSError as exc:
            raise VaultError(f"cannot read {source}: {exc.strerror}") from None
        return self.seal(name, plain)

    def open(self, name: str) -> bytes:
        """What is sealed as ``name``; it opens even in the middle of a rotation."""
        path = self.path(name)
        try:
            sealed = path.read_bytes()
        except FileNotFoundError:
            raise VaultError(f"nothing is sealed as {name!r} ({path} does not exist)") from None
        except OSError as exc:
            raise VaultError(f"{path} cannot be read: {exc.strerror}") from None
        wanted = _Sealed.read(sealed, str(path)).key_id
        keys = self._keys()
        if wanted not in keys:
            current = read_key(self.key_file)  # says why when the key file itself is bad
            raise VaultError(
                f"{path} was sealed with key {wanted}, but {self.key_file} holds key "
                f"{key_id(current)}: wrong key file"
            )
        return unseal(keys[wanted], name, sealed, where=str(path))

    def rotate(
        self, key: bytes | None = None, *, between: Callable[[str], None] | None = None
    ) -> list[str]:
        """Re-seal every file with a new key (``key``, else 32 random bytes); the names
        re-sealed. ``between`` runs after each file (tests interrupt there)."""
        with self._locked():
            self._finish()
            current = read_key(self.key_file)
            fresh = key if key is not None else new_key()
            if len(fresh) != KEY_BYTES:
                raise VaultError(f"a key is {KEY_BYTES} bytes, not {len(fresh)}")
            write_atomically(self.old_key_file, current)
            write_atomically(self.new_key_file, fresh)
            return self._finish(between)

    def recover(self) -> list[str]:
        """Finish a rotation that was interrupted (nothing when none was)."""
        with self._locked():
            return self._finish()

    # -- inside -----------------------------------------------------------------------
    def _finish(self, between: Callable[[str], None] | None = None) -> list[str]:
        """Bring every file under the newest key, then make that key the key."""
        new = read_key(self.new_key_file) if self.new_key_file.exists() else None
        if new is None and not self.key_file.exists():
            return []  # no key yet: nothing sealed either
        target = new if new is not None else read_key(self.key_file)
        keys = self._keys()
        resealed: list[str] = []
        for name in self.names():
            path = self.path(name)
            sealed = path.read_bytes()
            held = _Sealed.read(sealed, str(path)).key_id
            if held == key_id(target):
                continue
            if held not in keys:
                raise VaultError(f"{path} was sealed with key {held}, which no key file holds")
            plain = unseal(keys[held], name, sealed, where=str(path))
            write_atomically(path, seal(target, name, plain))
            resealed.append(name)
            if between is not None:
                between(name)
        if new is not None:
            os.replace(self.new_key_file, self.key_file)
            _sync_folder(self.root)
        if self.old_key_file.exists():
            self.old_key_file.unlink()
            _sync_folder(self.root)
        return resealed

    def _keys(self) -> dict[str, bytes]:
        """The keys of the key file and of a rotation under way, by id."""
        found = {}
        for path in (self.key_file, self.new_key_file, self.old_key_file):
            if path.exists():
                key = read_key(path)
                found[key_id(key)] = key
        return found

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time (two rotations at once would each trust the other's keys)."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(self.root / ".vault.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)


@dataclass(frozen=True)
class _Sealed:
    name: str
    key_id: str
    nonce: bytes
    ciphertext: bytes

    @classmethod
    def read(cls, sealed: bytes, where: str) -> _Sealed:
        try:
            document = json.loads(sealed)
        except ValueError:
            raise VaultError(f"{where} is not a sealed file (not JSON)") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise VaultError(f"{where} is not an {FORMAT} file")
        try:
            return cls(
                name=str(document["name"]),
                key_id=str(document["key_id"]),
                nonce=base64.b64decode(document["cipher"]["nonce"], validate=True),
                ciphertext=base64.b64decode(document["ciphertext"], validate=True),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise VaultError(f"{where} is damaged: {type(exc).__name__} {exc}") from None


def _aad(name: str, kid: str) -> bytes:
    return f"{FORMAT}|{name}|{kid}".encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
