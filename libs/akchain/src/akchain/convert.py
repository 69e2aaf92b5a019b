"""Conversions between :mod:`aktypes` models and Akash's protobuf and LCD JSON forms.

On the protobuf wire a LegacyDec (``DecCoin.amount``) is the integer scaled by 10^18 as
decimal text, and a ``ResourceValue`` holds decimal text in bytes. In LCD JSON (protojson
with proto field names) a LegacyDec reads ``"1.500000000000000000"``, ``uint64`` values are
strings and enums are their names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from akchain._pb.akash.base.attributes.v1 import attribute_pb2
from akchain._pb.akash.base.resources.v1beta4 import resources_pb2
from akchain._pb.akash.deployment.v1 import deployment_pb2 as deployment_v1
from akchain._pb.akash.deployment.v1beta4 import deployment_pb2
from akchain._pb.akash.market.v1 import market_pb2 as market_v1
from akchain._pb.cosmos.base.v1beta1 import coin_pb2
from aktypes.attributes import Attribute, PlacementRequirements, SignedBy
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.ids import BidID, DeploymentID, GroupID, LeaseID, OrderID
from aktypes.resources import CPU, GPU, Endpoint, EndpointKind, Memory, Resources, Storage, rv

# -- to protobuf ---------------------------------------------------------------------------


def dec_coin_pb(coin: DecCoin) -> coin_pb2.DecCoin:
    return coin_pb2.DecCoin(denom=coin.denom, amount=str(coin.amount.raw))


def coin_pb(coin: Coin) -> coin_pb2.Coin:
    return coin_pb2.Coin(denom=coin.denom, amount=str(coin.amount))


def attributes_pb(attributes: Sequence[Attribute] | None) -> list[attribute_pb2.Attribute]:
    return [attribute_pb2.Attribute(key=a.key, value=a.value) for a in attributes or ()]


def _value(value: int) -> resources_pb2.ResourceValue:
    return resources_pb2.ResourceValue(val=str(value).encode())


def resources_pb(res: Resources) -> resources_pb2.Resources:
    message = resources_pb2.Resources(
        id=res.id,
        storage=[
            resources_pb2.Storage(
                name=v.name, quantity=_value(v.size.val), attributes=attributes_pb(v.attributes)
            )
            for v in res.storage or ()
        ],
        endpoints=[
            resources_pb2.Endpoint(kind=int(e.kind), sequence_number=e.sequence_number)  # type: ignore[arg-type]
            for e in res.endpoints or ()
        ],
    )
    if res.cpu is not None:
        message.cpu.CopyFrom(
            resources_pb2.CPU(
                units=_value(res.cpu.units.val), attributes=attributes_pb(res.cpu.attributes)
            )
        )
    if res.memory is not None:
        message.memory.CopyFrom(
            resources_pb2.Memory(
                quantity=_value(res.memory.size.val),
                attributes=attributes_pb(res.memory.attributes),
            )
        )
    if res.gpu is not None:
        message.gpu.CopyFrom(
            resources_pb2.GPU(
                units=_value(res.gpu.units.val), attributes=attributes_pb(res.gpu.attributes)
            )
        )
    return message


def group_spec_pb(group: GroupSpec) -> deployment_pb2.GroupSpec:
    signed_by = attribute_pb2.SignedBy(
        all_of=group.requirements.signed_by.all_of or [],
        any_of=group.requirements.signed_by.any_of or [],
    )
    return deployment_pb2.GroupSpec(
        name=group.name,
        requirements=attribute_pb2.PlacementRequirements(
            signed_by=signed_by, attributes=attributes_pb(group.requirements.attributes)
        ),
        resources=[
            deployment_pb2.ResourceUnit(
                resource=resources_pb(u.resource), count=u.count, price=dec_coin_pb(u.price)
            )
            for u in group.resources
        ],
    )


def deployment_id_pb(did: DeploymentID) -> deployment_v1.DeploymentID:
    return deployment_v1.DeploymentID(owner=did.owner, dseq=did.dseq)


def order_id_pb(oid: OrderID) -> market_v1.OrderID:
    return market_v1.OrderID(owner=oid.owner, dseq=oid.dseq, gseq=oid.gseq, oseq=oid.oseq)


def bid_id_pb(bid: BidID | LeaseID) -> market_v1.BidID:
    return market_v1.BidID(
        owner=bid.owner, dseq=bid.dseq, gseq=bid.gseq, oseq=bid.oseq, provider=bid.provider
    )


def lease_id_pb(lease: LeaseID) -> market_v1.LeaseID:
    return market_v1.LeaseID(
        owner=lease.owner,
        dseq=lease.dseq,
        gseq=lease.gseq,
        oseq=lease.oseq,
        provider=lease.provider,
    )


# -- from protobuf -------------------------------------------------------------------------


def dec_from_wire(amount: str) -> Dec:
    """A LegacyDec from its protobuf wire text (the scaled integer)."""
    return Dec.from_raw(int(amount or "0"))


def dec_coin_from_pb(coin: coin_pb2.DecCoin) -> DecCoin:
    return DecCoin(denom=coin.denom, amount=dec_from_wire(coin.amount))


def _attrs(items: Sequence[attribute_pb2.Attribute]) -> list[Attribute] | None:
    return [Attribute(key=a.key, value=a.value) for a in items] or None


def _int(value: resources_pb2.ResourceValue) -> int:
    return int(value.val.decode() or "0")


def resources_from_pb(res: resources_pb2.Resources) -> Resources:
    return Resources(
        id=res.id,
        cpu=CPU(units=rv(_int(res.cpu.units)), attributes=_attrs(res.cpu.attributes))
        if res.HasField("cpu")
        else None,
        memory=Memory(size=rv(_int(res.memory.quantity)), attributes=_attrs(res.memory.attributes))
        if res.HasField("memory")
        else None,
        storage=[
            Storage(name=s.name, size=rv(_int(s.quantity)), attributes=_attrs(s.attributes))
            for s in res.storage
        ]
        or None,
        gpu=GPU(units=rv(_int(res.gpu.units)), attributes=_attrs(res.gpu.attributes))
        if res.HasField("gpu")
        else None,
        endpoints=[
            Endpoint(kind=EndpointKind(e.kind), sequence_number=e.sequence_number)
            for e in res.endpoints
        ],
    )


def group_spec_from_pb(group: deployment_pb2.GroupSpec) -> GroupSpec:
    req = group.requirements
    return GroupSpec(
        name=group.name,
        requirements=PlacementRequirements(
            signed_by=SignedBy(
                all_of=list(req.signed_by.all_of) or None, any_of=list(req.signed_by.any_of) or None
            ),
            attributes=_attrs(req.attributes),
        ),
        resources=[
            ResourceUnit(
                resource=resources_from_pb(u.resource),
                count=u.count,
                price=dec_coin_from_pb(u.price),
            )
            for u in group.resources
        ],
    )


# -- from LCD JSON (protojson, proto field names) ------------------------------------------


def _json_attrs(items: Sequence[Mapping[str, Any]] | None) -> list[Attribute] | None:
    return [Attribute(key=a["key"], value=a.get("value", "")) for a in items or ()] or None


def _json_int(value: Mapping[str, Any] | None) -> int:
    raw = (value or {}).get("val", "0")
    return int(raw) if raw else 0


def resources_from_json(res: Mapping[str, Any]) -> Resources:
    cpu, memory, gpu = res.get("cpu"), res.get("memory"), res.get("gpu")
    return Resources(
        id=int(res.get("id", 0)),
        cpu=CPU(
            units=rv(_json_int(cpu.get("units"))), attributes=_json_attrs(cpu.get("attributes"))
        )
        if cpu
        else None,
        memory=Memory(
            size=rv(_json_int(memory.get("quantity"))),
            attributes=_json_attrs(memory.get("attributes")),
        )
        if memory
        else None,
        storage=[
            Storage(
                name=s.get("name", ""),
                size=rv(_json_int(s.get("quantity"))),
                attributes=_json_attrs(s.get("attributes")),
            )
            for s in res.get("storage") or ()
        ]
        or None,
        gpu=GPU(
            units=rv(_json_int(gpu.get("units"))), attributes=_json_attrs(gpu.get("attributes"))
        )
        if gpu
        else None,
        endpoints=[
            Endpoint(
                kind=EndpointKind[e.get("kind", "SHARED_HTTP")],
                sequence_number=int(e.get("sequence_number", 0)),
            )
            for e in res.get("endpoints") or ()
        ],
    )


def dec_coin_from_json(coin: Mapping[str, Any]) -> DecCoin:
    return DecCoin(denom=coin["denom"], amount=Dec(coin["amount"]))


def group_spec_from_json(group: Mapping[str, Any]) -> GroupSpec:
    req = group.get("requirements") or {}
    signed = req.get("signed_by") or {}
    return GroupSpec(
        name=group["name"],
        requirements=PlacementRequirements(
            signed_by=SignedBy(
                all_of=signed.get("all_of") or None, any_of=signed.get("any_of") or None
            ),
            attributes=_json_attrs(req.get("attributes")),
        ),
        resources=[
            ResourceUnit(
                resource=resources_from_json(u["resource"]),
                count=int(u["count"]),
                price=dec_coin_from_json(u["price"]),
            )
            for u in group.get("resources") or ()
        ],
    )


def order_id_from_json(data: Mapping[str, Any]) -> OrderID:
    return OrderID(
        owner=data["owner"], dseq=int(data["dseq"]), gseq=int(data["gseq"]), oseq=int(data["oseq"])
    )


def bid_id_from_json(data: Mapping[str, Any]) -> BidID:
    return BidID(
        owner=data["owner"],
        dseq=int(data["dseq"]),
        gseq=int(data["gseq"]),
        oseq=int(data["oseq"]),
        provider=data["provider"],
    )


def lease_id_from_json(data: Mapping[str, Any]) -> LeaseID:
    return bid_id_from_json(data).lease_id


def deployment_id_from_json(data: Mapping[str, Any]) -> DeploymentID:
    return DeploymentID(owner=data["owner"], dseq=int(data["dseq"]))


def group_id_from_json(data: Mapping[str, Any]) -> GroupID:
    return GroupID(owner=data["owner"], dseq=int(data["dseq"]), gseq=int(data["gseq"]))
