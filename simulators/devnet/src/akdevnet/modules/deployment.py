"""Deployments and their groups: create (deposit, one order per group), update, close.

A deployment is priced and funded in ``uact``; its deposit goes to an escrow account
``deployment/<owner>/<dseq>``. Closing it, or its account running dry, closes every group
with its orders, bids and leases (the escrow account-closed hook below).
"""

from __future__ import annotations

import base64

from akchain._pb.akash.deployment.v1beta4 import deployment_pb2
from akchain.convert import group_spec_from_pb
from akdevnet.context import Ctx, deployment_id, group_id, id_text, key, to_json
from akdevnet.errors import fail, sdk, unregistered
from akdevnet.modules import bank, escrow, market
from akdevnet.store import Doc
from aktypes.errors import GroupSpecError
from aktypes.groupspec import validate_groups

CODESPACE = "deployment"
EXISTS, NOT_FOUND, CLOSED, INVALID_GROUPS, EMPTY_HASH, INVALID_HASH = 3, 4, 5, 7, 9, 10
INVALID_DEPOSIT, INVALID_PRICE = 20, 24
_MESSAGES = {
    3: "Deployment exists",
    4: "Deployment not found",
    5: "Deployment closed",
    7: "Invalid groups",
    9: "Invalid: empty hash",
    10: "Invalid: deployment hash",
    20: "Deposit invalid",
    24: "invalid price",
}
DEPLOYMENT_DENOM = "uact"


def _error(code: int, context: str = "") -> Exception:
    return fail(CODESPACE, code, _MESSAGES[code], context)


def get(ctx: Ctx, ident: Doc) -> Doc | None:
    return ctx.store.get(key("deployment", ident))


def groups_of(ctx: Ctx, ident: Doc) -> list[Doc]:
    return [doc for _, doc in ctx.store.scan(key("group", ident) + "/")]


def _check_hash(value: bytes) -> None:
    if not value:
        raise _error(EMPTY_HASH)
    if len(value) != 32:
        raise _error(INVALID_HASH)


def _check_id(ident: Doc) -> None:
    bank.check_address(ident["owner"], "owner")
    if int(ident["dseq"]) == 0:
        raise sdk(3, "invalid sequence", "DeploymentID: Invalid Deployment Sequence")


def create(ctx: Ctx, msg: deployment_pb2.MsgCreateDeployment) -> None:
    ident = deployment_id(msg.id.owner, msg.id.dseq)
    _check_id(ident)
    if not msg.deposit.sources:
        raise fail("akash", 4, "invalid deposit source", "empty deposit sources")
    if not msg.groups:
        raise _error(INVALID_GROUPS)
    _check_hash(msg.hash)
    specs = [group_spec_from_pb(g) for g in msg.groups]
    try:
        validate_groups(specs)
    except GroupSpecError as exc:
        raise _error(INVALID_GROUPS, "; ".join(exc.problems)) from exc
    deposit = msg.deposit.amount
    amount = int(deposit.amount or "0")
    for spec in specs:
        if amount and spec.price().denom != deposit.denom:
            raise _error(
                INVALID_DEPOSIT,
                f"Mismatched denominations ({spec.price().denom} != {deposit.denom})",
            )
    if get(ctx, ident) is not None:
        raise _error(EXISTS)
    minimum = ctx.params.deployment_min_deposit.get(deposit.denom)
    if minimum is None:
        raise unregistered(f"Deposit invalid: Invalid deposit denomination {deposit.denom}")
    if amount < minimum:
        raise _error(
            INVALID_DEPOSIT, f"Deposit too low - {amount}{deposit.denom} < {minimum}{deposit.denom}"
        )
    if deposit.denom != DEPLOYMENT_DENOM:
        raise _error(INVALID_DEPOSIT)
    if specs[0].price().denom != DEPLOYMENT_DENOM:
        raise _error(INVALID_PRICE, f"unsupported denomination {specs[0].price().denom}")
    escrow.authorize_deposit(ctx, ident["owner"], deposit.denom, amount)

    ctx.store.set(
        key("deployment", ident),
        {
            "id": ident,
            "state": "active",
            "hash": base64.b64encode(msg.hash).decode(),
            "created_at": str(ctx.height),
        },
    )
    ctx.typed(
        "akash.deployment.v1.EventDeploymentCreated",
        id=ident,
        hash=base64.b64encode(msg.hash).decode(),
    )
    for gseq, group in enumerate(msg.groups, start=1):
        gid = group_id(ident["owner"], ident["dseq"], gseq)
        spec_doc = to_json(group)
        ctx.store.set(
            key("group", gid),
            {"id": gid, "state": "open", "group_spec": spec_doc, "created_at": str(ctx.height)},
        )
        market.create_order(ctx, gid, spec_doc)
    escrow.create_account(
        ctx, "deployment", id_text(ident), owner=ident["owner"], denom=deposit.denom, amount=amount
    )


def update(ctx: Ctx, msg: deployment_pb2.MsgUpdateDeployment) -> None:
    ident = deployment_id(msg.id.owner, msg.id.dseq)
    _check_id(ident)
    _check_hash(msg.hash)
    found = get(ctx, ident)
    if found is None:
        raise _error(NOT_FOUND)
    if found["state"] != "active":
        raise _error(CLOSED)
    new_hash = base64.b64encode(msg.hash).decode()
    if found["hash"] == new_hash:
        raise _error(INVALID_HASH, "deployment hash has not changed")
    found["hash"] = new_hash
    ctx.store.set(key("deployment", ident), found)
    ctx.typed("akash.deployment.v1.EventDeploymentUpdated", id=ident, hash=new_hash)


def close(ctx: Ctx, msg: deployment_pb2.MsgCloseDeployment) -> None:
    ident = deployment_id(msg.id.owner, msg.id.dseq)
    _check_id(ident)
    found = get(ctx, ident)
    if found is None:
        raise _error(NOT_FOUND)
    if found["state"] != "active":
        raise _error(CLOSED)
    account = escrow.get_account(ctx, "deployment", id_text(ident))
    if account is None:
        raise fail(escrow.CODESPACE, escrow.ACCOUNT_NOT_FOUND, "account not found")
    escrow.close_account(ctx, account)  # the hook below closes the deployment


def on_account_closed(ctx: Ctx, account: Doc) -> None:
    """Escrow hook: the deployment's account closed or ran dry; close everything it funds."""
    owner, dseq = account["id"]["xid"].split("/")
    ident = deployment_id(owner, dseq)
    found = get(ctx, ident)
    if found is None or found["state"] != "active":
        return
    found["state"] = "closed"
    ctx.store.set(key("deployment", ident), found)
    ctx.typed("akash.deployment.v1.EventDeploymentClosed", id=ident)
    overdrawn = account["state"]["state"] == "overdrawn"
    for group in groups_of(ctx, ident):
        if group["state"] == "closed":
            continue
        group["state"] = "insufficient_funds" if overdrawn else "closed"
        ctx.store.set(key("group", group["id"]), group)
        ctx.typed("akash.deployment.v1.EventGroupClosed", id=group["id"])
        market.on_group_closed(ctx, group["id"], insufficient_funds=overdrawn)


escrow.ACCOUNT_CLOSED_HOOKS.append(on_account_closed)
