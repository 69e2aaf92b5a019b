"""The ante handler over the real devnet: signatures, signers, sequences, fees."""

from __future__ import annotations

from akchain import msgs
from akchain._pb.cosmos.tx.v1beta1 import tx_pb2
from akchain.keys import Signer
from akchain.tx import sign_tx
from akdevnet.testing import DevnetClients
from aktypes.coin import Coin


async def test_a_transaction_signed_with_the_wrong_key_is_rejected(chain: DevnetClients) -> None:
    provider, tenant = chain.devnet.signer("provider"), chain.devnet.signer("tenant-1")
    account = await chain.lcd.account(provider.address)
    pay = msgs.send(provider.address, tenant.address, [Coin(denom="uakt", amount=1)])

    # signed by the tenant for a message only the provider may sign
    by_tenant = await chain.lcd.account(tenant.address)
    raw = sign_tx(
        tenant,
        [pay],
        chain_id=chain.chain_id,
        account_number=by_tenant.account_number,
        sequence=by_tenant.sequence,
    )
    answer = await chain.rpc.broadcast_tx_sync(raw)
    assert (answer.codespace, answer.code) == ("sdk", 8)
    assert f"pubKey does not match signer address {provider.address}" in answer.log

    # the provider's own signature over a different body: the signature does not verify
    genuine = tx_pb2.TxRaw.FromString(
        sign_tx(
            provider,
            [pay],
            chain_id=chain.chain_id,
            account_number=account.account_number,
            sequence=account.sequence,
        )
    )
    forged_body = tx_pb2.TxBody.FromString(genuine.body_bytes)
    forged_body.memo = "pay me more"
    forged = tx_pb2.TxRaw(
        body_bytes=forged_body.SerializeToString(),
        auth_info_bytes=genuine.auth_info_bytes,
        signatures=genuine.signatures,
    )
    answer = await chain.rpc.broadcast_tx_sync(forged.SerializeToString())
    assert (answer.codespace, answer.code) == ("sdk", 4)
    assert "signature verification failed" in answer.log

    # a key the chain has never seen
    stranger = Signer.generate()
    raw = sign_tx(
        stranger,
        [msgs.send(stranger.address, tenant.address, [Coin(denom="uakt", amount=1)])],
        chain_id=chain.chain_id,
        account_number=0,
        sequence=0,
    )
    answer = await chain.rpc.broadcast_tx_sync(raw)
    assert (answer.codespace, answer.code) == ("sdk", 9)

    # nothing moved
    assert (await chain.lcd.account(provider.address)).sequence == account.sequence


async def test_a_stale_sequence_fails_with_cosmos_sequence_mismatch(chain: DevnetClients) -> None:
    tenant = chain.devnet.signer("tenant-1")
    other = chain.devnet.signer("tenant-2").address
    account = await chain.lcd.account(tenant.address)

    def signed(sequence: int) -> bytes:
        pay = msgs.send(tenant.address, other, [Coin(denom="uact", amount=sequence + 1)])
        return sign_tx(
            tenant,
            [pay],
            chain_id=chain.chain_id,
            account_number=account.account_number,
            sequence=sequence,
        )

    first = await chain.rpc.broadcast_tx_sync(signed(account.sequence))
    assert first.code == 0
    # the mempool already holds this sequence: the next one is accepted, a repeat is not
    second = await chain.rpc.broadcast_tx_sync(signed(account.sequence + 1))
    assert second.code == 0
    stale = await chain.rpc.broadcast_tx_sync(signed(account.sequence))
    assert (stale.codespace, stale.code) == (
        "sdk",
        19,
    )  # the same bytes again: already in the cache
    replay = await chain.rpc.broadcast_tx_sync(signed(account.sequence + 5))
    assert (replay.codespace, replay.code) == ("sdk", 32)
    assert replay.log.startswith(
        f"account sequence mismatch, expected {account.sequence + 2}, got {account.sequence + 5}"
    )

    committed = await chain.rpc.wait_tx(second.hash, timeout=10)
    assert committed.ok
    assert (await chain.lcd.account(tenant.address)).sequence == account.sequence + 2


async def test_a_failed_message_keeps_the_fee_and_the_sequence(chain: DevnetClients) -> None:
    tenant = chain.wallet("tenant-1")
    before = await chain.lcd.account(tenant.address)
    uakt = await chain.lcd.balance(tenant.address, "uakt")
    broke = Coin(denom="uact", amount=10**18)
    submitted = await tenant.broadcast(
        [msgs.send(tenant.address, chain.devnet.signer("tenant-2").address, [broke])]
    )
    result = await chain.rpc.wait_tx(submitted.hash, timeout=10)
    assert (result.codespace, result.code) == ("sdk", 5)
    assert result.log.startswith("failed to execute message; message index: 0: spendable balance")
    assert (await chain.lcd.account(tenant.address)).sequence == before.sequence + 1
    assert await chain.lcd.balance(tenant.address, "uakt") == uakt - 7_500
