"""The script strategy with real processes: Go's contract, failures, limits, the example."""

from __future__ import annotations

import asyncio
import json
import os
import time
from decimal import Decimal, localcontext
from pathlib import Path

import pytest

from akbidengine.adapters.price_script import ShellScriptStrategy, parse_script_output
from akbidengine.domain.pricing import PriceRequest, PricingError, script_stdin
from akservice.testing import eventually
from aktypes.coin import Dec, DecCoin
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.resources import CPU, GPU, Memory, Resources, rv
from aktypes.sdl import parse_sdl

EXAMPLE = Path(__file__).parents[1] / "examples" / "price_script.sh"
CORPUS = Path(__file__).parents[3] / "libs/aktypes/tests/data/awesome-akash"
OWNER = "akash1tenant"


def script(tmp_path: Path, body: str, name: str = "price.sh") -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def simple_request(denom: str = "uakt", price: str = "100") -> PriceRequest:
    unit = ResourceUnit(
        resource=Resources(
            id=1,
            cpu=CPU(units=rv(500)),
            memory=Memory(size=rv(2**29)),
            gpu=GPU(units=rv(0)),
            endpoints=[],
        ),
        count=2,
        price=DecCoin(denom=denom, amount=Dec(price)),
    )
    return PriceRequest(owner=OWNER, group=GroupSpec(name="g", resources=[unit]))


def env_with(**extra: str) -> dict[str, str]:
    return dict(os.environ) | extra


async def failure(strategy: ShellScriptStrategy, request: PriceRequest) -> PricingError:
    with pytest.raises(PricingError) as info:
        await strategy.price(request)
    return info.value


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


# --- the contract ---------------------------------------------------------------------------------


async def test_bid_is_what_the_script_prints_with_owner_denom_and_stdin(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        'cat > "$DIR/stdin"\n'
        'printf "%s %s" "$AKASH_OWNER" "$AKASH_DENOM" > "$DIR/env"\n'
        "printf '  12.345678\\n\\n'\n",
    )
    request = simple_request()
    strategy = ShellScriptStrategy(path, env=env_with(DIR=str(tmp_path)))
    price = await strategy.price(request)
    assert price == DecCoin(denom="uakt", amount=Dec("12.345678"))
    assert (tmp_path / "env").read_text() == f"{OWNER} uakt"
    sent = (tmp_path / "stdin").read_bytes()
    assert sent == script_stdin(request)
    data = json.loads(sent)
    assert data["price"] == {"denom": "uakt", "amount": "200.000000000000000000"}
    assert data["price_precision"] == 6
    assert data["resources"][0] == {
        "memory": 2**29,
        "cpu": 500,
        "gpu": {"units": 0, "attributes": {}},
        "storage": [],
        "count": 2,
        "endpoint_quantity": 0,
        "ip_lease_quantity": 0,
    }


async def test_inherits_the_daemon_environment_and_overrides_akash_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRICE_FROM_DAEMON", "7.5")
    monkeypatch.setenv("AKASH_OWNER", "someone-else")
    path = script(tmp_path, 'test "$AKASH_OWNER" = akash1tenant && echo "$PRICE_FROM_DAEMON"\n')
    price = await ShellScriptStrategy(path).price(simple_request())
    assert price.amount == Dec("7.5")


async def test_non_zero_exit_carries_bounded_stderr(tmp_path: Path) -> None:
    path = script(tmp_path, "echo 'tenant not whitelisted' >&2\necho 5\nexit 3\n")
    error = await failure(ShellScriptStrategy(path), simple_request())
    assert error.code == "script_failed"
    assert "status 3" in str(error) and "tenant not whitelisted" in str(error)

    noisy = script(tmp_path, "head -c 50000 /dev/zero | tr '\\0' x >&2\nexit 1\n", "noisy.sh")
    error = await failure(ShellScriptStrategy(noisy), simple_request())
    assert error.code == "script_failed"
    assert 1000 < len(str(error)) < 1300
    assert "49000 more characters" in str(error)


async def test_missing_script_fails(tmp_path: Path) -> None:
    error = await failure(ShellScriptStrategy(tmp_path / "absent.sh"), simple_request())
    assert error.code == "script_failed"
    assert "absent.sh" in str(error)


async def test_slow_script_and_its_children_are_killed_at_the_timeout(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        'echo $$ > "$DIR/pid"\nsleep 30 &\necho $! > "$DIR/child"\nwait\necho 1\n',
    )
    strategy = ShellScriptStrategy(path, timeout=0.5, env=env_with(DIR=str(tmp_path)))
    started = time.monotonic()
    error = await failure(strategy, simple_request())
    assert error.code == "script_timeout"
    assert "0.5s" in str(error)
    assert time.monotonic() - started < 5
    pids = [int((tmp_path / name).read_text()) for name in ("pid", "child")]
    await eventually(
        lambda: [pid for pid in pids if alive(pid)], 5, "the script and its child gone",
        until=lambda living: not living,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("printed", "says"),
    [
        ("", "printed nothing"),
        ("   \n", "printed nothing"),
        ("twelve", "'twelve', not a number"),
        ("1.5uakt", "not a number"),
        (".5", "not a number"),
        ("1e3", "not a number"),
        ("0", "above zero"),
        ("0.000", "above zero"),
        ("-3", "above zero"),
        ("0.1234567890123456789", "more than 18 decimal places"),
    ],
)
async def test_unusable_output_refused(tmp_path: Path, printed: str, says: str) -> None:
    path = script(tmp_path, f"printf '%s' '{printed}'\n")
    error = await failure(ShellScriptStrategy(path), simple_request())
    assert error.code == "script_output"
    assert says in str(error)


def test_long_garbage_is_quoted_bounded() -> None:
    with pytest.raises(PricingError) as info:
        parse_script_output(b"x" * 10_000)
    assert len(str(info.value)) < 300
    assert "9800 more characters" in str(info.value)


def test_output_accepts_what_go_accepts() -> None:
    assert parse_script_output(b"+42\n") == Dec(42)
    assert parse_script_output(b"\t0.000000000000000001 ") == Dec("0.000000000000000001")


async def test_process_limit_bounds_concurrent_scripts(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    path = script(
        tmp_path,
        'cat > /dev/null\ntouch "$DIR/runs/$$"\nls "$DIR/runs" | wc -l >> "$DIR/counts"\n'
        'sleep 0.3\nrm "$DIR/runs/$$"\necho 1\n',
    )
    strategy = ShellScriptStrategy(path, process_limit=2, env=env_with(DIR=str(tmp_path)))
    prices = await asyncio.gather(*(strategy.price(simple_request()) for _ in range(6)))
    assert {p.amount for p in prices} == {Dec(1)}
    counts = [int(line) for line in (tmp_path / "counts").read_text().split()]
    assert len(counts) == 6
    assert max(counts) == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"process_limit": 0}, "process limit"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_constructor_refuses_bad_limits(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ShellScriptStrategy(Path("/bin/true"), **kwargs)  # type: ignore[arg-type]


# --- the shipped example --------------------------------------------------------------------------


def corpus_request() -> PriceRequest:
    spec = parse_sdl((CORPUS / "Ace-Music-AI.yaml").read_bytes()).groups[0]
    return PriceRequest(owner=OWNER, group=spec)


def expected_rate(usd_per_month: str, usd_per_coin: str = "1") -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 50
        rate = Decimal(usd_per_month) / Decimal(usd_per_coin) * 10**6 / 429909
        return rate.quantize(Decimal("0.000001"))


def test_example_script_is_executable() -> None:
    assert os.access(EXAMPLE, os.X_OK)


async def test_example_prices_a_corpus_gpu_group() -> None:
    # Ace-Music-AI: 4 CPU, 16 GiB, 100 GiB ephemeral, 200 GiB beta3, 1 endpoint, 1 GPU (any).
    # 4×1.60 + 16×0.80 + 100×0.02 + 200×0.04 + 0.05 + 100 (unmapped GPU) = 129.25 USD/month.
    price = await ShellScriptStrategy(EXAMPLE).price(corpus_request())
    assert price.denom == "uact"
    assert abs(price.amount.to_decimal() - expected_rate("129.25")) <= Decimal("0.000001")


async def test_example_gpu_mapping_and_uakt_conversion() -> None:
    request = corpus_request()
    env = env_with(PRICE_TARGET_GPU_MAPPINGS="a100=120,*=300", PRICE_AKT_USD="0.5")
    price = await ShellScriptStrategy(EXAMPLE, env=env).price(request)
    assert abs(price.amount.to_decimal() - expected_rate("329.25")) <= Decimal("0.000001")

    uakt = request.group.model_copy(
        update={
            "resources": [
                u.model_copy(update={"price": DecCoin(denom="uakt", amount=u.price.amount)})
                for u in request.group.resources
            ]
        }
    )
    price = await ShellScriptStrategy(EXAMPLE, env=env).price(PriceRequest(owner=OWNER, group=uakt))
    assert price.denom == "uakt"
    assert abs(price.amount.to_decimal() - expected_rate("329.25", "0.5")) <= Decimal("0.000001")


async def test_example_refuses_above_the_order_max() -> None:
    strategy = ShellScriptStrategy(EXAMPLE, env=env_with(PRICE_TARGET_CPU="100000"))
    error = await failure(strategy, corpus_request())
    assert error.code == "script_failed"
    assert "requested rate is too low" in str(error)
