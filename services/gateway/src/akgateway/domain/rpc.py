"""gRPC messages of ``akash.provider.v1.ProviderRPC`` from what the services report.

:func:`status_message` is ``GetStatus``'s answer, from the same retained statuses as REST
``/status`` (:mod:`akgateway.domain.status`), in Akash's ``provider.v1.Status`` shape: every
amount is a Kubernetes quantity string ("1500m" CPU, bytes for memory and storage), each
node's resources a pair of allocatable and allocated. :func:`screening_response` turns the bid
engine's screening answer into ``BidScreeningResponse``: Akash's ``resource_offer`` (one
message, field 3) holds the offer for the group's first resource unit, our
``resource_offers`` (field 5, which Akash does not use) every unit's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from akchain._pb.akash.market.v1beta5 import market_pb2
from akchain.convert import dec_coin_pb, resources_pb
from akgateway._pb.akash.inventory.v1 import inventory_pb2 as inventory
from akgateway._pb.akash.provider.v1 import provider_pb2 as provider
from akgateway._pb.k8s import resource_pb2
from akgateway.domain.status import gather
from aktypes.events import (
    BidScreened,
    ClusterStatus,
    Envelope,
    ResourceTotals,
)
from aktypes.events.status import NodeTotals


def cpu_quantity(millicpu: int) -> str:
    """Kubernetes' canonical form: whole CPUs as an integer, else millicpu ("250m")."""
    return str(millicpu // 1000) if millicpu % 1000 == 0 else f"{millicpu}m"


def quantity(value: str) -> resource_pb2.Quantity:
    return resource_pb2.Quantity(string=value)


def pair(allocatable: str, allocated: str) -> inventory.ResourcePair:
    return inventory.ResourcePair(allocatable=quantity(allocatable), allocated=quantity(allocated))


def _gpu_info(name: str) -> list[inventory.GPUInfo]:
    """The node's GPU as the cluster reports it: ``vendor/model[/memory[/interface]]``."""
    if not name:
        return []
    vendor, _, rest = name.partition("/")
    model, _, rest = rest.partition("/")
    memory, _, interface = rest.partition("/")
    return [inventory.GPUInfo(vendor=vendor, name=model, memory_size=memory, interface=interface)]


def node_message(node: NodeTotals) -> inventory.Node:
    total, free = node.allocatable, node.available
    return inventory.Node(
        name=node.name,
        resources=inventory.NodeResources(
            cpu=inventory.CPU(
                quantity=pair(cpu_quantity(total.cpu), cpu_quantity(max(total.cpu - free.cpu, 0)))
            ),
            memory=inventory.Memory(
                quantity=pair(str(total.memory), str(max(total.memory - free.memory, 0)))
            ),
            gpu=inventory.GPU(
                quantity=pair(str(total.gpu), str(max(total.gpu - free.gpu, 0))),
                info=_gpu_info(node.gpu),
            ),
            ephemeral_storage=pair(
                str(total.storage_ephemeral),
                str(max(total.storage_ephemeral - free.storage_ephemeral, 0)),
            ),
        ),
        capabilities=inventory.NodeCapabilities(storage_classes=node.storage_classes),
    )


def resources_metric(totals: list[ResourceTotals]) -> provider.ResourcesMetric:
    """The sum of some reservations' resources."""
    storage: dict[str, int] = {}
    for t in totals:
        for name, size in t.storage.items():
            storage[name] = storage.get(name, 0) + size
    return provider.ResourcesMetric(
        cpu=quantity(cpu_quantity(sum(t.cpu for t in totals))),
        memory=quantity(str(sum(t.memory for t in totals))),
        gpu=quantity(str(sum(t.gpu for t in totals))),
        ephemeral_storage=quantity(str(sum(t.storage_ephemeral for t in totals))),
        storage={name: quantity(str(size)) for name, size in sorted(storage.items())},
    )


def cluster_message(status: ClusterStatus) -> provider.ClusterStatus:
    return provider.ClusterStatus(
        leases=provider.Leases(active=status.leases),
        inventory=provider.Inventory(
            cluster=inventory.Cluster(
                nodes=[node_message(n) for n in status.nodes],
                # the cluster reports what is free per storage class
                storage=[
                    inventory.Storage(
                        quantity=pair(str(free), "0"), info=inventory.StorageInfo(**{"class": name})
                    )
                    for name, free in sorted(status.storage.items())
                ],
            ),
            reservations=provider.Reservations(
                pending=provider.ReservationsMetric(
                    count=status.reservations_pending, resources=resources_metric(status.pending)
                ),
                active=provider.ReservationsMetric(
                    count=status.reservations_active, resources=resources_metric(status.active)
                ),
            ),
        ),
    )


def status_message(
    statuses: Mapping[str, Envelope[Any] | None],
    *,
    public_hostname: str,
    now: dt.datetime,
    max_age: float,
) -> provider.Status:
    """``GetStatus``: a missing or stale service is left out and named in ``errors``."""
    got = gather(statuses, public_hostname=public_hostname, now=now, max_age=max_age)
    message = provider.Status(errors=got.errors)
    if got.cluster is not None:
        message.cluster.CopyFrom(cluster_message(got.cluster))
    if got.bidengine is not None:
        message.bid_engine.orders = got.bidengine.orders
    if got.manifest is not None:
        message.manifest.deployments = got.manifest.deployments
    if got.hostname:
        message.public_hostnames.append(got.hostname)
    message.timestamp.FromDatetime(now)
    return message


def screening_response(
    reply: BidScreened, refused_hostnames: Mapping[str, str]
) -> provider.BidScreeningResponse:
    """``BidScreening``'s answer: every reason as ``code: sentence``, hostnames the provider
    would refuse included."""
    reasons = [f"{r.code}: {r.message}" if r.message else r.code for r in reply.reasons]
    reasons += [f"hostname_refused: {why}" for _, why in sorted(refused_hostnames.items())]
    offers = [
        market_pb2.ResourceOffer(resources=resources_pb(o.resources), count=o.count)
        for o in reply.offer
    ]
    message = provider.BidScreeningResponse(
        passed=reply.passed and not refused_hostnames, reasons=reasons, resource_offers=offers
    )
    if offers:  # Akash's field holds one offer: the group's first resource unit
        message.resource_offer.CopyFrom(offers[0])
    if reply.price is not None:
        message.price.CopyFrom(dec_coin_pb(reply.price))
    return message
