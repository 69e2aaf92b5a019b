"""``akdevnet bid``: bid by hand as one of the devnet's providers (``provider``,
``competitor``), with no bid engine running. Every option value is checked before anything
is sent; what the chain refuses comes back as one error line.
"""

from __future__ import annotations

from typing import Annotated

import typer

from akchain import msgs
from akchain.wallet import Wallet
from akdevnet.cli_common import (
    BadOption,
    Dseq,
    Home,
    KeyName,
    Lcd,
    Node,
    app,
    chain,
    coin,
    fail,
    load_key,
    run,
    settings_of,
)
from aktypes.coin import Dec, DecCoin
from aktypes.ids import BidID


def _bid_price(text: str) -> Dec | DecCoin:
    """``--price``: a bare decimal (in each order's denomination), or a decimal coin."""
    parsed: Dec | DecCoin | None
    try:
        parsed = Dec(text.strip())
    except ValueError:
        try:
            parsed = DecCoin.parse(text)
        except ValueError:
            parsed = None
    amount = parsed.amount if isinstance(parsed, DecCoin) else parsed
    if parsed is None or amount is None or amount.is_negative():
        raise fail(
            f"--price {text!r} is not a price: a non-negative decimal amount in the order's "
            "denomination, e.g. 0.5, or with its denomination, e.g. 0.5uact"
        )
    return parsed


@app.command()
def bid(
    *,
    dseq: Dseq,
    owner: Annotated[
        str | None, typer.Option(help="the deployment's owner (default: tenant-1's address)")
    ] = None,
    key: KeyName = "provider",
    price_text: Annotated[
        str | None,
        typer.Option(
            "--price",
            help="price per block, in the order's denomination: 0.5 or 0.5uact "
            "(default: half the order's maximum)",
        ),
    ] = None,
    deposit: Annotated[str, typer.Option(help="bid deposit")] = "500000uakt",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
) -> None:
    """Bid on every open order of a deployment, as a provider, by hand (no bid engine needed).

    With --key competitor it bids as the devnet's second provider.
    """
    settings = settings_of(home)
    given = _bid_price(price_text) if price_text is not None else None
    wanted = given if isinstance(given, DecCoin) else None
    bid_deposit = coin("--deposit", deposit)
    signer = load_key(settings, key)
    tenant = owner or load_key(settings, "tenant-1").address

    async def work() -> list[str]:
        async with chain(settings, node, lcd) as (rpc, rest, chain_id):
            orders = await rest.orders(owner=tenant, dseq=dseq, state="open")
            if not orders:
                raise LookupError(f"deployment {tenant}/{dseq} has no open order")
            for order in orders:
                denom = order.spec.price().denom
                if wanted is not None and wanted.denom != denom:
                    raise BadOption(
                        f"--price {price_text}: order {order.id} is priced in {denom}, "
                        f"not {wanted.denom}; give the price in {denom}"
                    )
            wallet = Wallet(signer, rpc, rest, chain_id=chain_id)
            placed = []
            for order in orders:
                full = order.spec.price()
                if isinstance(given, Dec):
                    amount = DecCoin(denom=full.denom, amount=given)
                else:
                    amount = wanted or DecCoin(denom=full.denom, amount=full.amount.quo(2))
                bid_id = BidID(
                    owner=order.id.owner,
                    dseq=order.id.dseq,
                    gseq=order.id.gseq,
                    oseq=order.id.oseq,
                    provider=signer.address,
                )
                await wallet.send(msgs.create_bid(bid_id, amount, bid_deposit))
                placed.append(f"{bid_id} {amount}")
            return placed

    for line in run(work()):
        typer.echo(line)
