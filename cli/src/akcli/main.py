"""``akash-provider``: the operator's and tenant's command line.

Sub-command groups live in their own modules; this one wires them together. The CLI sits
above every other package: it may use the libraries, and starts services as processes.
"""

from __future__ import annotations

import typer

from akcli import bus, sdl

app = typer.Typer(
    name="akash-provider",
    help="Akash Network provider: SDL tools today; the provider services as they land.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(sdl.app, name="sdl")
app.add_typer(bus.app, name="bus")

NOT_BUILT = """\
The provider services are not built yet. What exists today:

  akash-provider sdl validate FILE...   check SDL files (every problem, with its YAML path)
  akash-provider sdl manifest FILE      the manifest JSON a tenant sends, and its version hash
  akash-provider sdl groups FILE        the deployment groups an order asks for, with prices
  akash-provider bus dlq list STREAM    dead letters on the bus ($REDIS_URL, else embedded)
  akash-provider bus dlq replay STREAM  put them back on their stream
  python -m akdevnet start              the local chain; `python -m akdevnet tenant ...` tenants
  python -m akchainsvc                  the chain relay (`--help` lists its settings)
  python -m kubesim serve               a simulated Kubernetes cluster (`--kubeconfig OUT`)

The services (bid engine, cluster, manifest, balance, gateway) follow; `akash-provider run`
will start them all on these embedded defaults.
"""


@app.command()
def run() -> None:
    """Run the whole provider suite on embedded defaults (not built yet)."""
    typer.echo(NOT_BUILT, err=True)
    raise typer.Exit(code=1)
