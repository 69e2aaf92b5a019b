"""Transactions: SIGN_MODE_DIRECT signing, encoding, decoding and verification."""

from __future__ import annotations

import hashlib

import pytest

from akchain import msgs
from akchain._pb.cosmos.tx.v1beta1 import tx_pb2
from akchain.keys import Signer
from akchain.tx import Fee, decode_tx, fee_for, pack, sign_tx, tx_hash
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.ids import BidID
from aktypes.testing import address

SIGNER = Signer.from_mnemonic(" ".join(["abandon"] * 11 + ["about"]))


def bid() -> BidID:
    return BidID(owner=address(1), dseq=7, gseq=1, oseq=1, provider=SIGNER.address)


def test_a_signed_bid_decodes_and_verifies() -> None:
    message = msgs.create_bid(
        bid(), DecCoin(denom="uact", amount=Dec("12.5")), Coin(denom="uakt", amount=500_000)
    )
    raw = sign_tx(
        SIGNER,
        [message],
        chain_id="akash-devnet-1",
        account_number=3,
        sequence=9,
        fee=Fee(200_000, 5_000),
        memo="m",
    )

    decoded = decode_tx(raw)
    assert decoded.hash == hashlib.sha256(raw).hexdigest().upper() == tx_hash(raw)
    assert decoded.signer_address == SIGNER.address
    assert (decoded.sequence, decoded.gas_limit, decoded.fee, decoded.memo) == (
        9,
        200_000,
        [("uakt", 5_000)],
        "m",
    )
    assert [m.type_url for m in decoded.messages] == ["/akash.market.v1beta5.MsgCreateBid"]
    assert decoded.signature_valid(chain_id="akash-devnet-1", account_number=3)
    assert not decoded.signature_valid(chain_id="akashnet-2", account_number=3)
    assert not decoded.signature_valid(chain_id="akash-devnet-1", account_number=4)
    # LegacyDec on the protobuf wire is the integer scaled by 10^18
    sent = type(message).FromString(decoded.messages[0].value)
    assert sent.price.amount == str(125 * 10**17)


def test_a_changed_body_no_longer_verifies() -> None:
    raw = sign_tx(
        SIGNER, [msgs.withdraw_lease(bid().lease_id)], chain_id="c", account_number=1, sequence=0
    )
    envelope = tx_pb2.TxRaw.FromString(raw)
    body = tx_pb2.TxBody.FromString(envelope.body_bytes)
    body.memo = "changed"
    envelope.body_bytes = body.SerializeToString()
    assert not decode_tx(envelope.SerializeToString()).signature_valid(
        chain_id="c", account_number=1
    )


def test_pack_uses_the_cosmos_type_url() -> None:
    packed = pack(msgs.close_bid(bid()))
    assert packed.type_url == "/akash.market.v1beta5.MsgCloseBid"


def test_the_fee_rule_is_gas_per_message_times_the_price_or_a_fixed_fee() -> None:
    assert fee_for(gas=300_000, gas_prices="0.025uakt") == Fee(300_000, 7_500, "uakt")
    assert fee_for(gas=300_000, gas_prices="0.025uakt", messages=3) == Fee(900_000, 22_500, "uakt")
    assert fee_for(gas=200_001, gas_prices="0.025uakt") == Fee(200_001, 5_001, "uakt")  # rounded up
    assert fee_for(gas=300_000, gas_prices="0.025uakt", fees="5000uact", messages=2) == Fee(
        600_000, 5_000, "uact"
    )
    with pytest.raises(ValueError, match="not an amount"):
        fee_for(gas=300_000, gas_prices="cheap")
