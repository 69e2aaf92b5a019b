"""Two hostname operators on one Lease, as real processes against kubesim over HTTP: one
leads, the other waits ready as a standby; SIGKILL the leader and the standby takes the
Lease over and routes a ProviderHost declared after the kill within ten seconds, without a
second Ingress for any hostname. And replicas racing for one Lease: never two winners."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client, config

from akbus import Bus, RedisSettings
from akcluster.domain.objects import manifest_object, provider_host_objects
from akcluster.domain.objects.base import BuildSettings
from akcluster.domain.objects.custom import crds
from akoperators.adapters.election import KubeLease
from akoperators.adapters.kube import Kube
from akoperators.testing import OperatorProcess
from akservice.testing import eventually
from aktypes.events import OperatorStatus
from aktypes.ids import LeaseID
from aktypes.namespace import lease_namespace
from aktypes.sdl import parse_sdl
from aktypes.testing import address
from kubesim.testing import KubeSimProcess, ThreadedKubeSim

SDL = """
version: "2.0"
services:
  web:
    image: nginx:1.27
    expose:
      - {port: 8080, as: 80, accept: [a.example.com, b.example.com], to: [{global: true}]}
profiles:
  compute:
    web: {resources: {cpu: {units: 0.5}, memory: {size: 512Mi}, storage: {size: 1Gi}}}
  placement:
    dc: {pricing: {web: {denom: uakt, amount: 100}}}
deployment:
  web: {dc: {profile: web, count: 1}}
"""
BUILD = BuildSettings()
LEASE_PATH = ("coordination.k8s.io", "v1", "default", "leases")


class Cluster:
    """kubesim as the cluster service fills it: lease namespaces, Manifests, ProviderHosts."""

    def __init__(self, kubeconfig: Path) -> None:
        self.api = config.new_client_from_config(str(kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.net = client.NetworkingV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        for crd in crds():
            client.ApiextensionsV1Api(self.api).create_custom_resource_definition(crd)
        self.core.create_namespace({"metadata": {"name": "lease"}})

    def deploy(self, dseq: int, hostnames: tuple[str, str]) -> None:
        lease_id = LeaseID(owner=address(1), dseq=dseq, gseq=1, oseq=1, provider=address(99))
        group = parse_sdl(SDL.replace("[a.example.com, b.example.com]", str(list(hostnames))))
        web = group.manifest.groups[0]
        self.core.create_namespace({"metadata": {"name": lease_namespace(lease_id)}})
        self.custom.create_namespaced_custom_object(
            "akash.network", "v2beta2", "lease", "manifests",
            manifest_object(lease_id, web, "1", settings=BUILD),
        )  # fmt: skip
        for host in provider_host_objects(lease_id, web, settings=BUILD):
            self.custom.create_namespaced_custom_object(
                "akash.network", "v2beta2", "lease", "providerhosts", host
            )

    def routed_hosts(self) -> list[str]:
        """The host of every Ingress rule in the cluster (a duplicate shows twice)."""
        items = self.net.list_ingress_for_all_namespaces().items
        return [rule.host for item in items for rule in item.spec.rules]

    def host_states(self) -> list[str]:
        """The state on each ProviderHost's status ("" before any)."""
        found = self.custom.list_namespaced_custom_object(
            "akash.network", "v2beta2", "lease", "providerhosts"
        )
        return [(h.get("status") or {}).get("state", "") for h in found["items"]]

    def lease(self) -> dict[str, Any]:
        found: dict[str, Any] = self.custom.get_namespaced_custom_object(
            *LEASE_PATH, "akash-provider-hostname-operator"
        )
        return found


def operator(kubesim: KubeSimProcess, redis_url: str, folder: Path, name: str) -> OperatorProcess:
    return OperatorProcess(
        "hostname",
        redis_url=redis_url,
        log_path=folder / f"hostname-{name}.log",
        kubeconfig=kubesim.kubeconfig,
        env={"AP_INSTANCE_ID": name, "AP_HOSTNAME_RETRY": "500ms"},
    )


async def test_a_killed_leader_hands_its_lease_and_work_to_the_standby_within_ten_seconds(
    kubesim_process: KubeSimProcess, redis_url: str, tmp_path: Path
) -> None:
    cluster = Cluster(kubesim_process.kubeconfig)
    first = operator(kubesim_process, redis_url, tmp_path, "one")
    second = operator(kubesim_process, redis_url, tmp_path, "two")
    bus = Bus.connect(RedisSettings(url=redis_url), producer="test")
    try:
        await asyncio.to_thread(first.start)
        await asyncio.to_thread(second.start)  # ready, as a standby
        leader, standby = first.readiness()[1], second.readiness()[1]
        assert isinstance(leader, dict) and isinstance(standby, dict)
        assert leader["role"] == "leader" and standby["role"] == "standby"
        assert standby["leader"] == leader["leader"]
        lease = cluster.lease()["spec"]
        assert lease["holderIdentity"] == leader["leader"]
        assert lease["leaseDurationSeconds"] == 6

        cluster.deploy(10, ("a.example.com", "b.example.com"))

        async def routed(count: int) -> list[str] | None:
            hosts = await asyncio.to_thread(cluster.routed_hosts)
            return hosts if len(hosts) >= count else None

        await eventually(lambda: routed(2), timeout_s=20.0, what="the leader's two Ingresses")
        status = await bus.status("hostname")
        assert status is not None and isinstance(status.payload, OperatorStatus)
        assert status.payload.leader == leader["leader"]

        first.kill()
        killed = time.monotonic()
        cluster.deploy(11, ("c.example.com", "d.example.com"))
        hosts = await eventually(lambda: routed(4), timeout_s=15.0, what="the standby's Ingresses")
        took = time.monotonic() - killed
        assert took < 10.0, f"the standby took {took:.1f}s"

        now = second.readiness()[1]
        assert isinstance(now, dict) and now["role"] == "leader"
        lease = cluster.lease()["spec"]
        assert lease["holderIdentity"] == standby["identity"] == now["leader"]
        assert lease["leaseTransitions"] == 1

        async def new_status() -> bool:
            found = await bus.status("hostname")
            return found is not None and getattr(found.payload, "leader", "") == now["leader"]

        await eventually(new_status, timeout_s=10.0, what="the new leader's status")

        async def all_routed() -> bool:  # every ProviderHost handled: no Ingress can follow
            states = await asyncio.to_thread(cluster.host_states)
            return len(states) == 4 and set(states) == {"routed"}

        await eventually(all_routed, timeout_s=10.0, what="every ProviderHost routed")
        hosts = await asyncio.to_thread(cluster.routed_hosts)
        assert Counter(hosts) == Counter(f"{c}.example.com" for c in "abcd"), hosts
        assert "Traceback" not in second.log()
    finally:
        await bus.close()
        first.stop()
        second.stop()
        cluster.api.close()


async def test_replicas_racing_for_a_free_or_expired_lease_never_both_win(tmp_path: Path) -> None:
    with ThreadedKubeSim() as sim:
        kube = Kube.from_kubeconfig(sim.write_kubeconfig(tmp_path / "kubeconfig"))
        try:
            replicas = [KubeLease(kube, "default", "race", f"op-{i}", 2.0) for i in range(4)]
            won = await asyncio.gather(*(r.try_hold() for r in replicas))  # racing creates
            assert won.count(True) == 1
            leader = replicas[won.index(True)]
            others = [r for r in replicas if r is not leader]
            assert not any(await asyncio.gather(*(r.try_hold() for r in others)))  # alive
            assert {r.holder for r in others} == {leader.identity}

            async def expired() -> bool:  # the leader stops renewing; 2 s later it is free
                return any(await asyncio.gather(*(r.try_hold() for r in others)))

            await eventually(expired, timeout_s=6.0, what="the lease to expire")
            holders = [r for r in others if r.holder == r.identity]
            spec = (await kube.request("GET", leader.path))["spec"]
            assert len(holders) == 1 and spec["holderIdentity"] == holders[0].identity
            assert spec["leaseTransitions"] == 1
            assert not await leader.try_hold()  # the old leader sees it is another's now
        finally:
            kube.close()
