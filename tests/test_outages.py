"""Every process of the suite rides out a Redis outage: none exits, each is ready again once
Redis is back, and a tenant's lease goes through afterwards.

Redis (with AOF) is SIGKILLed under the running suite (relay, kubesim, the inventory
operator, cluster, bid engine, balance, manifest, gateway) and started again on the same files a few
seconds later, long enough for every loop of every service to meet the outage at least once.
"""

from __future__ import annotations

import time
from pathlib import Path

from akbus.embedded import EmbeddedRedis
from akcli.testing import Provider, certified, flow, sdl
from akdevnet.testing import DevnetClients, DevnetProcess
from akservice.testing import RuntimeProcess, eventually_sync, http_status

OUTAGE_S = 5.0


async def test_no_process_dies_of_a_redis_outage(
    devnet: DevnetProcess, private_redis: EmbeddedRedis, tmp_path: Path, chain: DevnetClients
) -> None:
    provider = Provider(
        devnet,
        private_redis.url,
        tmp_path,
        balance_env={"AP_LEASE_FUNDS_MONITOR_INTERVAL": "1s", "AP_WITHDRAWAL_PERIOD": "2s"},
        cluster_env={"AP_MONITOR_HEALTHCHECK_PERIOD": "500ms"},
    )
    try:
        provider.start()
        tenant = chain.tenant("tenant-1")
        certificate = await certified(tenant, provider)
        await flow(provider, tenant, certificate, sdl(cpu=0.5), "before")  # every loop busy
        services = {n: p for n, p in provider.processes.items() if isinstance(p, RuntimeProcess)}
        assert set(services) == {
            "relay",
            "cluster-0",
            "bidengine",
            "balance",
            "manifest",
            "gateway",
            "inventory-operator",
        }

        private_redis.kill()
        time.sleep(OUTAGE_S)  # the outage itself: Redis stays down this long, by design
        private_redis.socket_path.unlink(missing_ok=True)
        private_redis.start()

        for name, process in services.items():
            assert process.running(), f"{name} exited during the outage: {process.log()[-3000:]}"
            eventually_sync(
                lambda process=process: http_status(f"{process.health_url}/readyz")[0] == 200,
                timeout_s=30,
                what=f"{name} ready again",
            )
        report = await flow(provider, tenant, certificate, sdl(cpu=0.25), "after")
        assert [lease.dseq for lease in report["leases"]]
        exited = [n for n, p in services.items() if not p.running()]
        assert exited == []
    finally:
        provider.stop()
