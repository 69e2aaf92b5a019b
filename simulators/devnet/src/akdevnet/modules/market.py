"""The market: one order per open group, provider bids with deposits, leases, their closing.

Follows Akash's ``x/market`` (v1beta5 messages, v1 events). As there, when a lease is created
every other open bid on the order is marked lost (``OnBidLost``, no event) and its escrow
account closed, which refunds its deposit. One deliberate difference: an order takes at most
``order_max_bids`` bids (the reference lets one more through).
"""

from __future__ import annotations

import contextlib

from akchain._pb.akash.market.v1 import market_pb2 as market_v1
from akchain._pb.akash.market.v1beta5 import market_pb2
from akdevnet.context import Ctx, id_text, key, order_id, to_json
from akdevnet.errors import TxFailure, fail, sdk, unregistered
from akdevnet.modules import bank, escrow
from akdevnet.store import Doc
from aktypes.attributes import Attribute, attributes_subset_of
from aktypes.coin import Dec

CODESPACE = "market"
_MESSAGES = {
    1: "empty provider",
    2: "owner and provider are the same account",
    4: "bid price above max order price",
    5: "attribute mismatch",
    6: "unknown bid",
    7: "unknown lease",
    8: "unknown lease for bid",
    9: "unknown order for bid",
    10: "lease not active",
    11: "bid not active",
    12: "bid not open",
    14: "bid: order not open",
    15: "invalid order: order not found",
    16: "group not found",
    17: "group not open",
    18: "invalid bid: bid not found",
    19: "invalid bid: zero price",
    20: "invalid lease: lease not found",
    21: "invalid bid: bid exists from provider",
    22: "bid price is invalid",
    23: "order active",
    24: "order closed",
    25: "order already exists in store",
    30: "unknown provider",
    32: "capabilities mismatch",
    33: "invalid lease closed reason",
}
REASON_OWNER = "lease_closed_owner"
REASON_INSUFFICIENT_FUNDS = "lease_closed_reason_insufficient_funds"


def _error(code: int, context: str = "") -> TxFailure:
    return fail(CODESPACE, code, _MESSAGES[code], context)


def _save(ctx: Ctx, kind: str, doc: Doc) -> None:
    ctx.store.set(key(kind, doc["id"]), doc)


def _children(ctx: Ctx, kind: str, parent: Doc) -> list[Doc]:
    return [doc for _, doc in ctx.store.scan(key(kind, parent) + "/")]


def _ident(message_id: object) -> Doc:
    """A market id message as JSON (``bseq`` kept only for bids and leases)."""
    return to_json(message_id)  # type: ignore[arg-type]


def _price(spec: Doc) -> tuple[str, Dec]:
    total, denom = Dec(0), ""
    for unit in spec["resources"]:
        denom = denom or unit["price"]["denom"]
        total += Dec(unit["price"]["amount"]) * int(unit["count"])
    return denom, total


# -- orders ---------------------------------------------------------------------------------


def create_order(ctx: Ctx, gid: Doc, spec: Doc) -> Doc:
    orders = list(ctx.store.scan(key("order", gid) + "/"))
    if any(o["state"] in ("open", "active") for _, o in orders):
        raise unregistered("order active: create order: active order exists")
    oid = order_id(
        gid["owner"], gid["dseq"], gid["gseq"], 1 + sum(o["state"] == "closed" for _, o in orders)
    )
    if ctx.store.has(key("order", oid)):
        raise _error(25)
    order = {"id": oid, "state": "open", "spec": spec, "created_at": str(ctx.height)}
    _save(ctx, "order", order)
    ctx.typed("akash.market.v1.EventOrderCreated", id=oid)
    return order


def _close_order(ctx: Ctx, order: Doc) -> None:
    if order["state"] == "closed":
        return
    order["state"] = "closed"
    _save(ctx, "order", order)
    ctx.typed("akash.market.v1.EventOrderClosed", id=order["id"])


def _close_bid(ctx: Ctx, bid: Doc) -> None:
    """Close a bid and refund its deposit (Akash's ``OnBidClosed``)."""
    if bid["state"] in ("closed", "lost"):
        return
    bid["state"] = "closed"
    _save(ctx, "bid", bid)
    _refund_bid(ctx, bid)
    ctx.typed("akash.market.v1.EventBidClosed", id=bid["id"])


def _refund_bid(ctx: Ctx, bid: Doc) -> None:
    account = escrow.get_account(ctx, "bid", id_text(bid["id"]))
    if account is not None and account["state"]["state"] != "closed":
        escrow.close_account(ctx, account)


def _close_lease(ctx: Ctx, lease: Doc, state: str, reason: str) -> None:
    if lease["state"] in ("closed", "insufficient_funds"):
        return
    lease.update(state=state, closed_on=str(ctx.height), reason=reason)
    _save(ctx, "lease", lease)
    ctx.typed("akash.market.v1.EventLeaseClosed", id=lease["id"], reason=reason)


def _close_payment(ctx: Ctx, lease: Doc) -> None:
    ident = lease["id"]
    account_xid = f"{ident['owner']}/{ident['dseq']}"
    account = escrow.get_account(ctx, "deployment", account_xid)
    payment = escrow.get_payment(
        ctx, "deployment", account_xid, f"{ident['gseq']}/{ident['oseq']}/{ident['provider']}"
    )
    if account is None or payment is None:
        raise fail(escrow.CODESPACE, escrow.PAYMENT_NOT_FOUND, "payment not found")
    escrow.close_payment(ctx, account, payment)


def on_group_closed(ctx: Ctx, gid: Doc, *, insufficient_funds: bool) -> None:
    """A group closed or paused: close its orders, bids and leases (Akash's ``OnGroupClosed``)."""
    state, reason = (
        ("insufficient_funds", REASON_INSUFFICIENT_FUNDS)
        if insufficient_funds
        else ("closed", REASON_OWNER)
    )
    orders = _children(ctx, "order", gid)
    for order in [o for o in orders if o["state"] == "active"] + [
        o for o in orders if o["state"] == "open"
    ]:
        was_active = order["state"] == "active"
        _close_order(ctx, order)
        for bid in _children(ctx, "bid", order["id"]):
            if bid["state"] == "open":
                _close_bid(ctx, bid)
            elif was_active and bid["state"] == "active":
                _close_bid(ctx, bid)
                lease = ctx.store.get(key("lease", bid["id"]))
                if lease is not None:
                    _close_lease(ctx, lease, state, reason)
                    # the account may be closed or overdrawn already; Akash only logs this
                    with contextlib.suppress(TxFailure):
                        _close_payment(ctx, lease)


# -- bids -----------------------------------------------------------------------------------


def _provider_matches(ctx: Ctx, provider: Doc, spec: Doc) -> bool:
    requirements = spec.get("requirements") or {}
    wanted = [
        Attribute(key=a["key"], value=a.get("value", ""))
        for a in requirements.get("attributes") or ()
    ]
    signed = requirements.get("signed_by") or {}
    all_of, any_of = signed.get("all_of") or [], signed.get("any_of") or []
    if not all_of and not any_of:
        own = [
            Attribute(key=a["key"], value=a.get("value", ""))
            for a in provider.get("attributes") or ()
        ]
        return attributes_subset_of(wanted, own)

    def audited(auditor: str) -> bool:
        record = ctx.store.get(f"audit/{provider['owner']}/{auditor}")
        attrs = [
            Attribute(key=a["key"], value=a["value"])
            for a in (record or {}).get("attributes") or ()
        ]
        return record is not None and attributes_subset_of(wanted, attrs)

    if all_of and not all(audited(a) for a in all_of):
        return False
    return not any_of or any(audited(a) for a in any_of)


def _offer_matches(offers: list[Doc], spec: Doc) -> bool:
    counts = {int(u["resource"]["id"]): int(u["count"]) for u in spec["resources"]}
    return all(counts.get(int(o["resources"]["id"])) == int(o["count"]) for o in offers)


def create_bid(ctx: Ctx, msg: market_pb2.MsgCreateBid) -> None:
    ident = _ident(msg.id)
    if not ident["provider"]:
        raise _error(1)
    bank.check_address(ident["provider"], "provider")
    bank.check_address(ident["owner"], "owner")
    if ident["owner"] == ident["provider"]:
        raise _error(2)
    if int(ident["bseq"]) != 0:
        raise sdk(36, "conflict", "BidID: invalid bseq")
    price = to_json(msg.price)
    if Dec(price["amount"]).is_zero():
        raise _error(19)
    deposit = msg.deposit.amount
    amount = int(deposit.amount or "0")
    minimum = ctx.params.bid_min_deposit.get(deposit.denom)
    if not minimum:
        raise unregistered(f"deposit invalid: unsupported denom {deposit.denom}")
    if amount < minimum:
        raise unregistered(
            f"deposit invalid: minimum:{minimum}{deposit.denom} received:{amount}{deposit.denom}"
        )
    oid = order_id(ident["owner"], ident["dseq"], ident["gseq"], ident["oseq"])
    existing = [b for b in _children(ctx, "bid", oid) if b["state"] != "lost"]
    if len(existing) >= ctx.params.order_max_bids:
        raise unregistered(f"invalid bid: too many existing bids ({ctx.params.order_max_bids})")
    order = ctx.store.get(key("order", oid))
    if order is None:
        raise _error(15)
    if order["state"] == "active":
        raise _error(23)
    if order["state"] != "open":
        raise _error(24)
    order_denom, order_price = _price(order["spec"])
    if order_denom != price["denom"]:
        raise TxFailure("undefined", 111222, f"recovered: {order_denom} != {price['denom']}: panic")
    if order_price < Dec(price["amount"]):
        raise _error(22, f"{price['amount']}{price['denom']} > {order_price}{order_denom}")
    offers = [to_json(o) for o in msg.resources_offer]
    if not _offer_matches(offers, order["spec"]):
        raise _error(32)
    provider = ctx.store.get(f"provider/{ident['provider']}")
    if provider is None:
        raise _error(30)
    if not _provider_matches(ctx, provider, order["spec"]):
        raise _error(5)
    escrow.authorize_deposit(ctx, ident["provider"], deposit.denom, amount)
    bid_key = key("bid", ident)
    if ctx.store.has(bid_key):
        raise _error(21)
    bid = {
        "id": ident,
        "state": "open",
        "price": price,
        "created_at": str(ctx.height),
        "resources_offer": offers,
    }
    _save(ctx, "bid", bid)
    ctx.typed("akash.market.v1.EventBidCreated", id=ident, price=price)
    escrow.create_account(
        ctx, "bid", id_text(ident), owner=ident["provider"], denom=deposit.denom, amount=amount
    )


def close_bid(ctx: Ctx, msg: market_pb2.MsgCloseBid) -> None:
    ident = _ident(msg.id)
    if not 10000 <= msg.reason <= 19999:
        raise _error(33, f'value "{msg.reason}" range 10000..19999')
    reason = _reason_name(msg.reason)
    bid = ctx.store.get(key("bid", ident))
    if bid is None:
        raise _error(6)
    order = ctx.store.get(
        key("order", order_id(ident["owner"], ident["dseq"], ident["gseq"], ident["oseq"]))
    )
    if order is None:
        raise _error(9)
    if bid["state"] == "open":
        _close_bid(ctx, bid)
        return
    lease = ctx.store.get(key("lease", ident))
    if lease is None:
        raise _error(8)
    if lease["state"] != "active":
        raise _error(10)
    if bid["state"] != "active":
        raise _error(11)
    gid = {k: ident[k] for k in ("owner", "dseq", "gseq")}
    group = ctx.store.get(key("group", gid))
    if group is None:
        raise fail("deployment", 14, "Group not found")
    group["state"] = "paused"
    ctx.store.set(key("group", gid), group)
    ctx.typed("akash.deployment.v1.EventGroupPaused", id=gid)
    _close_lease(ctx, lease, "closed", reason)
    _close_bid(ctx, bid)
    _close_order(ctx, order)
    with contextlib.suppress(TxFailure):  # as on Akash: that does not undo the bid close
        _close_payment(ctx, lease)


def _reason_name(code: int) -> str:
    try:
        return market_v1.LeaseClosedReason.Name(code)
    except ValueError:
        return str(code)


# -- leases ---------------------------------------------------------------------------------


def create_lease(ctx: Ctx, msg: market_pb2.MsgCreateLease) -> None:
    ident = _ident(msg.bid_id)
    bid = ctx.store.get(key("bid", ident))
    if bid is None:
        raise _error(18)
    if bid["state"] != "open":
        raise _error(12)
    oid = order_id(ident["owner"], ident["dseq"], ident["gseq"], ident["oseq"])
    order = ctx.store.get(key("order", oid))
    if order is None:
        raise _error(15)
    if order["state"] != "open":
        raise _error(14)
    gid = {k: ident[k] for k in ("owner", "dseq", "gseq")}
    group = ctx.store.get(key("group", gid))
    if group is None:
        raise _error(16)
    if group["state"] != "open":
        raise _error(17)
    account = escrow.get_account(ctx, "deployment", f"{ident['owner']}/{ident['dseq']}")
    if account is None:
        raise fail(escrow.CODESPACE, escrow.ACCOUNT_NOT_FOUND, "account not found")
    escrow.create_payment(
        ctx,
        account,
        f"{ident['gseq']}/{ident['oseq']}/{ident['provider']}",
        ident["provider"],
        bid["price"],
    )
    lease = {
        "id": ident,
        "state": "active",
        "price": bid["price"],
        "created_at": str(ctx.height),
        "closed_on": "0",
        "reason": "lease_closed_invalid",
    }
    _save(ctx, "lease", lease)
    ctx.typed("akash.market.v1.EventLeaseCreated", id=ident, price=bid["price"])
    order["state"] = "active"
    _save(ctx, "order", order)
    bid["state"] = "active"
    _save(ctx, "bid", bid)
    for other in _children(ctx, "bid", oid):
        if other["state"] == "open":
            other["state"] = "lost"
            _save(ctx, "bid", other)
            _refund_bid(ctx, other)


def close_lease(ctx: Ctx, msg: market_pb2.MsgCloseLease) -> None:
    ident = _ident(msg.id)
    oid = order_id(ident["owner"], ident["dseq"], ident["gseq"], ident["oseq"])
    order = ctx.store.get(key("order", oid))
    if order is None:
        raise _error(15)
    if order["state"] != "active":
        raise _error(24)
    bid = ctx.store.get(key("bid", ident))
    if bid is None:
        raise _error(18)
    if bid["state"] != "active":
        raise _error(11)
    lease = ctx.store.get(key("lease", ident))
    if lease is None:
        raise _error(20)
    if lease["state"] not in ("active", "reclaiming"):
        raise _error(24)
    _close_lease(ctx, lease, "closed", REASON_OWNER)
    _close_bid(ctx, bid)
    _close_order(ctx, order)
    _close_payment(ctx, lease)
    group = ctx.store.get(key("group", {k: ident[k] for k in ("owner", "dseq", "gseq")}))
    if group is not None and group["state"] == "open":
        create_order(ctx, group["id"], group["group_spec"])


def withdraw_lease(ctx: Ctx, msg: market_pb2.MsgWithdrawLease) -> None:
    ident = _ident(msg.id)
    lease = ctx.store.get(key("lease", ident))
    if lease is None:
        raise _error(7)
    account_xid = f"{ident['owner']}/{ident['dseq']}"
    account = escrow.get_account(ctx, "deployment", account_xid)
    if account is None:
        raise fail(escrow.CODESPACE, escrow.ACCOUNT_NOT_FOUND, "account not found")
    payment = escrow.get_payment(
        ctx, "deployment", account_xid, f"{ident['gseq']}/{ident['oseq']}/{ident['provider']}"
    )
    if payment is None:
        raise fail(escrow.CODESPACE, escrow.PAYMENT_NOT_FOUND, "payment not found")
    escrow.withdraw(ctx, account, payment)
