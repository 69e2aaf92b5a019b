"""Settings: one duration type, errors that name the variable, --help, name collisions."""

from __future__ import annotations

import io
import json
import logging

import pytest
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from akbus import BusSettings, RedisSettings
from akservice import Duration, ServiceSpec, SettingsError, load_config, logs
from akservice.cli import parser
from akservice.settings import conflicts, runtime_settings, settings_of
from aktypes.duration import format_duration, parse_duration


class Example(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore")

    bid_timeout: Duration = Field(default=300.0, gt=0, description="how long a bid may stay open")
    price: int = Field(default=1, ge=1)
    secret: SecretStr = Field(default=SecretStr("xyz"), min_length=3)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5m", 300), ("1h30m", 5400), ("250ms", 0.25), ("1.5s", 1.5), ("30", 30), (" 2h ", 7200),
     ("0", 0), (12, 12), (0.5, 0.5), ("90us", 0.00009)],
)  # fmt: skip
def test_one_duration_syntax(text: object, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["fast", "5 minutes", "", "1d", "m5", "1h-30m", True])
def test_what_is_not_a_duration_says_what_one_looks_like(text: object) -> None:
    with pytest.raises(ValueError, match="is not a duration \\(examples: 30s, 5m, 1h30m"):
        parse_duration(text)


def test_durations_print_the_way_they_are_written() -> None:
    assert [format_duration(s) for s in (300, 5400, 0.25, 1.5, 0)] == [
        "5m", "1h30m", "250ms", "1.5s", "0s",
    ]  # fmt: skip


def test_every_problem_is_one_line_naming_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AP_BID_TIMEOUT", "fast")
    monkeypatch.setenv("AP_PRICE", "0")
    monkeypatch.setenv("AP_SECRET", "no")
    monkeypatch.setenv("AKBUS_BATCH", "lots")
    monkeypatch.setenv("REDIS_URL", "localhost:6379")
    monkeypatch.setenv("AP_EXAMPLE_HEALTH_LISTEN", "8091")
    with pytest.raises(SettingsError) as info:
        load_config(Example, runtime_settings("example", "127.0.0.1:1"))
    assert info.value.problems == [
        "AP_BID_TIMEOUT='fast': 'fast' is not a duration (examples: 30s, 5m, 1h30m, 250ms)",
        "AP_PRICE='0': Input should be greater than or equal to 1",
        "AP_SECRET: Value should have at least 3 items after validation, not 2",  # not "no"
        "AP_EXAMPLE_HEALTH_LISTEN='8091': '8091' is not host:port (example: 0.0.0.0:8091)",
        "REDIS_URL='localhost:6379': REDIS_URL 'localhost:6379' must start with one of "
        "redis://, rediss://, unix://, redis+sentinel://, sentinel://",
        "AKBUS_BATCH='lots': Input should be a valid integer, unable to parse string as an integer",
    ]


def test_settings_are_composed_once_with_service_bus_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AP_BID_TIMEOUT", "1h30m")
    monkeypatch.setenv("AKBUS_BATCH", "7")
    config = load_config(Example, runtime_settings("example", "127.0.0.1:1"),
                         bus={"batch": 1, "concurrency": 3})  # fmt: skip
    assert config.service.bid_timeout == 5400
    assert (config.bus.batch, config.bus.concurrency) == (7, 3)  # the environment wins
    assert config.runtime.listen() == ("127.0.0.1", 1)


def test_help_lists_every_setting_with_its_name_and_default() -> None:
    spec_parser = parser(_spec())
    text = spec_parser.format_help()
    for cls in (Example, runtime_settings("example", "0.0.0.0:8095"), RedisSettings, BusSettings):
        for item in settings_of(cls):
            line = next(line for line in text.splitlines() if line.split()[:1] == [item.name])
            assert item.default in line
    assert "AP_BID_TIMEOUT" in text and "5m" in text  # durations shown as written
    assert "AP_EXAMPLE_HEALTH_LISTEN" in text and "0.0.0.0:8095" in text


def test_a_name_two_services_declare_differently_is_found() -> None:
    class Other(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore")
        bid_timeout: Duration = Field(default=60.0)
        price: int = Field(default=1, ge=1)

    problems = conflicts([("one", Example), ("two", Other)])
    assert problems == [
        "AP_BID_TIMEOUT is <class 'float'> = 5m in one but <class 'float'> = 1m in two"
    ]
    runtimes = [(n, runtime_settings(n, "0.0.0.0:1")) for n in ("one", "two")]
    assert conflicts(runtimes) == []  # health addresses carry the service's name


def test_logs_keep_extra_fields_and_bound_ids() -> None:
    out = io.StringIO()
    logs.setup("example", fmt="json", stream=out)
    try:
        with logs.bound(order_id="akash1x/1/1/1", lease_id=None):
            logging.getLogger("akbus").warning(
                "dead-lettered", extra={"stream": "s", "entry": "1-0", "error": "boom"}
            )
        record = json.loads(out.getvalue())
        assert record["event"] == "dead-lettered" and record["level"] == "warning"
        assert (record["stream"], record["entry"], record["error"]) == ("s", "1-0", "boom")
        assert record["service"] == "example" and record["order_id"] == "akash1x/1/1/1"
        assert "lease_id" not in record
        text = io.StringIO()
        logs.setup("example", fmt="text", stream=text)
        logging.getLogger("akbus").info("hello", extra={"stream": "s"})
        assert "hello" in text.getvalue() and "stream=s" in text.getvalue()
    finally:
        logging.getLogger().handlers.clear()


def test_the_log_is_rate_limited_per_logger_and_message() -> None:
    out = io.StringIO()
    logs.setup("example", fmt="json", stream=out, rate=5)
    try:
        refused, other = logging.getLogger("akgateway"), logging.getLogger("akbus")
        for n in range(1000):  # a flood of one message, at once
            refused.warning("request %d refused", n)
        other.warning("something else")  # another message is not held back
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [r["event"] for r in lines] == [f"request {n} refused" for n in range(5)] + [
            "something else"
        ]
        limit = logging.getLogger().handlers[0].filters[0]
        assert isinstance(limit, logs.RateLimit)
        limit.clock = lambda: 1e9  # much later: the bucket is full again
        refused.warning("request %d refused", 1000)
        last = json.loads(out.getvalue().splitlines()[-1])
        assert (last["event"], last["dropped"]) == ("request 1000 refused", 995)
    finally:
        logging.getLogger().handlers.clear()


def _spec() -> ServiceSpec[Example]:
    async def start(_: object) -> None:
        return None

    return ServiceSpec(
        name="example", title="example", summary="s", distribution="akservice",
        settings=Example, health_listen="0.0.0.0:8095", start=start,
    )  # fmt: skip
