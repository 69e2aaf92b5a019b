"""``akash-provider bus dlq``: against a real Redis, through the command itself."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from akbus import Bus, RedisSettings
from akbus.embedded import shared_server, stop_shared_server
from akcli.main import app
from aktypes.events import DeadLetter, OrderCreated, envelope_from_fields, streams
from aktypes.ids import OrderID
from aktypes.testing import address

runner = CliRunner()
S = streams.CHAIN_EVENTS


def seed(url: str, count: int) -> list[str]:
    """``count`` dead letters of order events, as a failing consumer would leave them."""

    async def run() -> list[str]:
        bus = Bus.connect(RedisSettings(url=url), producer="test")
        ids = []
        for n in range(1, count + 1):
            event = OrderCreated(
                order_id=OrderID(owner=address(1), dseq=n, gseq=1, oseq=1), height=n, event_index=0
            )
            fields = bus.envelope(event).to_fields()
            letter = DeadLetter(
                source_stream=S, entry_id=f"{n}-0", group="bidengine", consumer="b-0",
                error="PermanentError: bad order", attempts=3, fields=fields,
            )  # fmt: skip
            ids.append(await bus.backend.xadd(f"{S}.dlq", bus.envelope(letter).to_fields()))
        await bus.close()
        return ids

    return asyncio.run(run())


def stream_entries(url: str, stream: str) -> list[dict[str, str]]:
    async def run() -> list[dict[str, str]]:
        bus = Bus.connect(RedisSettings(url=url), producer="test")
        found = [e.fields for e in await bus.backend.entries(stream)]
        await bus.close()
        return found

    return asyncio.run(run())


def test_list_shows_why_entries_failed(redis_url: str) -> None:
    seed(redis_url, 2)
    result = runner.invoke(app, ["bus", "dlq", "list", S, "--redis-url", redis_url])
    assert result.exit_code == 0, result.output
    assert "PermanentError: bad order" in result.output
    assert "chain.order.created" in result.output and "bidengine" in result.output
    assert "2 dead letter(s)" in result.output


def test_list_reads_redis_url_from_the_environment(redis_url: str) -> None:
    result = runner.invoke(app, ["bus", "dlq", "list", S], env={"REDIS_URL": redis_url})
    assert result.exit_code == 0
    assert f"no dead letters for {S}" in result.output


def test_replay_puts_letters_back_on_their_stream(redis_url: str) -> None:
    first, _ = seed(redis_url, 2)
    result = runner.invoke(
        app, ["bus", "dlq", "replay", S, "--id", first, "--redis-url", redis_url]
    )
    assert result.exit_code == 0, result.output
    assert "replayed 1 dead letter(s)" in result.output
    (replayed,) = stream_entries(redis_url, S)
    assert envelope_from_fields(replayed).payload.order_id.dseq == 1  # type: ignore[attr-defined]
    assert len(stream_entries(redis_url, f"{S}.dlq")) == 1
    result = runner.invoke(app, ["bus", "dlq", "replay", S, "--all", "--redis-url", redis_url])
    assert "replayed 1 dead letter(s)" in result.output
    assert stream_entries(redis_url, f"{S}.dlq") == []


def test_replay_needs_ids_or_all_and_reports_unknown_ids(redis_url: str) -> None:
    result = runner.invoke(app, ["bus", "dlq", "replay", S, "--redis-url", redis_url])
    assert result.exit_code == 2 and "--all" in result.output
    result = runner.invoke(
        app, ["bus", "dlq", "replay", S, "--id", "1-0", "--redis-url", redis_url]
    )
    assert result.exit_code == 1 and "not found: 1-0" in result.output


def test_unreachable_redis_is_a_clean_error() -> None:
    result = runner.invoke(
        app, ["bus", "dlq", "list", S, "--redis-url", "redis://127.0.0.1:9/0", "--wait", "0.3"]
    )
    assert result.exit_code == 1
    assert "cannot reach Redis at redis://127.0.0.1:9/0" in result.output
    assert "Traceback" not in result.output


def test_without_a_url_the_embedded_server_is_used(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("emb")
    env = {"REDIS_URL": "", "REDIS_EMBEDDED_DIR": str(folder)}
    result = runner.invoke(app, ["bus", "dlq", "list", S], env=env)
    assert result.exit_code == 1
    assert f"no embedded Redis is running in {folder}" in result.output
    url = shared_server(folder)
    try:
        seed(url, 1)
        result = runner.invoke(app, ["bus", "dlq", "list", S], env=env)
        assert result.exit_code == 0, result.output
        assert "1 dead letter(s)" in result.output
    finally:
        assert stop_shared_server(folder)
