"""Escrow: deployment and bid deposits, lease payments, lazy settlement, overdraft.

Follows Akash's ``x/escrow`` keeper (node v2). Nothing happens per block: a settlement
charges each open payment ``rate × (height - settled_at)``, truncated to whole units (the
fraction is neither charged nor paid), and runs only when a message touches the account
(lease creation, withdrawal, a close). Payments are charged one after the other in key
order, each from the deposits oldest first; when the deposits run out the account and every
payment it settled become ``overdrawn``, the providers are paid what was drawn, and the
account-closed hooks close the deployment and its leases with ``insufficient_funds``.
Providers are paid 100% (no take rate). ``docs/chain.md`` ("Escrow") lists where this
differs from Akash.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from akdevnet.context import ESCROW_MODULE, Ctx, dec_coin
from akdevnet.errors import TxFailure, fail, unregistered
from akdevnet.modules import bank
from akdevnet.store import Doc
from aktypes.coin import Dec

CODESPACE = "escrow"
ACCOUNT_EXISTS, ACCOUNT_CLOSED, ACCOUNT_NOT_FOUND, ACCOUNT_OVERDRAWN, INVALID_DENOM = 1, 2, 3, 4, 5
PAYMENT_EXISTS, PAYMENT_CLOSED, PAYMENT_NOT_FOUND, PAYMENT_RATE_ZERO = 6, 7, 8, 9
_MESSAGES = {
    1: "account exists",
    2: "account closed",
    3: "account not found",
    4: "account overdrawn",
    5: "invalid denomination",
    6: "payment exists",
    7: "payment closed",
    8: "payment not found",
    9: "payment rate zero",
}

AccountHook = Callable[[Ctx, Doc], None]
ACCOUNT_CLOSED_HOOKS: list[AccountHook] = []
"""Called when a deployment account is saved closed or overdrawn (the market wires itself in)."""


def _error(code: int, context: str = "") -> Exception:
    return fail(CODESPACE, code, _MESSAGES[code], context)


def account_key(scope: str, xid: str) -> str:
    return f"escrow/acc/{scope}/{xid}"


def payment_key(scope: str, account_xid: str, xid: str) -> str:
    return f"escrow/pay/{scope}/{account_xid}/{xid}"


def get_account(ctx: Ctx, scope: str, xid: str) -> Doc | None:
    return ctx.store.get(account_key(scope, xid))


def get_payment(ctx: Ctx, scope: str, account_xid: str, xid: str) -> Doc | None:
    return ctx.store.get(payment_key(scope, account_xid, xid))


def payments_of(ctx: Ctx, account: Doc) -> list[Doc]:
    ident = account["id"]
    return [doc for _, doc in ctx.store.scan(payment_key(ident["scope"], ident["xid"], ""))]


def authorize_deposit(ctx: Ctx, owner: str, denom: str, amount: int) -> None:
    """The depositor can pay ``amount`` from its balance (Akash's ``AuthorizeDeposits``)."""
    if bank.balance(ctx.store, owner, denom) < amount:
        raise unregistered("deposit invalid: insufficient balance")


def create_account(ctx: Ctx, scope: str, xid: str, *, owner: str, denom: str, amount: int) -> Doc:
    """Open an escrow account funded by ``owner``'s balance."""
    if get_account(ctx, scope, xid) is not None:
        raise _error(ACCOUNT_EXISTS, f"{scope}/{xid}")
    bank.send(ctx, owner, ESCROW_MODULE, [(denom, amount)])
    account = {
        "id": {"scope": scope, "xid": xid},
        "state": {
            "owner": owner,
            "state": "open",
            "transferred": [dec_coin(denom, Dec(0))],
            "settled_at": str(ctx.height),
            "funds": [dec_coin(denom, Dec(amount))],
            "deposits": [
                {
                    "owner": owner,
                    "height": str(ctx.height),
                    "source": "balance",
                    "balance": dec_coin(denom, Dec(amount)),
                }
            ],
        },
    }
    ctx.store.set(account_key(scope, xid), account)
    return account


def create_payment(ctx: Ctx, account: Doc, xid: str, provider: str, rate: Doc) -> Doc:
    """A lease's payment stream out of a deployment account (settles the account first)."""
    scope, account_xid = account["id"]["scope"], account["id"]["xid"]
    if account["state"]["state"] == "closed":
        raise _error(ACCOUNT_CLOSED)
    settlement = settle(ctx, account)
    if settlement.overdrawn:
        raise _error(ACCOUNT_OVERDRAWN)
    if rate["denom"] not in {f["denom"] for f in settlement.account["state"]["funds"]}:
        raise _error(INVALID_DENOM, f"payment rate denom {rate['denom']} not in account funds")
    if Dec(rate["amount"]).is_zero():
        raise _error(PAYMENT_RATE_ZERO)
    if get_payment(ctx, scope, account_xid, xid) is not None:
        raise _error(PAYMENT_EXISTS)
    payment = {
        "id": {"aid": {"scope": scope, "xid": account_xid}, "xid": xid},
        "state": {
            "owner": provider,
            "state": "open",
            "rate": rate,
            "balance": dec_coin(rate["denom"], Dec(0)),
            "unsettled": dec_coin(rate["denom"], Dec(0)),
            "withdrawn": {"denom": rate["denom"], "amount": "0"},
        },
    }
    ctx.store.set(payment_key(scope, account_xid, xid), payment)
    _save(ctx, settlement)
    return payment


@dataclass
class Settlement:
    account: Doc
    payments: list[Doc] = field(default_factory=list)
    overdrawn: bool = False


def _funds(account: Doc, denom: str) -> Doc:
    funds: list[Doc] = account["state"]["funds"]
    for fund in funds:
        if fund["denom"] == denom:
            return fund
    fund = dec_coin(denom, Dec(0))
    account["state"]["funds"].append(fund)
    account["state"]["transferred"].append(dec_coin(denom, Dec(0)))
    return fund


def _transferred(account: Doc, denom: str) -> Doc:
    moved: list[Doc] = account["state"]["transferred"]
    for item in moved:
        if item["denom"] == denom:
            return item
    item = dec_coin(denom, Dec(0))
    account["state"]["transferred"].append(item)
    return item


def settle(ctx: Ctx, account: Doc) -> Settlement:
    """Accrue every payment up to this block; mark the account overdrawn if deposits run out."""
    state = account["state"]
    if state["state"] == "closed":
        raise _error(ACCOUNT_CLOSED)
    first = state["funds"][0]
    if Dec(first["amount"]).is_negative():
        return Settlement(account, [], overdrawn=True)
    was_overdrawn = state["state"] == "overdrawn"
    delta = 0 if was_overdrawn else ctx.height - int(state["settled_at"])
    if not was_overdrawn:
        state["settled_at"] = str(ctx.height)
    payments = [
        p
        for p in payments_of(ctx, account)
        if p["state"]["state"] == "overdrawn" or (p["state"]["state"] == "open" and delta != 0)
    ]
    overdrawn = False
    for payment in payments:
        pstate = payment["state"]
        denom = pstate["rate"]["denom"]
        if pstate["state"] == "overdrawn":
            owed = Dec(pstate["unsettled"]["amount"])
            pstate["unsettled"] = dec_coin(denom, Dec(0))
        else:
            owed = Dec((Dec(pstate["rate"]["amount"]) * delta).truncate())
        taken = _draw(account, denom, owed)
        pstate["balance"] = dec_coin(denom, Dec(pstate["balance"]["amount"]) + taken)
        short = owed - taken
        if short.is_positive():
            fund = _funds(account, denom)
            fund["amount"] = str(Dec(fund["amount"]) - short)
            pstate["unsettled"] = dec_coin(denom, Dec(pstate["unsettled"]["amount"]) + short)
            pstate["state"] = "overdrawn"
            overdrawn = True
        else:
            pstate["state"] = "open"
    if overdrawn:
        state["state"] = "overdrawn"
        for payment in payments:
            payment["state"]["state"] = "overdrawn"
            _pay_out(ctx, payment)
    return Settlement(account, payments, overdrawn)


def _draw(account: Doc, denom: str, amount: Dec) -> Dec:
    """Take up to ``amount`` from the deposits of ``denom``, oldest first."""
    taken = Dec(0)
    remaining = amount
    kept = []
    for deposit in account["state"]["deposits"]:
        if deposit["balance"]["denom"] != denom or not remaining.is_positive():
            kept.append(deposit)
            continue
        have = Dec(deposit["balance"]["amount"])
        use = have if have < remaining else remaining
        remaining -= use
        taken += use
        if have - use > 0:
            deposit["balance"] = dec_coin(denom, have - use)
            kept.append(deposit)
    account["state"]["deposits"] = kept
    if taken.is_positive():
        fund = _funds(account, denom)
        fund["amount"] = str(Dec(fund["amount"]) - taken)
        moved = _transferred(account, denom)
        moved["amount"] = str(Dec(moved["amount"]) + taken)
    return taken


def _pay_out(ctx: Ctx, payment: Doc) -> None:
    """Send the payment's whole-coin balance to the provider."""
    state = payment["state"]
    denom = state["balance"]["denom"]
    amount = Dec(state["balance"]["amount"]).truncate()
    if amount <= 0:
        return
    bank.send(ctx, ESCROW_MODULE, state["owner"], [(denom, amount)])
    state["withdrawn"] = {"denom": denom, "amount": str(int(state["withdrawn"]["amount"]) + amount)}
    state["balance"] = dec_coin(denom, Dec(state["balance"]["amount"]) - amount)


def _refund(ctx: Ctx, account: Doc) -> None:
    for deposit in account["state"]["deposits"]:
        amount = Dec(deposit["balance"]["amount"]).truncate()
        if amount > 0:
            bank.send(ctx, ESCROW_MODULE, deposit["owner"], [(deposit["balance"]["denom"], amount)])
            fund = _funds(account, deposit["balance"]["denom"])
            fund["amount"] = str(Dec(fund["amount"]) - amount)
    account["state"]["deposits"] = []


def _save(ctx: Ctx, settlement: Settlement) -> None:
    account = settlement.account
    ident = account["id"]
    closing = account["state"]["state"] in ("closed", "overdrawn")
    if closing:
        _refund(ctx, account)
    ctx.store.set(account_key(ident["scope"], ident["xid"]), account)
    for payment in settlement.payments:
        pid = payment["id"]
        ctx.store.set(payment_key(pid["aid"]["scope"], pid["aid"]["xid"], pid["xid"]), payment)
    if closing and ident["scope"] == "deployment":
        for hook in ACCOUNT_CLOSED_HOOKS:
            hook(ctx, account)


def withdraw(ctx: Ctx, account: Doc, payment: Doc) -> bool:
    """Settle and pay the provider what it has earned; False when the account is overdrawn.

    As on Akash, a withdrawal from an account already settled in this block (an earlier
    message of the block touched it) finds no payment to pay, and the transaction fails
    with the panic Akash's keeper raises (akash-network/support#414).
    """
    if payment["state"]["state"] != "open":
        raise _error(PAYMENT_CLOSED)
    settlement = settle(ctx, account)
    if not settlement.overdrawn:
        mine = _same(settlement.payments, payment)
        if mine is None:
            raise _payment_not_settled(payment)
        _pay_out(ctx, mine)
    _save(ctx, settlement)
    return not settlement.overdrawn


def _payment_not_settled(payment: Doc) -> TxFailure:
    """The recovered panic of Akash's ``PaymentWithdraw`` (codespace ``undefined``, 111222)."""
    ident = payment["id"]
    text = f'aid:<scope:{ident["aid"]["scope"]} xid:"{ident["aid"]["xid"]}" > xid:"{ident["xid"]}"'
    return TxFailure("undefined", 111222, f"recovered: couldn't find payment {text}: panic")


def close_payment(ctx: Ctx, account: Doc, payment: Doc) -> None:
    """Settle, close one payment and pay it out (a lease ends)."""
    if payment["state"]["state"] == "closed":
        raise _error(PAYMENT_CLOSED)
    settlement = settle(ctx, account)
    mine = _same(settlement.payments, payment)
    if mine is None:
        mine = payment
        settlement.payments.append(mine)
    if mine["state"]["state"] == "open":
        mine["state"]["state"] = "closed"
        _pay_out(ctx, mine)
    _save(ctx, settlement)


def close_account(ctx: Ctx, account: Doc) -> None:
    """Settle, close every open payment, refund the rest of the deposits, run the hooks."""
    if account["state"]["state"] == "closed":
        raise _error(ACCOUNT_CLOSED)
    settlement = settle(ctx, account)
    if account["state"]["state"] == "open":
        account["state"]["state"] = "closed"
    for payment in payments_of(ctx, account):
        if _same(settlement.payments, payment) is None:
            settlement.payments.append(payment)
    for payment in settlement.payments:
        if payment["state"]["state"] == "open":
            payment["state"]["state"] = "closed"
            _pay_out(ctx, payment)
    _save(ctx, settlement)


def _same(payments: list[Doc], payment: Doc) -> Doc | None:
    for item in payments:
        if item["id"] == payment["id"]:
            return item
    return None
