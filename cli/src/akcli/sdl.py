"""``akash-provider sdl``: validate SDL files, print their manifest or deployment groups."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from aktypes.errors import SDLError
from aktypes.quantity import format_bytes, format_cpu
from aktypes.sdl import SDL, Diagnostic, parse_sdl

app = typer.Typer(help="Validate SDL files and show what they turn into.", no_args_is_help=True)

StrictOption = Annotated[
    bool,
    typer.Option("--strict", help="Treat warnings (what Akash silently tolerates) as errors."),
]


def make_console() -> Console:
    # Piped output is not cut to 80 columns: tables stay readable in files and logs.
    return Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 200)


def _report(console: Console, source: str, diagnostic: Diagnostic) -> None:
    where = f"{source}:{diagnostic.position}" if diagnostic.line is not None else source
    style = "red" if diagnostic.is_error else "yellow"
    label = "error" if diagnostic.is_error else "warning"
    path = diagnostic.path or "(document)"
    text = escape(f"{where}: {path}: {diagnostic.message}")
    console.print(f"[{style}]{label}[/]: {text}", markup=True)


def _load(path: Path, *, strict: bool) -> SDL:
    """Parse one file or raise ``SDLError`` (an unreadable file is an error too)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SDLError([Diagnostic("", f"cannot read the file: {exc.strerror or exc}")]) from exc
    return parse_sdl(data, strict=strict)


def load_or_exit(console: Console, path: Path, *, strict: bool) -> SDL:
    try:
        return _load(path, strict=strict)
    except SDLError as exc:
        for diagnostic in exc.diagnostics:
            _report(console, str(path), diagnostic)
        raise typer.Exit(code=1) from exc


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="SDL files to check.", show_default=False)],
    strict: StrictOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print errors only.")] = False,
) -> None:
    """Check SDL files; exit 0 when every file is valid, 1 otherwise."""
    console = make_console()
    invalid = 0
    for path in files:
        try:
            sdl = _load(path, strict=strict)
        except SDLError as exc:
            invalid += 1
            for diagnostic in exc.diagnostics:
                if diagnostic.is_error or not quiet:
                    _report(console, str(path), diagnostic)
            continue
        if not quiet:
            for diagnostic in sdl.warnings:
                _report(console, str(path), diagnostic)
    valid = len(files) - invalid
    if not quiet or invalid:
        console.print(f"{valid} valid, {invalid} invalid ({len(files)} files)")
    if invalid:
        raise typer.Exit(code=1)


@app.command()
def manifest(
    file: Annotated[Path, typer.Argument(help="SDL file.", show_default=False)],
    body: Annotated[
        bool, typer.Option("--body", help="Print only the manifest, exactly as it is PUT.")
    ] = False,
    strict: StrictOption = False,
) -> None:
    """Print the manifest a tenant sends to providers, with its version hash."""
    console = make_console()
    sdl = load_or_exit(Console(stderr=True, highlight=False), file, strict=strict)
    if body:
        typer.echo(json.dumps(sdl.manifest.go_json(), separators=(",", ":")))
        return
    document = {"version": sdl.manifest.version_hex(), "manifest": sdl.manifest.go_json()}
    console.print_json(json.dumps(document), indent=2, highlight=False)


def _units_table(sdl: SDL) -> Table:
    table = Table(title=None, show_lines=False)
    for column in (
        "group",
        "unit",
        "count",
        "cpu",
        "memory",
        "storage",
        "gpu",
        "endpoints",
        "price",
    ):
        table.add_column(column)
    for group in sdl.groups:
        for unit in group.resources:
            res = unit.resource
            storage = ", ".join(
                f"{v.name}={format_bytes(v.size.val)}({v.storage_class})" for v in res.storage or ()
            )
            gpu = str(res.gpu_units)
            if res.gpu and res.gpu.attributes:
                gpu += " " + ",".join(a.key.removeprefix("vendor/") for a in res.gpu.attributes)
            kinds = Counter(ep.kind.name.lower() for ep in res.endpoints or ())
            endpoints = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "-"
            table.add_row(
                group.name,
                str(res.id),
                str(unit.count),
                format_cpu(res.cpu_millis),
                format_bytes(res.memory_bytes),
                storage,
                gpu,
                endpoints,
                f"{unit.price.amount.normalized()}{unit.price.denom}",
            )
    return table


@app.command()
def groups(
    file: Annotated[Path, typer.Argument(help="SDL file.", show_default=False)],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the groups as the chain stores them.")
    ] = False,
    strict: StrictOption = False,
) -> None:
    """Print the deployment groups (resources, counts, max price) an order asks for."""
    console = make_console()
    sdl = load_or_exit(Console(stderr=True, highlight=False), file, strict=strict)
    if as_json:
        data = [
            {**group.go_dict(), "max_price": json.loads(group.price().model_dump_json())}
            for group in sdl.groups
        ]
        console.print_json(json.dumps(data), indent=2, highlight=False)
        return
    console.print(_units_table(sdl))
    for group in sdl.groups:
        price = group.price()
        requirements = group.requirements
        attrs = ", ".join(f"{a.key}={a.value}" for a in requirements.attributes or ()) or "none"
        console.print(
            f"group {group.name}: max price {price.amount.normalized()}{price.denom} per block; "
            f"requires {attrs}"
        )
        auditors = [
            *(f"all of {a}" for a in requirements.signed_by.all_of or ()),
            *(f"any of {a}" for a in requirements.signed_by.any_of or ()),
        ]
        if auditors:
            console.print(f"  signed by: {'; '.join(auditors)}")
