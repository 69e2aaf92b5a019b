"""Test helpers for code that uses aktypes: valid addresses and Hypothesis strategies.

Needs Hypothesis (``aktypes[testing]``); nothing in the library imports this module.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypedDict

from hypothesis import strategies as st

from aktypes import events as ev
from aktypes.address import encode_address
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.ids import LeaseID
from aktypes.manifest import Group, Manifest, Service, ServiceExpose
from aktypes.resources import CPU, GPU, Endpoint, Memory, Resources, Storage, rv

AUDITOR = "akash1365yvmc4s7awdyj3n2sav7xfx76adc6dnmlx63"
"""A real auditor address from Akash's templates (checksummed by Akash's own tools)."""


def address(seed: int) -> str:
    """A valid ``akash1…`` address derived from ``seed`` (0–255)."""
    return encode_address(bytes([seed % 256]) * 20)


addresses = st.binary(min_size=20, max_size=20).map(encode_address)
dseqs = st.integers(min_value=1, max_value=2**64 - 1)
seqs = st.integers(min_value=1, max_value=2**32 - 1)


@st.composite
def lease_ids(draw: st.DrawFn) -> LeaseID:
    """Lease IDs with distinct owner and provider."""
    owner = draw(addresses)
    provider = draw(addresses.filter(lambda a: a != owner))
    return LeaseID(
        owner=owner, dseq=draw(dseqs), gseq=draw(seqs), oseq=draw(seqs), provider=provider
    )


_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
_cpu = st.one_of(
    st.integers(min_value=10, max_value=64_000).map(lambda m: f"{m}m"),
    st.integers(min_value=1, max_value=64).map(str),
    st.sampled_from(["0.1", "0.25", "0.5", "1.5", "2.5"]),
)
_memory = st.one_of(
    st.integers(min_value=1, max_value=4096).map(lambda n: f"{n}Mi"),
    st.integers(min_value=1, max_value=512).map(lambda n: f"{n}Gi"),
    st.integers(min_value=2, max_value=999).map(lambda n: f"{n}M"),
)
_storage = st.one_of(
    st.integers(min_value=5, max_value=4096).map(lambda n: f"{n}Mi"),
    st.integers(min_value=1, max_value=1024).map(lambda n: f"{n}Gi"),
)


@st.composite
def _compute(draw: st.DrawFn, persistent: bool) -> dict[str, object]:
    resources: dict[str, object] = {
        "cpu": {"units": draw(_cpu)},
        "memory": {"size": draw(_memory)},
    }
    volumes: list[dict[str, object]] = [{"size": draw(_storage)}]
    if persistent:
        volumes.append(
            {
                "name": "data",
                "size": draw(_storage),
                "attributes": {
                    "persistent": True,
                    "class": draw(st.sampled_from(["beta1", "beta2", "beta3", "default"])),
                },
            }
        )
    if draw(st.booleans()):
        volumes.append({"name": "shm", "size": draw(_storage), "attributes": {"class": "ram"}})
    resources["storage"] = volumes
    if draw(st.booleans()):
        models = draw(
            st.lists(st.sampled_from(["a100", "h100", "rtx4090", "t4"]), max_size=2, unique=True)
        )
        resources["gpu"] = {
            "units": draw(st.integers(min_value=1, max_value=8)),
            "attributes": {"vendor": {"nvidia": [{"model": m} for m in models] or None}},
        }
    return {"resources": resources}


@st.composite
def sdl_documents(draw: st.DrawFn) -> dict[str, object]:
    """Valid SDL documents (as data: dump them with ``yaml.safe_dump``)."""
    version = draw(st.sampled_from(["2.0", "2.1"]))
    service_names = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    profile_names = draw(st.lists(_names, min_size=1, max_size=3, unique=True))
    placement_names = draw(st.lists(_names, min_size=1, max_size=2, unique=True))
    persistent = {p: draw(st.booleans()) for p in profile_names}
    denom = draw(st.sampled_from(["uakt", "uact"]))
    use_ip = draw(st.booleans())
    deployment: dict[str, dict[str, dict[str, object]]] = {}
    profile_of: dict[str, str] = {}
    for service in service_names:
        targets = draw(st.lists(st.sampled_from(placement_names), min_size=1, unique=True))
        profile = draw(st.sampled_from(profile_names))  # one profile: its volumes match params
        profile_of[service] = profile
        deployment[service] = {
            placement: {"profile": profile, "count": draw(st.integers(min_value=1, max_value=3))}
            for placement in targets
        }
    services: dict[str, object] = {}
    ip_used = False
    for index, service in enumerate(service_names):
        exposes: list[dict[str, object]] = []
        port = draw(st.integers(min_value=1, max_value=60_000))
        to: list[dict[str, object]] = [{"global": True}]
        if use_ip and index == 0 and len(deployment[service]) == 1:
            to = [{"global": True, "ip": "myip"}]
            ip_used = True
        exposes.append({"port": port, "as": draw(st.sampled_from([80, 443, port])), "to": to})
        if len(service_names) > 1 and draw(st.booleans()):
            other = service_names[(index + 1) % len(service_names)]
            exposes.append(
                {
                    "port": port + 1,
                    "proto": draw(st.sampled_from(["tcp", "udp"])),
                    "to": [{"service": other}],
                }
            )
        body: dict[str, object] = {
            "image": f"example/{service}:{draw(st.integers(min_value=1, max_value=9))}",
            "expose": exposes,
        }
        if draw(st.booleans()):
            body["env"] = [f"VAR_{i}={draw(_names)}" for i in range(draw(st.integers(1, 3)))]
        if persistent[profile_of[service]]:
            body["params"] = {"storage": {"data": {"mount": "/data", "readOnly": False}}}
        services[service] = body
    used_profiles = sorted(set(profile_of.values()))
    used_placements = sorted({g for p in deployment.values() for g in p})
    document: dict[str, object] = {
        "version": version,
        "services": services,
        "profiles": {
            "compute": {p: draw(_compute(persistent[p])) for p in used_profiles},
            "placement": {
                g: {
                    "attributes": {"host": "akash"},
                    "pricing": {
                        p: {
                            "denom": denom,
                            "amount": draw(st.integers(min_value=1, max_value=100_000)),
                        }
                        for p in used_profiles
                    },
                }
                for g in used_placements
            },
        },
        "deployment": deployment,
    }
    if ip_used:
        document["endpoints"] = {"myip": {"kind": "ip"}}
    return document


class _At(TypedDict):
    height: int
    tx_index: int
    event_index: int


def example_payloads() -> list[ev.Payload]:
    """One realistic instance of every event and command type, in union order."""
    owner, provider, auditor = address(1), address(2), address(3)
    lease = LeaseID(owner=owner, dseq=100, gseq=1, oseq=1, provider=provider)
    bid, order, group_id, deployment = (
        lease.bid_id,
        lease.order_id,
        lease.group_id,
        lease.deployment_id,
    )
    price = DecCoin(denom="uakt", amount=Dec("12.5"))
    hash = "ab" * 32
    res = Resources(
        id=1,
        cpu=CPU(units=rv(500)),
        memory=Memory(size=rv(2**29)),
        storage=[Storage(name="default", size=rv(2**30))],
        gpu=GPU(units=rv(0)),
        endpoints=[Endpoint()],
    )
    group = GroupSpec(name="dcloud", resources=[ResourceUnit(resource=res, count=1, price=price)])
    offer = ev.ResourceOffer(resources=res, count=1)
    totals = ev.ResourceTotals(
        cpu=4000, memory=2**33, storage_ephemeral=2**36, storage={"beta2": 2**40}
    )
    manifest_group = Group(
        name="dcloud",
        services=[
            Service(
                name="web",
                image="nginx",
                resources=res,
                count=1,
                expose=[ServiceExpose(port=80, proto="TCP", global_=True)],
            )
        ],
    )
    at = _At(height=1200, tx_index=0, event_index=2)

    return [
        ev.OrderCreated(order_id=order, **at),
        ev.OrderClosed(order_id=order, **at),
        ev.BidCreated(bid_id=bid, price=price, **at),
        ev.BidClosed(bid_id=bid, **at),
        ev.LeaseCreated(lease_id=lease, price=price, **at),
        ev.LeaseClosed(
            lease_id=lease,
            reason=ev.LeaseClosedReason.INSUFFICIENT_FUNDS,
            height=1300,
            event_index=0,
        ),
        ev.LeaseReclaimStarted(
            lease_id=lease, reason=ev.LeaseClosedReason.UNSTABLE, deadline=1400, **at
        ),
        ev.DeploymentCreated(deployment_id=deployment, hash=hash, **at),
        ev.DeploymentUpdated(deployment_id=deployment, hash=hash, **at),
        ev.DeploymentClosed(deployment_id=deployment, **at),
        ev.GroupStarted(group_id=group_id, **at),
        ev.GroupPaused(group_id=group_id, **at),
        ev.GroupClosed(group_id=group_id, **at),
        ev.ProviderUpdated(owner=provider, **at),
        ev.AuditorAttributesChanged(owner=provider, auditor=auditor, action="signed", **at),
        ev.BroadcastTx(
            key=f"create-bid/{order}",
            msgs=[
                ev.CreateBid(
                    bid_id=bid,
                    price=price,
                    deposit=Coin(denom="uakt", amount=500000),
                    resources_offer=[offer],
                )
            ],
        ),
        ev.TxCommitted(
            key="close-bid/x", tx_hash="A1B2", height=1201, gas_wanted=200000, gas_used=123456
        ),
        ev.TxFailed(
            key="withdraw/x", code=32, codespace="sdk", log="account sequence mismatch", attempts=3
        ),
        ev.ReserveResources(order_id=order, group=group),
        ev.UnreserveResources(order_id=order),
        ev.LookupReservation(order_id=order, group_name="dcloud"),
        ev.ScreenGroup(group=group),
        ev.ResourcesReserved(order_id=order, allocated=[offer]),
        ev.ReservationFailed(
            order_id=order, code="insufficient_capacity", reason="no node has 2 GPUs"
        ),
        ev.ResourcesUnreserved(order_id=order, found=True),
        ev.ReservationFound(order_id=order, found=False),
        ev.GroupScreened(passed=False, reasons=["attributes_mismatch: region"]),
        ev.GetLeaseStatus(lease_id=lease, service="web"),
        ev.GetLeaseManifest(lease_id=lease),
        ev.CheckHostnames(lease_id=lease, hostnames=["www.example.com"]),
        ev.MigrateHostnames(owner=lease.owner, hostnames=["www.example.com"], dseq=101, gseq=1),
        ev.MigrateEndpoints(owner=lease.owner, endpoints=["myip"], dseq=101, gseq=1),
        ev.LeaseStatusReport(
            lease_id=lease,
            services={
                "web": ev.ServiceStatus(
                    name="web", available=1, total=1, uris=["www.example.com"], replicas=1
                )
            },
            forwarded_ports={
                "web": [
                    ev.ForwardedPort(
                        host="provider.example.com",
                        port=22,
                        external_port=31022,
                        proto="TCP",
                        name="web",
                    )
                ]
            },
            ips={
                "web": [
                    ev.LeasedIPStatus(port=80, external_port=80, protocol="TCP", ip="203.0.113.7")
                ]
            },
        ),
        ev.LeaseManifestReport(lease_id=lease, version=hash, group=manifest_group),
        ev.HostnamesChecked(refused={"www.example.com": "used by another owner"}),
        ev.Migrated(destination=lease, transferred=["www.example.com"]),
        ev.MigrationRefused(code="forbidden", message="www.example.com is another tenant's"),
        ev.LeaseQueryFailed(lease_id=lease, code="not_found", message="no such lease"),
        ev.DeploymentApplied(lease_id=lease, manifest_version=hash, services=["web"]),
        ev.DeploymentHealth(lease_id=lease, state="pending", message="web: 0/1 available"),
        ev.LeaseTornDown(lease_id=lease),
        ev.LeaseStatusChanged(
            lease_id=lease,
            services={
                "web": ev.ServiceStatus(
                    name="web",
                    available=0,
                    total=1,
                    replicas=1,
                    restarts=3,
                    last_termination=ev.Termination(
                        reason="Error", exit_code=1, finished_at="2026-11-22T11:59:58Z"
                    ),
                )
            },
            checked_at=1795348799.5,
        ),
        ev.LeaseStatusGone(lease_id=lease),
        ev.LeaseStatusesConfirmed(at=1795348800.25, pending=[lease]),
        ev.InventoryChanged(nodes=2, allocatable=totals, available=totals),
        ev.LeaseFundsMonitor(lease_id=lease, action="add", is_new_lease=True),
        ev.BidPlaced(bid_id=bid, price=price, deposit=Coin(denom="uakt", amount=500000)),
        ev.BidDeclined(
            order_id=order, reasons=[ev.DeclineReason(code="price_above_max", message="20 > 12.5")]
        ),
        ev.LeaseWon(lease_id=lease, group=group, price=price),
        ev.ProviderBidClosed(bid_id=bid, cause=ev.BidCloseCause.LEASE_LOST),
        ev.ReconcileRepaired(
            kind="lease_closed_deployed",
            action="torn_down",
            order_id=order,
            lease_id=lease,
            message="closed on chain, still deployed",
        ),
        ev.ScreenBid(group=group, owner=owner),
        ev.BidScreened(passed=True, offer=[offer], price=price),
        ev.ManifestReceived(lease_id=lease, version=hash, group=manifest_group),
        ev.ManifestRejected(
            deployment_id=deployment, code="version_mismatch", reason="hash differs"
        ),
        ev.ManifestTimedOut(lease_id=lease),
        ev.SubmitManifest(deployment_id=deployment, manifest=Manifest([manifest_group])),
        ev.ManifestAccepted(deployment_id=deployment, version=hash, leases=[lease]),
        ev.WithdrawalRequested(lease_id=lease, reason="periodic"),
        ev.LeaseOutOfFunds(
            lease_id=lease, balance=DecCoin(denom="uact", amount=Dec(0)), height=1300
        ),
        ev.SweepRequested(to_address=auditor, amount=Coin(denom="uakt", amount=10**9)),
        ev.ChainStatus(height=1200, node_height=1203, pending_txs=1, provider=provider),
        ev.BidEngineStatus(orders=4),
        ev.ClusterStatus(
            leases=2,
            allocatable=totals,
            available=totals,
            nodes=[ev.NodeTotals(name="node-1", allocatable=totals, available=totals)],
            storage={"beta2": 2**40},
            active=[totals],
            public_hostname="provider.example.com",
            kube_version={"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
            capabilities=ev.CapabilitiesCheck(
                checked=True,
                provider=provider,
                mismatches=[
                    ev.CapabilityMismatch(
                        direction="offered_not_advertised",
                        kind="storage",
                        subject="beta2 (persistent)",
                        attributes={
                            "capabilities/storage/1/class": "beta2",
                            "capabilities/storage/1/persistent": "true",
                        },
                        message="storage class beta2 is in the inventory but not advertised: "
                        "orders for it get no bid",
                    )
                ],
                advertise={
                    "capabilities/storage/1/class": "beta2",
                    "capabilities/storage/1/persistent": "true",
                },
            ),
        ),
        ev.ManifestStatus(deployments=2),
        ev.GatewayStatus(websockets=3, shells=1, tenants=2, version="0.1.0"),
        ev.OperatorStatus(operator="ip", figures={"capacity": 8, "in_use": 3}, last_error=""),
        ev.BalanceStatus(
            leases=2,
            earned={"uact": 1_250_000},
            unpaid={"uact": 30_000},
            swept={"uact": 1_000_000},
            balances={"uakt": 5_000_000, "uact": 250_000},
            below_minimum=["uakt"],
            pending=1,
        ),
        ev.InventoryCluster(
            nodes=[
                ev.NodeInventory(
                    name="gpu-1",
                    allocatable=ev.Amounts(cpu=8000, memory=2**35, ephemeral=2**37, gpu=8),
                    allocated=ev.Amounts(cpu=500, memory=2**29),
                    gpus=[
                        ev.GPUInfo(
                            vendor="nvidia",
                            model="a100",
                            memory="80Gi",
                            interface="sxm",
                            count=8,
                            physical=2,
                            replicas=4,
                            product="NVIDIA-A100-SXM4-80GB",
                        )
                    ],
                    storage_classes=["beta3"],
                )
            ],
            storage=[ev.StorageInventory(storage_class="beta3", capacity=2**40, allocated=2**30)],
            excluded=[ev.ExcludedNode(name="node-2", reason="cordoned")],
            unknown_gpus=["NVIDIA-Z9000"],
            generation=3,
        ),
        ev.InventoryNodes(changed=[ev.NodeInventory(name="node-3")], removed=["node-2"]),
        ev.InventoryStorage(storage=[ev.StorageInventory(storage_class="beta3", capacity=2**40)]),
        ev.DeadLetter(
            source_stream="akash.chain.events",
            entry_id="1-0",
            group="bidengine",
            consumer="bidengine-0",
            error="PermanentError: bad",
            attempts=5,
            fields={"type": "chain.order.created"},
        ),
    ]


def example_envelope(payload: ev.Payload) -> ev.Envelope[ev.Payload]:
    """``payload`` in an envelope with a fixed id and time (for pinned wire forms)."""
    return ev.Envelope[ev.Payload](
        id="0123456789abcdef0123456789abcdef",
        time=datetime(2026, 11, 22, 12, 0, 0, 123456, tzinfo=UTC),
        producer="test",
        payload=payload,
    )
