"""Account keys: BIP39 mnemonics, BIP32 derivation, secp256k1 signing, key files.

A mnemonic gives a seed; BIP32 derives the account key at ``m/44'/118'/0'/0/0``; the
address is ``akash1…`` over RIPEMD-160(SHA-256(compressed public key)), as in the Cosmos SDK.
Signatures are deterministic (RFC 6979), low-S, 64 bytes ``r || s`` — what Cosmos accepts
and what Akash's own tools produce for the same key and message.

Secrets stay inside :class:`Signer`: its ``repr`` shows the address only, and a key file
keeps them encrypted with AES-256-GCM under a key stretched from a passphrase by scrypt.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from mnemonic import Mnemonic

from akchain.errors import KeyFileError
from akchain.versions import BECH32_PREFIX, HD_PATH
from aktypes.address import encode_address

CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_HALF_ORDER = CURVE_ORDER // 2
_HARDENED = 0x80000000
KEY_FILE_FORMAT = "akash-provider-key/1"
_WORDS = Mnemonic("english")


def new_mnemonic(words: int = 24) -> str:
    """A fresh BIP39 English mnemonic of 12 or 24 words."""
    strength = {12: 128, 24: 256}.get(words)
    if strength is None:
        raise ValueError("a mnemonic has 12 or 24 words")
    phrase: str = _WORDS.generate(strength=strength)
    return phrase


def _compressed(private: ec.EllipticCurvePrivateKey) -> bytes:
    return private.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint
    )


def _derive(seed: bytes, path: str) -> int:
    """BIP32: the private key (as an integer) at ``path`` below ``seed``."""
    digest = hmac.new(b"Bitcoin seed", seed, hashlib.sha512).digest()
    key, chain = int.from_bytes(digest[:32], "big"), digest[32:]
    steps = path.split("/")
    if steps[0] != "m":
        raise ValueError(f"derivation path {path!r} must start with m/")
    for step in steps[1:]:
        index = int(step.rstrip("'")) + (_HARDENED if step.endswith("'") else 0)
        if index >= _HARDENED:
            data = b"\x00" + key.to_bytes(32, "big")
        else:
            data = _compressed(ec.derive_private_key(key, ec.SECP256K1()))
        digest = hmac.new(chain, data + index.to_bytes(4, "big"), hashlib.sha512).digest()
        tweak = int.from_bytes(digest[:32], "big")
        key, chain = (tweak + key) % CURVE_ORDER, digest[32:]
        if tweak >= CURVE_ORDER or key == 0:  # pragma: no cover - probability ~2^-127
            raise ValueError("invalid child key; use another index")
    return key


def address_of(public_key: bytes, prefix: str = BECH32_PREFIX) -> str:
    """The bech32 account address of a compressed secp256k1 public key."""
    sha = hashlib.sha256(public_key).digest()
    return encode_address(hashlib.new("ripemd160", sha).digest(), prefix)


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Check a 64-byte ``r || s`` signature of SHA-256(``message``); high-S is refused."""
    if len(signature) != 64 or len(public_key) != 33:
        return False
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    if not (0 < r < CURVE_ORDER and 0 < s <= _HALF_ORDER):
        return False
    try:
        point = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256K1(), public_key)
        point.verify(encode_dss_signature(r, s), message, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError):
        return False
    return True


class Signer:
    """One account's private key. Knows its address; never shows its secret."""

    def __init__(self, secret: int, *, mnemonic: str | None = None) -> None:
        if not 0 < secret < CURVE_ORDER:
            raise ValueError("private key out of range")
        self._private = ec.derive_private_key(secret, ec.SECP256K1())
        self._mnemonic = mnemonic
        self.public_key = _compressed(self._private)
        self.address = address_of(self.public_key)

    @classmethod
    def from_mnemonic(cls, mnemonic: str, *, path: str = HD_PATH, passphrase: str = "") -> Signer:
        words = " ".join(mnemonic.split())
        if not _WORDS.check(words):
            raise ValueError("not a valid BIP39 mnemonic (unknown word or bad checksum)")
        seed = Mnemonic.to_seed(words, passphrase=passphrase)
        return cls(_derive(seed, path), mnemonic=words)

    @classmethod
    def generate(cls) -> Signer:
        return cls.from_mnemonic(new_mnemonic())

    def sign(self, message: bytes) -> bytes:
        """Deterministic low-S signature of SHA-256(``message``): 64 bytes ``r || s``."""
        der = self._private.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        r, s = decode_dss_signature(der)
        if s > _HALF_ORDER:
            s = CURVE_ORDER - s
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    def reveal_mnemonic(self) -> str | None:
        """The mnemonic, for the one place that must show it (creating a key)."""
        return self._mnemonic

    def __repr__(self) -> str:
        return f"Signer({self.address})"

    # -- key files ------------------------------------------------------------------------
    def save(self, path: Path, passphrase: str, *, name: str = "", scrypt_n: int = 2**15) -> None:
        """Write an encrypted key file (mode 0600)."""
        if not passphrase:
            raise KeyFileError("a key file needs a passphrase")
        salt, nonce = os.urandom(16), os.urandom(12)
        secret = {
            "private_key": self._private.private_numbers().private_value.to_bytes(32, "big").hex(),
            "mnemonic": self._mnemonic,
        }
        aad = f"{name}|{self.address}".encode()
        cipher = AESGCM(_stretch(passphrase, salt, scrypt_n)).encrypt(
            nonce, json.dumps(secret).encode(), aad
        )
        document = {
            "format": KEY_FILE_FORMAT,
            "name": name,
            "address": self.address,
            "kdf": {"name": "scrypt", "n": scrypt_n, "r": 8, "p": 1, "salt": _b64(salt)},
            "cipher": {"name": "aes-256-gcm", "nonce": _b64(nonce)},
            "ciphertext": _b64(cipher),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)  # a file replaced keeps its mode otherwise
        with os.fdopen(descriptor, "w") as handle:
            json.dump(document, handle, indent=2)

    @classmethod
    def load(cls, path: Path, passphrase: str) -> Signer:
        """Read a key file; ``KeyFileError`` says plainly what is wrong."""
        document = _read_document(path)
        try:
            kdf = document["kdf"]
            aad = f"{document['name']}|{document['address']}".encode()
            key = _stretch(passphrase, base64.b64decode(kdf["salt"]), int(kdf["n"]))
            plain = AESGCM(key).decrypt(
                base64.b64decode(document["cipher"]["nonce"]),
                base64.b64decode(document["ciphertext"]),
                aad,
            )
        except InvalidTag as exc:
            raise KeyFileError(f"wrong passphrase for key file {path}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise KeyFileError(f"key file {path} is damaged: {exc}") from exc
        secret = json.loads(plain)
        signer = cls(int(secret["private_key"], 16), mnemonic=secret.get("mnemonic"))
        if signer.address != document["address"]:
            raise KeyFileError(f"key file {path} is damaged: its key does not match its address")
        return signer


def key_file_address(path: Path) -> str:
    """The address a key file names, read without its passphrase (it is not secret)."""
    document = _read_document(path)
    address = document.get("address")
    if not isinstance(address, str) or not address.startswith(f"{BECH32_PREFIX}1"):
        raise KeyFileError(f"key file {path} is damaged: it names no {BECH32_PREFIX} address")
    return address


def _read_document(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise KeyFileError(f"key file {path} does not exist") from exc
    except (OSError, ValueError) as exc:
        raise KeyFileError(f"key file {path} is not readable JSON: {exc}") from exc
    if not isinstance(document, dict) or document.get("format") != KEY_FILE_FORMAT:
        raise KeyFileError(f"{path} is not an {KEY_FILE_FORMAT} key file")
    return document


def _stretch(passphrase: str, salt: bytes, n: int) -> bytes:
    return Scrypt(salt=salt, length=32, n=n, r=8, p=1).derive(passphrase.encode())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
