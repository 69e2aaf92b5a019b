"""``akash-provider bus``: inspect and replay dead letters on the Redis bus.

Connects with ``REDIS_URL`` (and ``REDIS_PASSWORD``), or ``--redis-url``; without either, to
the embedded server the provider runs in ``REDIS_EMBEDDED_DIR``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from akbus import Bus, ConnectionLost, RedisSettings
from akbus.embedded import EmbeddedRedisError, shared_server
from akbus.settings import redact

app = typer.Typer(help="The Redis Streams bus: dead letters.", no_args_is_help=True)
dlq = typer.Typer(help="Entries that could not be handled (<stream>.dlq).", no_args_is_help=True)
app.add_typer(dlq, name="dlq")

T = TypeVar("T")
RedisUrl = Annotated[
    str | None,
    typer.Option(
        "--redis-url",
        help="Redis URL (default: $REDIS_URL, else the embedded server).",
        show_default=False,
    ),
]
Stream = Annotated[str, typer.Argument(help="The source stream, e.g. akash.chain.events.")]
Wait = Annotated[float, typer.Option("--wait", min=0, help="Seconds to wait for Redis.")]


def with_bus(url: str | None, work: Callable[[Bus], Awaitable[T]], wait_s: float = 5.0) -> T:
    settings = RedisSettings(url=url) if url else RedisSettings()
    if not settings.url:  # the embedded server, if the provider started one
        try:
            embedded = shared_server(settings.embedded_dir, start=False)
        except EmbeddedRedisError as exc:
            Console(stderr=True).print(escape(str(exc)))
            raise typer.Exit(code=1) from exc
        settings = settings.model_copy(update={"url": embedded})

    async def run() -> T:
        bus = Bus.connect(settings, producer="akash-provider-cli")
        try:
            await bus.wait_ready(timeout_s=wait_s)
            return await work(bus)
        finally:
            await bus.close()

    try:
        return asyncio.run(run())
    except ConnectionLost as exc:
        Console(stderr=True).print(
            f"cannot reach Redis at {redact(settings.url)}: {escape(str(exc))}"
        )
        raise typer.Exit(code=1) from exc


@dlq.command("list")
def list_letters(
    stream: Stream,
    count: Annotated[int, typer.Option("--count", "-n", min=1, help="How many to show.")] = 100,
    redis_url: RedisUrl = None,
    wait: Wait = 5.0,
) -> None:
    """List the oldest dead letters of STREAM, with why they failed."""
    letters = with_bus(redis_url, lambda bus: bus.dead_letters(stream, count=count), wait)
    console = Console(highlight=False, width=200)
    if not letters:
        console.print(f"no dead letters for {stream}")
        return
    table = Table()
    for column in ("dead letter", "source entry", "type", "group", "consumer", "attempts", "error"):
        table.add_column(column)
    for item in letters:
        letter = item.letter
        table.add_row(
            item.id,
            letter.entry_id,
            letter.fields.get("type", "?"),
            letter.group,
            letter.consumer,
            str(letter.attempts),
            escape(letter.error),
        )
    console.print(table)
    console.print(f"{len(letters)} dead letter(s) for {stream}")


@dlq.command("replay")
def replay(
    stream: Stream,
    ids: Annotated[
        list[str] | None, typer.Option("--id", help="A dead letter to replay (repeatable).")
    ] = None,
    replay_all: Annotated[bool, typer.Option("--all", help="Replay every dead letter.")] = False,
    redis_url: RedisUrl = None,
    wait: Wait = 5.0,
) -> None:
    """Put dead letters back on STREAM (the same event: consumers still apply it once)."""
    if not ids and not replay_all:
        raise typer.BadParameter("name dead letters with --id, or pass --all")
    if ids and replay_all:
        raise typer.BadParameter("--id and --all cannot be combined")

    async def work(bus: Bus) -> tuple[list[str], set[str]]:
        known = {item.id for item in await bus.dead_letters(stream, count=10_000)}
        missing = set(ids or ()) - known
        return await bus.replay_dead_letters(stream, None if replay_all else ids), missing

    replayed, missing = with_bus(redis_url, work, wait)
    console = Console(highlight=False)
    console.print(f"replayed {len(replayed)} dead letter(s) onto {stream}")
    if missing:
        console.print(f"not found: {', '.join(sorted(missing))}")
        raise typer.Exit(code=1)
