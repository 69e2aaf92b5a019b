"""``akash-provider bid screen``: would the running bid engine bid on an SDL, and at what price?

Sends each deployment group of the SDL to the bid engine as a ``ScreenBid`` command (on
``akash.provider.bidengine.commands``) and prints its answer: passed or every reason not,
the offer, the price. Nothing is reserved and no bid is placed. Exit status 0 when every
group would get a bid, 1 otherwise or on an error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from akbus import Bus, RequestTimeout
from akcli.bus import RedisUrl, Wait, with_bus
from akcli.sdl import load_or_exit, make_console
from aktypes.events import BidScreened, ScreenBid
from aktypes.events.streams import BIDENGINE_COMMANDS
from aktypes.groupspec import GroupSpec

app = typer.Typer(help="Ask the bid engine about orders.", no_args_is_help=True)


@app.command()
def screen(  # noqa: PLR0917 - typer options
    path: Annotated[Path, typer.Argument(help="An SDL file.")],
    owner: Annotated[str, typer.Option(help="The tenant the order would come from.")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the answers as JSON.")] = False,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for an answer.")] = 30.0,
    redis_url: RedisUrl = None,
    wait: Wait = 5.0,
) -> None:
    """Would the bid engine bid on each group of an SDL? Why not, or at what price."""
    sdl = load_or_exit(make_console(), path, strict=False)

    async def work(bus: Bus) -> list[BidScreened]:
        answers = []
        for group in sdl.groups:
            try:
                answers.append(
                    await bus.request(
                        BIDENGINE_COMMANDS,
                        ScreenBid(group=group, owner=owner),
                        BidScreened,
                        timeout_s=timeout,
                    )
                )
            except RequestTimeout as exc:
                raise typer.Exit(code=_no_engine(timeout)) from exc
        return answers

    answers = with_bus(redis_url, work, wait)
    if as_json:
        typer.echo(json.dumps([
            {"group": g.name, **a.model_dump(mode="json", exclude={"type"})}
            for g, a in zip(sdl.groups, answers, strict=True)
        ], indent=2))  # fmt: skip
    else:
        _print(sdl.groups, answers)
    if not all(a.passed for a in answers):
        raise typer.Exit(code=1)


def _no_engine(timeout: float) -> int:
    Console(stderr=True).print(
        f"no answer from the bid engine within {timeout:.0f}s: is it running on this Redis?"
    )
    return 1


def _print(groups: Sequence[GroupSpec], answers: list[BidScreened]) -> None:
    console = Console(highlight=False, width=200)
    table = Table()
    for column in ("group", "bid", "price", "reasons / offer"):
        table.add_column(column)
    for group, answer in zip(groups, answers, strict=True):
        if answer.passed:
            offer = "; ".join(f"unit {o.resources.id} × {o.count}" for o in answer.offer)
            table.add_row(group.name, "yes", str(answer.price), escape(offer))
        else:
            reasons = "\n".join(f"{r.code}: {r.message}" for r in answer.reasons)
            price = str(answer.price) if answer.price else ""
            table.add_row(group.name, "no", price, escape(reasons))
    console.print(table)
