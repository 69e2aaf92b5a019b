"""A lease's status served from the gateway's memory, across real processes (devnet, Redis,
relay, kubesim, every service, gateway): the cluster keeps it from Kubernetes watches and
confirms it; the gateway serves it while the confirmation is fresh, and never past its
bound once the cluster is gone.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from akbus import Bus
from akbus.settings import RedisSettings
from akcli.testing import Provider, certified, flow, sdl, whole_suite
from akservice.testing import eventually
from aktypes.events import GetLeaseStatus, LeaseQueryFailed, LeaseStatusReport
from aktypes.events.streams import CLUSTER_COMMANDS
from aktypes.namespace import lease_namespace

MAX_AGE = 3.0  # the gateway's bound, short for the test
CONFIRM = 0.5  # the cluster's confirmations


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with whole_suite(
        tmp_path_factory.mktemp("suite"),
        cluster_env={"AP_CLUSTER_LEASE_STATUS_INTERVAL": f"{CONFIRM}s"},
        gateway_env={
            "AP_GATEWAY_LEASE_STATUS_MAX_AGE": f"{MAX_AGE}s",
            "AP_GATEWAY_REQUEST_TIMEOUT": "2s",
        },
    ) as provider:
        yield provider


@pytest.fixture
async def bus(suite: Provider) -> AsyncIterator[Bus]:
    made = Bus.connect(RedisSettings(url=suite.redis_url), producer="test")
    try:
        yield made
    finally:
        await made.close()


def served_from_memory(provider: Provider) -> float:
    """The gateway's count of lease statuses it served from memory."""
    with urllib.request.urlopen(f"{provider.gateway.health_url}/metrics", timeout=5) as answer:  # noqa: S310
        text = answer.read().decode()
    found = re.search(
        r'^provider_gateway_lease_status_served_total\{source="memory"\} (\S+)$', text, re.M
    )
    return float(found[1]) if found else 0.0


async def test_a_lease_status_is_served_from_memory_follows_restarts_and_ages_out(
    suite: Provider, bus: Bus
) -> None:
    async with suite.devnet.clients() as chain:
        tenant = chain.tenant("tenant-1")
        certificate = await certified(tenant, suite)
        result = await flow(suite, tenant, certificate, sdl(cpu=0.5), "memory")
        [lease] = result["leases"]

        async def status() -> tuple[int, Any]:
            return await tenant.lease_status(
                lease.dseq, lease.gseq, lease.oseq, suite.gateway.url, certificate, timeout=10
            )

        # the cluster's answer over the bus and the gateway's from memory are the same
        before = served_from_memory(suite)
        code, body = await status()
        assert code == 200
        asked = await bus.request(
            CLUSTER_COMMANDS, GetLeaseStatus(lease_id=lease), (LeaseStatusReport, LeaseQueryFailed)
        )
        assert isinstance(asked, LeaseStatusReport)
        web = asked.services["web"].go_dict()
        assert body == {"services": {"web": web}, "forwarded_ports": {}, "ips": None}
        assert web["restarts"] == 0
        assert web["last_termination"] is None
        assert served_from_memory(suite) > before

        # a crash-looping container's restarts show within the bound
        suite.kubesim.faults(
            crashloop={"namespace": lease_namespace(lease), "selector": "akash.network=true"}
        )
        crashed_at = time.monotonic()

        def restarted(answer: tuple[int, Any]) -> bool:
            code, body = answer
            return code == 200 and body["services"]["web"]["restarts"] >= 2

        _, body = await eventually(status, timeout_s=20, what="restarts", until=restarted)
        assert time.monotonic() - crashed_at < 2 + 2 * MAX_AGE  # two crash intervals of 1 s
        ended = body["services"]["web"]["last_termination"]
        assert ended["reason"] == "Error"
        assert ended["exit_code"] == 1
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ended["finished_at"])
        assert body["services"]["web"]["available"] == 0

        # the cluster gone: the status it confirmed is served until the bound, never after
        suite.cluster().stop()
        stopped = time.monotonic()
        answers: list[tuple[float, int]] = []
        while time.monotonic() - stopped < MAX_AGE + 4:
            code, _ = await status()
            answers.append((time.monotonic() - stopped, code))
            if code != 200 and answers[-1][0] > MAX_AGE:
                break
        assert answers[0][1] == 200, answers  # from memory: nobody answers the bus
        assert all(when < MAX_AGE + 0.5 for when, code in answers if code == 200), answers
        assert answers[-1][1] == 503, answers  # as without the cache: the cluster is gone
