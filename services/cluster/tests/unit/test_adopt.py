"""Taking over the Go provider's leases: which pod template differences keep Go's template
(no pod restarts), which roll it, the generated hostnames kept as Go named them, and the
leased IPs kept under Go's names and sharing keys."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from akcluster.adapters.kube_adopt import adopted, go_shaped, same_pods
from akcluster.domain.leases import lease_hostnames
from akcluster.domain.objects import (
    BuildSettings,
    allocation_of,
    provider_host_objects,
    provider_leased_ip_objects,
)
from akcluster.domain.objects.base import SchedulerParams, scheduler_params
from akcluster.domain.objects.custom import go_sharing_key, sharing_key
from akcluster.domain.objects.reading import generated_hosts, go_endpoints
from akcluster.domain.objects.workloads import workload
from akcluster.domain.placement import CommitLevels
from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host
from aktypes.namespace import lease_namespace
from aktypes.sdl import parse_sdl
from aktypes.testing import address

Obj = dict[str, Any]

LEASE = LeaseID(owner=address(1), dseq=9, gseq=1, oseq=1, provider=address(2))
SDL = """
version: "2.0"
services:
  web:
    image: nginx:1.27
    params:
      storage:
        a: {mount: /a}
        b: {mount: /b}
    expose:
      - port: 80
        accept: [www.example.com]
        to: [{global: true}]
      - port: 53
        proto: udp
        to: [{global: true}]
profiles:
  compute:
    web:
      resources:
        cpu: {units: 0.5}
        memory: {size: 128Mi}
        storage:
          - size: 1Gi
          - name: a
            size: 1Gi
            attributes: {persistent: true, class: beta2}
          - name: b
            size: 1Gi
            attributes: {persistent: true, class: beta2}
  placement:
    dc:
      pricing:
        web: {denom: uakt, amount: 1}
deployment:
  web:
    dc: {profile: web, count: 1}
"""
GROUP = parse_sdl(SDL).manifest.groups[0]
(SERVICE,) = GROUP.services or []


def ours(settings: BuildSettings | None = None) -> Obj:
    return workload(
        SERVICE,
        LEASE,
        SchedulerParams(),
        settings=settings or BuildSettings(public_hostname="p.example.com"),
        levels=CommitLevels(),
    )


def go_built(obj: Obj) -> Obj:
    """Ours in Go's shape: Go's template labels, ports without a protocol (a UDP one reads
    as TCP once defaulted), a storage selector per volume."""
    go = copy.deepcopy(obj)
    template = go["spec"]["template"]
    template["metadata"]["labels"] = {
        "akash.network": "true",
        "akash.network/namespace": lease_namespace(LEASE),
        "akash.network/manifest.resource.version": "4711",
        "akash.network/manifest-service": "web",
    }
    (container,) = template["spec"]["containers"]
    container["ports"] = [
        {"containerPort": p["containerPort"], "protocol": "TCP"} for p in container["ports"]
    ]
    terms = template["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    storage = {
        "key": "akash.network/capabilities.storage.class.beta2",
        "operator": "Gt",
        "values": ["0"],
    }
    terms[0]["matchExpressions"] = [terms[0]["matchExpressions"][0], storage, dict(storage)]
    return go


def test_a_go_built_workload_that_runs_the_same_keeps_its_template() -> None:
    desired, current = ours(), go_built(ours())
    assert go_shaped(current) and not go_shaped(desired)
    assert same_pods(current, desired)
    kept = adopted(current, desired)
    assert kept["spec"]["template"] == current["spec"]["template"]
    assert kept["metadata"] == desired["metadata"]  # the rest is ours
    assert kept["spec"]["replicas"] == desired["spec"]["replicas"]


def test_a_go_built_statefulset_keeps_its_claim_templates() -> None:
    current = go_built(ours())
    assert current["kind"] == "StatefulSet"
    for claim in current["spec"]["volumeClaimTemplates"]:  # as a server returns them
        claim.update(apiVersion="v1", kind="PersistentVolumeClaim", status={"phase": "Pending"})
    kept = adopted(current, ours())
    assert kept["spec"]["volumeClaimTemplates"] == current["spec"]["volumeClaimTemplates"]


def test_the_cluster_runtime_class_go_never_set_keeps_the_template() -> None:
    desired = ours(BuildSettings(public_hostname="p.example.com", runtime_class="gvisor"))
    assert desired["spec"]["template"]["spec"]["runtimeClassName"] == "gvisor"
    assert same_pods(go_built(ours()), desired)


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c.update(image="nginx:1.28"),
        lambda c: c["env"].append({"name": "EXTRA", "value": "1"}),
        lambda c: c["resources"]["limits"].update(cpu="1"),
        lambda c: c.update(volumeMounts=[]),
    ],
    ids=["image", "env", "resources", "mounts"],
)
def test_a_go_built_workload_that_runs_something_else_is_written_whole(change: Any) -> None:
    current = go_built(ours())
    change(current["spec"]["template"]["spec"]["containers"][0])
    assert not same_pods(current, ours())
    assert adopted(current, ours()) == ours()


def test_our_own_workloads_are_never_kept_as_they_are() -> None:
    mine = ours()
    drifted = copy.deepcopy(mine)
    drifted["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:1"
    assert adopted(mine, ours()) == ours()
    assert adopted(drifted, ours()) == ours()
    assert adopted(None, ours()) == ours()


def test_generated_hostnames_are_kept_as_go_named_them() -> None:
    go_host = ingress_host(LEASE, "web", "go.example.net")
    found = [
        {"spec": {"hostname": "WWW.example.com", "service_name": "web"}},
        {"spec": {"hostname": go_host, "service_name": "web"}},
    ]
    kept = generated_hosts(GROUP, found)
    assert kept == {go_host: "web"}
    # kept without an ingress domain here, and once beside the same one generated here
    assert lease_hostnames(LEASE, GROUP, "", kept) == ["www.example.com", go_host]
    assert lease_hostnames(LEASE, GROUP, "go.example.net", kept) == ["www.example.com", go_host]
    assert lease_hostnames(LEASE, GROUP, "new.example.net", kept) == [
        "www.example.com",
        ingress_host(LEASE, "web", "new.example.net"),
        go_host,
    ]
    hosts = provider_host_objects(LEASE, GROUP, settings=BuildSettings(), adopted=kept)
    routed = {h["metadata"]["name"]: h["spec"]["external_port"] for h in hosts}
    assert routed == {"www.example.com": 80, go_host: 80}
    # a service that no longer has an HTTP expose drops its kept hostname
    assert lease_hostnames(LEASE, GROUP, "", {"x.example.net": "gone"}) == ["www.example.com"]


def test_the_gpu_a_manifest_resource_names_is_the_allocation_again() -> None:
    gpu_sdl = SDL.replace(
        "cpu: {units: 0.5}",
        "cpu: {units: 0.5}\n        gpu: {units: 1, attributes: {vendor: {nvidia: [{model: a100}, {model: h100}]}}}",
    )
    group = parse_sdl(gpu_sdl).manifest.groups[0]
    placed = {"web": SchedulerParams(runtime_class="nvidia", gpu_vendor="nvidia", gpu_model="h100")}
    offers = allocation_of(group, placed)
    assert scheduler_params(group, offers) == placed
    assert scheduler_params(group, ()) != placed  # the SDL alone names two models


IP_SDL = """
version: "2.0"
services:
  web:
    image: nginx:1.27
    expose:
      - {port: 8080, as: 80, to: [{global: true, ip: myip}]}
      - {port: 53, proto: udp, to: [{global: true, ip: myip}]}
      - {port: 22, to: [{global: true, ip: my_ip}]}
profiles:
  compute:
    web: {resources: {cpu: {units: 0.5}, memory: {size: 128Mi}, storage: {size: 1Gi}}}
  placement:
    dc: {pricing: {web: {denom: uakt, amount: 1}}}
deployment:
  web: {dc: {profile: web, count: 1}}
endpoints:
  myip: {kind: ip}
  my_ip: {kind: ip}
"""


def test_go_sharing_keys_name_the_owner_and_the_endpoint() -> None:
    assert go_sharing_key(LEASE, "myip") == f"{LEASE.owner}-ip-myip"
    # not a DNS label: the first 15 bytes of its SHA-256, base32 (extended hex), lower case
    assert go_sharing_key(LEASE, "my_ip") == f"{LEASE.owner}-ip-m9fo0a1emsme20vtunjnvqbp"


def test_leased_ips_of_endpoints_go_declared_keep_its_names_and_keys() -> None:
    group = parse_sdl(IP_SDL).manifest.groups[0]
    key = go_sharing_key(LEASE, "myip")
    go_declared = [
        {"metadata": {"name": f"{key}-tcp-80"}, "spec": {"sharing_key": key}},
        {"metadata": {"name": f"{key}-udp-53"}, "spec": {"sharing_key": key}},
        {"metadata": {"name": "x"}, "spec": {"sharing_key": sharing_key(LEASE.owner, "my_ip")}},
    ]
    adopted_ips = go_endpoints(LEASE, group, go_declared)
    assert adopted_ips == ["myip"]  # my_ip was declared by ours: it stays ours
    found = provider_leased_ip_objects(LEASE, group, settings=BuildSettings(), adopted=adopted_ips)
    named = {o["metadata"]["name"]: o["spec"]["sharing_key"] for o in found}
    ours_name = next(n for n in named if n.endswith("-web-22-tcp"))
    assert named == {
        f"{key}-tcp-80": key,
        f"{key}-udp-53": key,
        ours_name: sharing_key(LEASE.owner, "my_ip"),
    }
    web = next(o for o in found if o["metadata"]["name"] == f"{key}-tcp-80")["spec"]
    assert (web["port"], web["external_port"], web["protocol"]) == (8080, 80, "TCP")
    # nothing adopted: every name and key is ours, as before
    plain = provider_leased_ip_objects(LEASE, group, settings=BuildSettings())
    assert not any(o["spec"]["sharing_key"].startswith(LEASE.owner) for o in plain)
