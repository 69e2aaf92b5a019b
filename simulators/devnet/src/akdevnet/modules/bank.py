"""Accounts and balances (Cosmos auth and bank): numbers, sequences, public keys, transfers."""

from __future__ import annotations

from collections.abc import Sequence

from akchain._pb.cosmos.bank.v1beta1 import tx_pb2 as bank_pb2
from akdevnet.context import Ctx
from akdevnet.errors import INSUFFICIENT_FUNDS, INVALID_ADDRESS, INVALID_COINS, sdk
from akdevnet.store import Branch, Doc, Reader
from aktypes.address import validate_address
from aktypes.errors import InvalidAddressError

Coins = Sequence[tuple[str, int]]


def coins_text(coins: Coins) -> str:
    return ",".join(f"{amount}{denom}" for denom, amount in coins)


def check_address(address: str, what: str) -> None:
    try:
        validate_address(address)
    except InvalidAddressError as exc:
        raise sdk(
            INVALID_ADDRESS, "invalid address", f"invalid {what} address {address!r}: {exc}"
        ) from exc


# -- accounts -------------------------------------------------------------------------------


def account(store: Reader, address: str) -> Doc | None:
    return store.get(f"acc/{address}")


def ensure_account(store: Branch, address: str) -> Doc:
    """The account at ``address``, created with the next account number if new."""
    found = account(store, address)
    if found is not None:
        return found
    counter = store.get("meta/account_number") or {"next": 0}
    number = int(counter["next"])
    store.set("meta/account_number", {"next": number + 1})
    doc = {
        "@type": "/cosmos.auth.v1beta1.BaseAccount",
        "address": address,
        "pub_key": None,
        "account_number": str(number),
        "sequence": "0",
    }
    store.set(f"acc/{address}", doc)
    return doc


# -- balances -------------------------------------------------------------------------------


def balance(store: Reader, address: str, denom: str) -> int:
    doc = store.get(f"bal/{address}/{denom}")
    return int(doc["amount"]) if doc else 0


def balances(store: Reader, address: str) -> list[Doc]:
    return [doc for _, doc in store.scan(f"bal/{address}/") if int(doc["amount"]) > 0]


def _set_balance(store: Branch, address: str, denom: str, amount: int) -> None:
    if amount:
        store.set(f"bal/{address}/{denom}", {"denom": denom, "amount": str(amount)})
    else:
        store.delete(f"bal/{address}/{denom}")


def mint(store: Branch, address: str, denom: str, amount: int) -> None:
    """Create coins (genesis only)."""
    ensure_account(store, address)
    _set_balance(store, address, denom, balance(store, address, denom) + amount)


def send(ctx: Ctx, sender: str, recipient: str, coins: Coins) -> None:
    """Move coins, emitting the bank's events; fails without a trace if ``sender`` lacks them."""
    coins = [(d, a) for d, a in coins if a > 0]
    if not coins:
        return
    for denom, amount in coins:
        have = balance(ctx.store, sender, denom)
        if have < amount:
            raise sdk(
                INSUFFICIENT_FUNDS,
                "insufficient funds",
                f"spendable balance {have}{denom} is smaller than {amount}{denom}",
            )
    ensure_account(ctx.store, recipient)
    for denom, amount in coins:
        _set_balance(ctx.store, sender, denom, balance(ctx.store, sender, denom) - amount)
        _set_balance(ctx.store, recipient, denom, balance(ctx.store, recipient, denom) + amount)
    text = coins_text(coins)
    ctx.event("coin_spent", [("spender", sender), ("amount", text)])
    ctx.event("coin_received", [("receiver", recipient), ("amount", text)])
    ctx.event("transfer", [("recipient", recipient), ("sender", sender), ("amount", text)])
    ctx.event("message", [("sender", sender)])


def msg_send(ctx: Ctx, msg: bank_pb2.MsgSend) -> None:
    check_address(msg.from_address, "sender")
    check_address(msg.to_address, "recipient")
    coins = []
    for coin in msg.amount:
        if not coin.amount.isdigit() or int(coin.amount) <= 0:
            raise sdk(INVALID_COINS, "invalid coins", f"{coin.amount}{coin.denom}")
        coins.append((coin.denom, int(coin.amount)))
    if not coins:
        raise sdk(INVALID_COINS, "invalid coins", "no coins to send")
    send(ctx, msg.from_address, msg.to_address, coins)
