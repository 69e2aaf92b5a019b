"""What CometBFT adds around the app's blocks: the validator, block headers, commits.

The devnet has one validator and no consensus rounds, so some of this is computed the way
CometBFT computes it and some is only well-formed:

- real (CometBFT's own rules over the devnet's data): the block hash (the Merkle root of the
  header's fields), ``data_hash`` (RFC 6962 Merkle root of the transactions' SHA-256),
  ``validators_hash``/``next_validators_hash`` (of the one validator's ed25519 key and
  power), ``consensus_hash`` (of the block size and gas limits), ``evidence_hash`` (no
  evidence), ``last_results_hash`` (of the previous block's deterministic result fields),
  ``last_commit_hash`` (of the commit below), and each commit's signature, an ed25519
  signature of CometBFT's canonical precommit vote;
- deterministic but not CometBFT's: the part set hash (of the block hash, not of the
  block's encoded parts) and the app hash (a chain of SHA-256 over each block's state
  writes, not an IAVL root). Blocks made before the devnet hashed headers keep their older
  hash (SHA-256 over height, time, previous hash and transaction hashes).

The validator's key is derived from the chain id, so a devnet's validator is the same
across restarts and homes of the same chain.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from akdevnet.store import Database, Doc

VOTING_POWER = 10
BLOCK_MAX_BYTES = 22_020_096
BLOCK_MAX_GAS = -1
PRECOMMIT = 2
BLOCK_ID_FLAG_COMMIT = 2
EMPTY_HASH = hashlib.sha256(b"").digest()


# -- protobuf wire format, for the few messages CometBFT hashes or signs ----------------------
def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _uint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value) if value else b""


def _bytes(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value if value else b""


def _sfixed64(number: int, value: int) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<q", value) if value else b""


def _timestamp(time: str) -> bytes:
    seconds, nanos = parse_time(time)
    return _uint(1, seconds) + _uint(2, nanos)


def parse_time(time: str) -> tuple[int, int]:
    """Seconds and nanoseconds of an RFC 3339 time with up to nine fractional digits."""
    whole, _, fraction = time.rstrip("Z").partition(".")
    moment = datetime.fromisoformat(whole + "+00:00")
    return int(moment.timestamp()), int((fraction or "0").ljust(9, "0")[:9])


# -- hashes ----------------------------------------------------------------------------------
def merkle_root(items: Sequence[bytes]) -> bytes:
    """RFC 6962 Merkle root, as CometBFT's ``merkle.HashFromByteSlices``."""
    if not items:
        return EMPTY_HASH
    if len(items) == 1:
        return hashlib.sha256(b"\x00" + items[0]).digest()
    split = 1 << ((len(items) - 1).bit_length() - 1)
    left, right = merkle_root(items[:split]), merkle_root(items[split:])
    return hashlib.sha256(b"\x01" + left + right).digest()


def merkle_proof(items: Sequence[bytes], index: int) -> list[bytes]:
    """The aunts of ``items[index]`` (leaf to root), as CometBFT's ``merkle.Proof``."""
    if len(items) <= 1:
        return []
    split = 1 << ((len(items) - 1).bit_length() - 1)
    if index < split:
        return [*merkle_proof(items[:split], index), merkle_root(items[split:])]
    return [*merkle_proof(items[split:], index - split), merkle_root(items[:split])]


def _result_bytes(result: Doc) -> bytes:
    """The deterministic fields of an ``ExecTxResult``: code, data, gas wanted and used."""
    return (
        _uint(1, int(result["code"]))
        + _bytes(2, base64.b64decode(result.get("data") or ""))
        + _uint(5, int(result["gas_wanted"]))
        + _uint(6, int(result["gas_used"]))
    )


def hex_upper(data: bytes) -> str:
    return data.hex().upper()


def _block_id_bytes(block_id: Doc) -> bytes:
    parts = block_id["parts"]
    header = _uint(1, parts["total"]) + _bytes(2, bytes.fromhex(parts["hash"]))
    # the part set header is not nullable: always encoded, even empty
    return (
        _bytes(1, bytes.fromhex(block_id["hash"]))
        + _varint(2 << 3 | 2)
        + _varint(len(header))
        + header
    )


def header_hash(header: Doc) -> str:
    """CometBFT's ``Header.Hash``: the Merkle root of the header's fields, each encoded alone
    (strings, integers and bytes wrapped as protobuf ``*Value`` messages)."""
    version = header["version"]
    fields = [
        _uint(1, int(version["block"])) + _uint(2, int(version["app"])),
        _bytes(1, header["chain_id"].encode()),
        _uint(1, int(header["height"])),
        _timestamp(header["time"]),
        _block_id_bytes(header["last_block_id"]),
        *(
            _bytes(1, bytes.fromhex(header[name]))
            for name in (
                "last_commit_hash",
                "data_hash",
                "validators_hash",
                "next_validators_hash",
                "consensus_hash",
                "app_hash",
                "last_results_hash",
                "evidence_hash",
                "proposer_address",
            )
        ),
    ]
    return hex_upper(merkle_root(fields))


@dataclass(frozen=True)
class Validator:
    """The devnet's single validator: an ed25519 key derived from the chain id."""

    key: Ed25519PrivateKey

    @classmethod
    def for_chain(cls, chain_id: str) -> Validator:
        seed = hashlib.sha256(f"akdevnet validator of {chain_id}".encode()).digest()
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @property
    def public_key(self) -> bytes:
        return self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @property
    def address(self) -> bytes:
        return hashlib.sha256(self.public_key).digest()[:20]

    def pub_key_json(self) -> Doc:
        return {
            "type": "tendermint/PubKeyEd25519",
            "value": base64.b64encode(self.public_key).decode(),
        }

    def validators_hash(self) -> bytes:
        simple = _bytes(1, _bytes(1, self.public_key)) + _uint(2, VOTING_POWER)
        return merkle_root([simple])

    def info(self) -> Doc:
        """The validator as ``status`` and ``validators`` show it."""
        return {
            "address": hex_upper(self.address),
            "pub_key": self.pub_key_json(),
            "voting_power": str(VOTING_POWER),
            "proposer_priority": "0",
        }


def consensus_hash() -> bytes:
    return hashlib.sha256(_uint(1, BLOCK_MAX_BYTES) + _uint(2, BLOCK_MAX_GAS)).digest()


def consensus_params() -> Doc:
    """CometBFT's default consensus parameters (Akash's block limits), as ``genesis`` shows."""
    return {
        "block": {"max_bytes": str(BLOCK_MAX_BYTES), "max_gas": str(BLOCK_MAX_GAS)},
        "evidence": {
            "max_age_num_blocks": "100000",
            "max_age_duration": "172800000000000",
            "max_bytes": "1048576",
        },
        "validator": {"pub_key_types": ["ed25519"]},
        "version": {"app": "0"},
        "abci": {"vote_extensions_enable_height": "0"},
    }


class Chain:
    """Headers, block ids and commits of a :class:`Database`'s blocks."""

    def __init__(self, db: Database, chain_id: str) -> None:
        self.db = db
        self.chain_id = chain_id
        self.validator = Validator.for_chain(chain_id)

    def genesis_app_hash(self) -> bytes:
        stored = self.db.meta("genesis_app_hash")
        return bytes.fromhex(stored) if stored else EMPTY_HASH

    def app_hash_after(self, height: int) -> bytes:
        """The app hash once block ``height`` is committed (the genesis one at 0)."""
        found = self.db.block(height) if height > 0 else None
        if found is None:
            return self.genesis_app_hash()
        return base64.b64decode(found[3].get("app_hash") or "")

    @staticmethod
    def parts_hash(block_hash: str) -> str:
        return hex_upper(merkle_root([bytes.fromhex(block_hash)]))

    def block_id(self, block_hash: str) -> Doc:
        return {"hash": block_hash, "parts": {"total": 1, "hash": self.parts_hash(block_hash)}}

    def _signature(self, height: int, block_hash: str, time: str) -> bytes:
        """ed25519 signature of CometBFT's canonical precommit for this block."""
        parts = _uint(1, 1) + _bytes(2, bytes.fromhex(self.parts_hash(block_hash)))
        vote = (
            _uint(1, PRECOMMIT)
            + _sfixed64(2, height)
            + _bytes(4, _bytes(1, bytes.fromhex(block_hash)) + _bytes(2, parts))
            + _bytes(5, _timestamp(time))
            + _bytes(6, self.chain_id.encode())
        )
        return self.validator.key.sign(_varint(len(vote)) + vote)

    def commit(self, height: int) -> Doc:
        """The commit of block ``height`` (an empty one at 0, as in block 1's ``last_commit``)."""
        found = self.db.block(height) if height > 0 else None
        if found is None:
            return {
                "height": "0",
                "round": 0,
                "block_id": {"hash": "", "parts": {"total": 0, "hash": ""}},
                "signatures": [],
            }
        time, block_hash = found[0], found[1]
        signature = self._signature(height, block_hash, time)
        return {
            "height": str(height),
            "round": 0,
            "block_id": self.block_id(block_hash),
            "signatures": [
                {
                    "block_id_flag": BLOCK_ID_FLAG_COMMIT,
                    "validator_address": hex_upper(self.validator.address),
                    "timestamp": time,
                    "signature": base64.b64encode(signature).decode(),
                }
            ],
        }

    def _commit_hash(self, commit: Doc) -> bytes:
        sigs = [
            _uint(1, s["block_id_flag"])
            + _bytes(2, bytes.fromhex(s["validator_address"]))
            + _bytes(3, _timestamp(s["timestamp"]))
            + _bytes(4, base64.b64decode(s["signature"]))
            for s in commit["signatures"]
        ]
        return merkle_root(sigs)

    def header(self, height: int, time: str, txs: Sequence[str]) -> Doc:
        """Block ``height``'s header, with every hash CometBFT 0.38 puts there."""
        previous = self.db.block(height - 1) if height > 1 else None
        results: list[Any] = (previous[3].get("txs_results") or []) if previous else []
        last_commit = self.commit(height - 1)
        validators = hex_upper(self.validator.validators_hash())
        return {
            "version": {"block": "11", "app": "0"},
            "chain_id": self.chain_id,
            "height": str(height),
            "time": time,
            "last_block_id": (
                self.block_id(previous[1])
                if previous
                else {"hash": "", "parts": {"total": 0, "hash": ""}}
            ),
            "last_commit_hash": hex_upper(self._commit_hash(last_commit)),
            "data_hash": hex_upper(
                merkle_root([hashlib.sha256(base64.b64decode(tx)).digest() for tx in txs])
            ),
            "validators_hash": validators,
            "next_validators_hash": validators,
            "consensus_hash": hex_upper(consensus_hash()),
            "app_hash": hex_upper(self.app_hash_after(height - 1)),
            "last_results_hash": hex_upper(merkle_root([_result_bytes(r) for r in results])),
            "evidence_hash": hex_upper(EMPTY_HASH),
            "proposer_address": hex_upper(self.validator.address),
        }
