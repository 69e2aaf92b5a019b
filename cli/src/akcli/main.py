"""``akash-provider``: the operator's and tenant's command line.

Sub-command groups live in their own modules; this one wires them together. The CLI sits
above every other package: it may use the libraries, and starts services as processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from akcli import bid, bus, cluster, operator, provider_check, sdl

app = typer.Typer(
    name="akash-provider",
    help=(
        "Akash Network provider: run the suite, see what it is doing, SDL tools, the bus,"
        " bid screening, onboarding a cluster."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(sdl.app, name="sdl")
app.add_typer(bus.app, name="bus")
app.add_typer(bid.app, name="bid")
app.add_typer(cluster.app, name="cluster")
app.add_typer(provider_check.app, name="provider")


@app.command()
def run(
    tenants: Annotated[int, typer.Option(min=0, max=50, help="simulated tenants")] = 3,
    block_time: Annotated[str, typer.Option(help="the devnet's block time")] = "500ms",
    state: Annotated[
        Path, typer.Option(help="folder of the chain, Redis, kubesim and logs")
    ] = Path(".akash-provider"),
) -> None:
    """Run the whole provider suite on embedded defaults, each part as its own process."""
    from akcli.suite import run_suite  # noqa: PLC0415 - imports every service's package

    raise typer.Exit(code=run_suite(tenants=tenants, block_time=block_time, state=state))


# what the running provider is doing (see akcli.operator)
app.command("status")(operator.status)
app.command("leases")(operator.leases)
app.command("orders")(operator.orders)
app.command("events")(operator.events)
