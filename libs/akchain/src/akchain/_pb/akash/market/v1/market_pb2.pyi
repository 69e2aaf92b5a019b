from akchain._pb.cosmos.base.v1beta1 import coin_pb2 as _coin_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LeaseClosedReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    lease_closed_invalid: _ClassVar[LeaseClosedReason]
    lease_closed_owner: _ClassVar[LeaseClosedReason]
    lease_closed_reason_unstable: _ClassVar[LeaseClosedReason]
    lease_closed_reason_decommission: _ClassVar[LeaseClosedReason]
    lease_closed_reason_unspecified: _ClassVar[LeaseClosedReason]
    lease_closed_reason_manifest_timeout: _ClassVar[LeaseClosedReason]
    lease_closed_reason_insufficient_funds: _ClassVar[LeaseClosedReason]
lease_closed_invalid: LeaseClosedReason
lease_closed_owner: LeaseClosedReason
lease_closed_reason_unstable: LeaseClosedReason
lease_closed_reason_decommission: LeaseClosedReason
lease_closed_reason_unspecified: LeaseClosedReason
lease_closed_reason_manifest_timeout: LeaseClosedReason
lease_closed_reason_insufficient_funds: LeaseClosedReason

class OrderID(_message.Message):
    __slots__ = ("owner", "dseq", "gseq", "oseq")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DSEQ_FIELD_NUMBER: _ClassVar[int]
    GSEQ_FIELD_NUMBER: _ClassVar[int]
    OSEQ_FIELD_NUMBER: _ClassVar[int]
    owner: str
    dseq: int
    gseq: int
    oseq: int
    def __init__(self, owner: _Optional[str] = ..., dseq: _Optional[int] = ..., gseq: _Optional[int] = ..., oseq: _Optional[int] = ...) -> None: ...

class BidID(_message.Message):
    __slots__ = ("owner", "dseq", "gseq", "oseq", "provider", "bseq")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DSEQ_FIELD_NUMBER: _ClassVar[int]
    GSEQ_FIELD_NUMBER: _ClassVar[int]
    OSEQ_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BSEQ_FIELD_NUMBER: _ClassVar[int]
    owner: str
    dseq: int
    gseq: int
    oseq: int
    provider: str
    bseq: int
    def __init__(self, owner: _Optional[str] = ..., dseq: _Optional[int] = ..., gseq: _Optional[int] = ..., oseq: _Optional[int] = ..., provider: _Optional[str] = ..., bseq: _Optional[int] = ...) -> None: ...

class LeaseID(_message.Message):
    __slots__ = ("owner", "dseq", "gseq", "oseq", "provider", "bseq")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DSEQ_FIELD_NUMBER: _ClassVar[int]
    GSEQ_FIELD_NUMBER: _ClassVar[int]
    OSEQ_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BSEQ_FIELD_NUMBER: _ClassVar[int]
    owner: str
    dseq: int
    gseq: int
    oseq: int
    provider: str
    bseq: int
    def __init__(self, owner: _Optional[str] = ..., dseq: _Optional[int] = ..., gseq: _Optional[int] = ..., oseq: _Optional[int] = ..., provider: _Optional[str] = ..., bseq: _Optional[int] = ...) -> None: ...

class EventOrderCreated(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: OrderID
    def __init__(self, id: _Optional[_Union[OrderID, _Mapping]] = ...) -> None: ...

class EventOrderClosed(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: OrderID
    def __init__(self, id: _Optional[_Union[OrderID, _Mapping]] = ...) -> None: ...

class EventBidCreated(_message.Message):
    __slots__ = ("id", "price")
    ID_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    id: BidID
    price: _coin_pb2.DecCoin
    def __init__(self, id: _Optional[_Union[BidID, _Mapping]] = ..., price: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ...) -> None: ...

class EventBidClosed(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: BidID
    def __init__(self, id: _Optional[_Union[BidID, _Mapping]] = ...) -> None: ...

class EventLeaseCreated(_message.Message):
    __slots__ = ("id", "price")
    ID_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    id: LeaseID
    price: _coin_pb2.DecCoin
    def __init__(self, id: _Optional[_Union[LeaseID, _Mapping]] = ..., price: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ...) -> None: ...

class EventLeaseClosed(_message.Message):
    __slots__ = ("id", "reason")
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: LeaseID
    reason: LeaseClosedReason
    def __init__(self, id: _Optional[_Union[LeaseID, _Mapping]] = ..., reason: _Optional[_Union[LeaseClosedReason, str]] = ...) -> None: ...

class EventLeaseReclaimStarted(_message.Message):
    __slots__ = ("id", "reason", "deadline")
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    id: LeaseID
    reason: LeaseClosedReason
    deadline: int
    def __init__(self, id: _Optional[_Union[LeaseID, _Mapping]] = ..., reason: _Optional[_Union[LeaseClosedReason, str]] = ..., deadline: _Optional[int] = ...) -> None: ...

class Lease(_message.Message):
    __slots__ = ("id", "state", "price", "created_at", "closed_on", "reason")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        invalid: _ClassVar[Lease.State]
        active: _ClassVar[Lease.State]
        insufficient_funds: _ClassVar[Lease.State]
        closed: _ClassVar[Lease.State]
    invalid: Lease.State
    active: Lease.State
    insufficient_funds: Lease.State
    closed: Lease.State
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CLOSED_ON_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: LeaseID
    state: Lease.State
    price: _coin_pb2.DecCoin
    created_at: int
    closed_on: int
    reason: LeaseClosedReason
    def __init__(self, id: _Optional[_Union[LeaseID, _Mapping]] = ..., state: _Optional[_Union[Lease.State, str]] = ..., price: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ..., created_at: _Optional[int] = ..., closed_on: _Optional[int] = ..., reason: _Optional[_Union[LeaseClosedReason, str]] = ...) -> None: ...

class LeaseFilters(_message.Message):
    __slots__ = ("owner", "dseq", "gseq", "oseq", "provider", "state", "bseq")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DSEQ_FIELD_NUMBER: _ClassVar[int]
    GSEQ_FIELD_NUMBER: _ClassVar[int]
    OSEQ_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    BSEQ_FIELD_NUMBER: _ClassVar[int]
    owner: str
    dseq: int
    gseq: int
    oseq: int
    provider: str
    state: str
    bseq: int
    def __init__(self, owner: _Optional[str] = ..., dseq: _Optional[int] = ..., gseq: _Optional[int] = ..., oseq: _Optional[int] = ..., provider: _Optional[str] = ..., state: _Optional[str] = ..., bseq: _Optional[int] = ...) -> None: ...
