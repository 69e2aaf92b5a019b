"""Cosmos SDK transactions: build, sign (SIGN_MODE_DIRECT), encode, decode, verify.

A transaction is ``TxRaw{body_bytes, auth_info_bytes, signatures}``; the signature covers
``SignDoc{body_bytes, auth_info_bytes, chain_id, account_number}``. Its hash, by which the
node indexes it, is the upper-case hex SHA-256 of the encoded ``TxRaw``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from google.protobuf.any_pb2 import Any as AnyPb
from google.protobuf.message import DecodeError, Message

from akchain._pb.cosmos.base.v1beta1 import coin_pb2
from akchain._pb.cosmos.crypto.secp256k1 import keys_pb2
from akchain._pb.cosmos.tx.v1beta1 import tx_pb2
from akchain.keys import Signer, address_of, verify

PUBKEY_TYPE = "/cosmos.crypto.secp256k1.PubKey"


@dataclass(frozen=True)
class Fee:
    """Gas limit and fee; Akash's usual gas price is 0.025 uakt per unit of gas."""

    gas_limit: int = 300_000
    amount: int = 7_500
    denom: str = "uakt"


FEE_AMOUNT = re.compile(r"^(\d+(?:\.\d+)?)([a-z][a-z0-9/]{2,127})$")
"""An amount with its denomination, as ``--gas-prices`` and ``--fees`` take it (0.025uakt)."""


def fee_for(*, gas: int, gas_prices: str, fees: str = "", messages: int = 1) -> Fee:
    """The relay's fee rule: ``gas`` per message; ``fees`` (fixed, per transaction) when
    set, else ``gas × gas_prices`` rounded up. Raises ValueError on a malformed amount."""
    limit = gas * max(messages, 1)
    fixed = FEE_AMOUNT.match(fees.strip()) if fees else None
    if fixed:
        return Fee(gas_limit=limit, amount=math.ceil(Decimal(fixed.group(1))), denom=fixed.group(2))
    price = FEE_AMOUNT.match(gas_prices.strip())
    if price is None:
        raise ValueError(f"gas prices {gas_prices!r} is not an amount with a denomination")
    return Fee(
        gas_limit=limit, amount=math.ceil(limit * Decimal(price.group(1))), denom=price.group(2)
    )


def pack(message: Message) -> AnyPb:
    """Wrap a message in ``Any`` with its type URL (``/akash.market.v1beta5.MsgCreateBid``)."""
    return AnyPb(type_url="/" + message.DESCRIPTOR.full_name, value=message.SerializeToString())


def tx_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest().upper()


def sign_tx(
    signer: Signer,
    messages: Sequence[Message],
    *,
    chain_id: str,
    account_number: int,
    sequence: int,
    fee: Fee = Fee(),
    memo: str = "",
) -> bytes:
    """An encoded, signed ``TxRaw`` ready for ``broadcast_tx_sync``."""
    body = tx_pb2.TxBody(messages=[pack(m) for m in messages], memo=memo).SerializeToString()
    public = pack(keys_pb2.PubKey(key=signer.public_key))
    auth_info = tx_pb2.AuthInfo(
        signer_infos=[
            tx_pb2.SignerInfo(
                public_key=public,
                mode_info=tx_pb2.ModeInfo(
                    single=tx_pb2.ModeInfo.Single(mode=tx_pb2.SIGN_MODE_DIRECT)
                ),
                sequence=sequence,
            )
        ],
        fee=tx_pb2.Fee(
            amount=[coin_pb2.Coin(denom=fee.denom, amount=str(fee.amount))], gas_limit=fee.gas_limit
        ),
    ).SerializeToString()
    doc = tx_pb2.SignDoc(
        body_bytes=body, auth_info_bytes=auth_info, chain_id=chain_id, account_number=account_number
    ).SerializeToString()
    raw = tx_pb2.TxRaw(body_bytes=body, auth_info_bytes=auth_info, signatures=[signer.sign(doc)])
    return raw.SerializeToString()


@dataclass(frozen=True)
class DecodedTx:
    """A transaction as the chain reads it, before its signature is checked."""

    raw: bytes
    messages: list[AnyPb]
    memo: str
    public_key: bytes
    sequence: int
    fee: list[tuple[str, int]]
    gas_limit: int
    signature: bytes
    body_bytes: bytes
    auth_info_bytes: bytes

    @property
    def hash(self) -> str:
        return tx_hash(self.raw)

    @property
    def signer_address(self) -> str:
        return address_of(self.public_key)

    def signature_valid(self, *, chain_id: str, account_number: int) -> bool:
        doc = tx_pb2.SignDoc(
            body_bytes=self.body_bytes,
            auth_info_bytes=self.auth_info_bytes,
            chain_id=chain_id,
            account_number=account_number,
        ).SerializeToString()
        return verify(self.public_key, doc, self.signature)


class TxDecodeError(ValueError):
    """The bytes are not a single-signer SIGN_MODE_DIRECT Cosmos transaction."""


def decode_tx(raw: bytes, *, simulation: bool = False) -> DecodedTx:
    """Read a ``TxRaw`` with one secp256k1 signer; raise ``TxDecodeError`` otherwise.

    ``simulation`` also takes what clients send to be simulated: an encoded ``Tx`` (the same
    wire form) whose signer has no sign mode yet and whose signature is empty.
    """
    try:
        envelope = tx_pb2.TxRaw.FromString(raw)
        body = tx_pb2.TxBody.FromString(envelope.body_bytes)
        auth = tx_pb2.AuthInfo.FromString(envelope.auth_info_bytes)
    except DecodeError as exc:
        raise TxDecodeError(f"not a transaction: {exc}") from exc
    if len(auth.signer_infos) != 1 or len(envelope.signatures) != 1:
        raise TxDecodeError("exactly one signer and one signature are supported")
    info = auth.signer_infos[0]
    if info.public_key.type_url != PUBKEY_TYPE:
        raise TxDecodeError(f"unsupported public key type {info.public_key.type_url!r}")
    unsigned = simulation and info.mode_info.single.mode == tx_pb2.SIGN_MODE_UNSPECIFIED
    if info.mode_info.single.mode != tx_pb2.SIGN_MODE_DIRECT and not unsigned:
        raise TxDecodeError("only SIGN_MODE_DIRECT is supported")
    if not body.messages:
        raise TxDecodeError("a transaction needs at least one message")
    return DecodedTx(
        raw=raw,
        messages=list(body.messages),
        memo=body.memo,
        public_key=keys_pb2.PubKey.FromString(info.public_key.value).key,
        sequence=info.sequence,
        fee=[(c.denom, int(c.amount or "0")) for c in auth.fee.amount],
        gas_limit=auth.fee.gas_limit,
        signature=envelope.signatures[0],
        body_bytes=envelope.body_bytes,
        auth_info_bytes=envelope.auth_info_bytes,
    )
