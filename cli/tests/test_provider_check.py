"""``akash-provider provider check``: against a real Redis, on the cluster's status as the
cluster publishes it. (tests/test_capabilities.py runs it on the whole provider.)"""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner

from akbus import Bus, RedisSettings
from akcli.main import app
from aktypes import events as ev
from aktypes.attributes import Attribute
from aktypes.capabilities import GPUOffer, Offer, capability_attributes, compare

runner = CliRunner()
PROVIDER = "akash1qgpqyqszqgpqyqszqgpqyqszqgpqyqszwv2uls"
OFFER = Offer(storage={"beta2": True, "beta3": True}, gpus=frozenset({GPUOffer("nvidia", "h100")}))


def publish(url: str, check: ev.CapabilitiesCheck) -> None:
    async def run() -> None:
        bus = Bus.connect(RedisSettings(url=url), producer="cluster")
        try:
            await bus.publish_status("cluster", ev.ClusterStatus(leases=0, capabilities=check))
        finally:
            await bus.close()

    asyncio.run(run())


def check(url: str, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["provider", "check", *args, "--redis-url", url, "--wait", "2"])
    return result.exit_code, result.output


def test_each_difference_is_printed_both_ways_and_the_exit_code_says_there_are_some(
    redis_url: str,
) -> None:
    attributes = [
        Attribute(key="capabilities/storage/1/class", value="beta2"),
        Attribute(key="capabilities/storage/1/persistent", value="true"),
        Attribute(key="capabilities/gpu/vendor/amd/model/mi300x", value="true"),
    ]
    publish(
        redis_url,
        ev.CapabilitiesCheck(
            checked=True,
            provider=PROVIDER,
            mismatches=compare(OFFER, attributes),
            advertise=capability_attributes(OFFER),
        ),
    )
    code, output = check(redis_url, "--attributes")
    assert code == 1, output
    assert f"provider {PROVIDER}: 3 difference(s)" in output
    lost = output.index("lost orders")
    failed = output.index("failed bids")
    assert lost < output.index("beta3 (persistent)") < failed
    assert lost < output.index("nvidia/h100") < failed
    assert failed < output.index("amd/mi300x")
    assert "capabilities/storage/2/class=beta3" in output
    assert "capabilities/gpu/vendor/nvidia/model/h100=true" in output
    assert "- key: capabilities/storage/2/class\n    value: beta3" in output


def test_nothing_to_report_is_exit_code_0(redis_url: str) -> None:
    matching = [Attribute(key=k, value=v) for k, v in capability_attributes(OFFER).items()]
    assert compare(OFFER, matching) == []
    publish(redis_url, ev.CapabilitiesCheck(checked=True, provider=PROVIDER))
    code, output = check(redis_url)
    assert (code, output.strip()) == (
        0, f"provider {PROVIDER}: the on-chain capabilities match the inventory",
    )  # fmt: skip


def test_a_check_that_could_not_run_says_why_in_one_line(redis_url: str) -> None:
    code, output = check(redis_url)
    assert (code, output.strip()) == (2, "no cluster status: is the cluster service running?")
    publish(redis_url, ev.CapabilitiesCheck(error="provider akash1xyz: LCD unreachable"))
    code, output = check(redis_url)
    assert code == 2
    assert output.strip().splitlines() == [
        "the capabilities check has not run: provider akash1xyz: LCD unreachable"
    ]


def test_a_capabilities_sync_without_a_cluster_status_or_a_file_is_refused_in_one_line(
    redis_url: str,
) -> None:
    result = runner.invoke(app, ["provider", "update", "--redis-url", redis_url])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "akash-provider provider: give provider.yaml, or --sync-capabilities to update the "
        "chain's record"
    )
    sync = ["provider", "update", "--sync-capabilities", "--redis-url", redis_url, "--wait", "2"]
    result = runner.invoke(app, sync)
    assert (result.exit_code, result.output.strip()) == (
        2, "no cluster status: is the cluster service running?",
    )  # fmt: skip
