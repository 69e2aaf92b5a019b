"""Private keys exported by the Cosmos SDK (``provider-services keys export``).

The export is an OpenPGP-style ASCII armor block::

    -----BEGIN TENDERMINT PRIVATE KEY-----
    kdf: bcrypt
    salt: <16 bytes, hex>
    type: secp256k1

    <base64 body, 64 characters a line>
    =<base64 CRC-24 of the body, optional>
    -----END TENDERMINT PRIVATE KEY-----

The body is an XSalsa20-Poly1305 secretbox with its 24-byte nonce in front. Its key is
SHA-256 of the whole bcrypt string (``$2a$12$<salt><hash>``, 60 characters) made from the
passphrase and the salt at cost 12: the SDK's bcrypt takes the salt as given instead of
drawing one. Newer SDKs may write ``kdf: scrypt`` with ``kdfparams: n=…,r=…,p=…,dklen=…``
instead; both are read. The plaintext is the Amino encoding of the key: the 4-byte prefix
of ``tendermint/PrivKeySecp256k1``, the length 32, and the 32 key bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

import bcrypt
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

from akchain.errors import KeyFileError
from akchain.keys import CURVE_ORDER, Signer

BLOCK_TYPE = "TENDERMINT PRIVATE KEY"
BCRYPT_COST = 12  # the SDK's BcryptSecurityParameter
SECP256K1_AMINO_NAME = "tendermint/PrivKeySecp256k1"
_BEGIN = re.compile(r"^-----BEGIN (.+)-----$")
_END = "-----END "
_STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BCRYPT_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_TO_BCRYPT = str.maketrans(_STD, _BCRYPT_ALPHABET)
_SCRYPT_PARAMS = re.compile(r"^n=(\d+),r=(\d+),p=(\d+),dklen=(\d+)$")
_NONCE = 24


class ArmorError(KeyFileError):
    """The text is not a readable armored private key."""


class WrongPassphrase(KeyFileError):
    """The key decrypts to nothing with this passphrase."""


def amino_prefix(name: str) -> bytes:
    """Amino's 4-byte prefix of a registered type name."""
    digest = hashlib.sha256(name.encode()).digest().lstrip(b"\x00")
    return digest[3:].lstrip(b"\x00")[:4]


_SECP256K1_PREFIX = amino_prefix(SECP256K1_AMINO_NAME) + b"\x20"


def crc24(data: bytes) -> int:
    """The OpenPGP checksum (RFC 4880, 6.1)."""
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def decode_armor(text: str) -> tuple[str, dict[str, str], bytes]:
    """The block type, headers and body of the first armor block in ``text``."""
    lines = iter(text.splitlines())
    block_type = ""
    for line in lines:
        if match := _BEGIN.match(line.strip()):
            block_type = match.group(1)
            break
    else:
        raise ArmorError("no -----BEGIN …----- line: not an armored key")
    headers: dict[str, str] = {}
    for raw in lines:
        line = raw.strip()
        if not line:
            break
        name, sep, value = line.partition(": ")
        if not sep:
            raise ArmorError(f"header line {line[:40]!r} is not 'name: value'")
        headers[name] = value
    else:
        raise ArmorError("the armor ends before its body (truncated?)")
    body, checksum, ended = [], None, False
    for raw in lines:
        line = raw.strip()
        if line.startswith(_END):
            ended = True
            break
        if len(line) == 5 and line.startswith("="):
            checksum = line[1:]
            continue
        body.append(line)
    if not ended:
        raise ArmorError("no -----END …----- line: the armor is truncated")
    try:
        data = base64.b64decode("".join(body), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ArmorError(f"the armor's body is not base64 ({exc})") from None
    if checksum is not None:
        try:
            expected = int.from_bytes(base64.b64decode(checksum, validate=True), "big")
        except (binascii.Error, ValueError):
            raise ArmorError("the armor's checksum line is not base64") from None
        if expected != crc24(data):
            raise ArmorError("the armor's checksum does not match its body (damaged or truncated)")
    return block_type, headers, data


def _bcrypt_key(passphrase: str, salt: bytes, cost: int) -> bytes:
    if len(salt) != 16:
        raise ArmorError(f"the bcrypt salt has {len(salt)} bytes, not 16")
    encoded_salt = base64.b64encode(salt).decode().rstrip("=").translate(_TO_BCRYPT)
    # bcrypt reads at most 72 bytes of the passphrase: what the SDK's Blowfish key schedule sees.
    secret = passphrase.encode()[:72]
    if b"\x00" in secret:
        raise WrongPassphrase("a passphrase with a NUL character cannot be used")
    hashed = bcrypt.hashpw(secret, f"$2a${cost:02d}${encoded_salt}".encode())
    return hashlib.sha256(hashed).digest()


def _scrypt_key(passphrase: str, salt: bytes, params: str) -> bytes:
    match = _SCRYPT_PARAMS.match(params.strip())
    if match is None:
        raise ArmorError(f"kdfparams {params!r} is not n=…,r=…,p=…,dklen=…")
    n, r, p, length = (int(g) for g in match.groups())
    if length != 32 or n < 2 or n & (n - 1) or n > 2**22 or not 0 < r * p <= 64:
        raise ArmorError(f"unusable scrypt parameters {params!r}")
    return Scrypt(salt=salt, length=length, n=n, r=r, p=p).derive(passphrase.encode())


def derive_key(
    headers: dict[str, str], passphrase: str, *, bcrypt_cost: int = BCRYPT_COST
) -> bytes:
    """The secretbox key the headers' KDF makes from ``passphrase``."""
    try:
        salt = bytes.fromhex(headers.get("salt", ""))
    except ValueError:
        raise ArmorError("the salt header is not hexadecimal") from None
    kdf = headers.get("kdf", "")
    if kdf == "bcrypt":
        return _bcrypt_key(passphrase, salt, bcrypt_cost)
    if kdf == "scrypt":
        return _scrypt_key(passphrase, salt, headers.get("kdfparams", ""))
    raise ArmorError(f"unsupported key derivation {kdf!r} (bcrypt and scrypt are read)")


def unarmor_private_key(text: str, passphrase: str, *, bcrypt_cost: int = BCRYPT_COST) -> Signer:
    """The account key of a Cosmos SDK armored export; ``KeyFileError`` says what is wrong.

    ``bcrypt_cost`` is the SDK's ``BcryptSecurityParameter``, 12 in every released binary.
    """
    block_type, headers, data = decode_armor(text)
    if block_type != BLOCK_TYPE:
        raise ArmorError(f"this is a {block_type!r} block, not a {BLOCK_TYPE!r}")
    algo = headers.get("type", "secp256k1")
    if algo != "secp256k1":
        raise ArmorError(f"key type {algo!r} is not supported (Akash accounts are secp256k1)")
    key = derive_key(headers, passphrase, bcrypt_cost=bcrypt_cost)
    if len(data) <= _NONCE + SecretBox.MACBYTES:
        raise ArmorError("the encrypted key is too short (truncated?)")
    try:
        plain = SecretBox(key).decrypt(data[_NONCE:], data[:_NONCE])
    except CryptoError:
        raise WrongPassphrase("wrong passphrase for the exported key") from None
    if len(plain) != 37 or not plain.startswith(_SECP256K1_PREFIX):
        raise ArmorError("the decrypted key is not an Amino secp256k1 private key")
    secret = int.from_bytes(plain[5:], "big")
    if not 0 < secret < CURVE_ORDER:
        raise ArmorError("the decrypted key is out of the curve's range")
    return Signer(secret)
