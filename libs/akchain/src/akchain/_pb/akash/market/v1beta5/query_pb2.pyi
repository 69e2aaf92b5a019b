from akchain._pb.akash.deployment.v1beta4 import deployment_pb2 as _deployment_pb2
from akchain._pb.akash.escrow.types.v1 import types_pb2 as _types_pb2
from akchain._pb.akash.market.v1 import market_pb2 as _market_pb2
from akchain._pb.akash.market.v1beta5 import market_pb2 as _market_pb2_1
from akchain._pb.cosmos.base.query.v1beta1 import pagination_pb2 as _pagination_pb2
from akchain._pb.cosmos.base.v1beta1 import coin_pb2 as _coin_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Order(_message.Message):
    __slots__ = ("id", "state", "spec", "created_at")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        invalid: _ClassVar[Order.State]
        open: _ClassVar[Order.State]
        active: _ClassVar[Order.State]
        closed: _ClassVar[Order.State]
    invalid: Order.State
    open: Order.State
    active: Order.State
    closed: Order.State
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.OrderID
    state: Order.State
    spec: _deployment_pb2.GroupSpec
    created_at: int
    def __init__(self, id: _Optional[_Union[_market_pb2.OrderID, _Mapping]] = ..., state: _Optional[_Union[Order.State, str]] = ..., spec: _Optional[_Union[_deployment_pb2.GroupSpec, _Mapping]] = ..., created_at: _Optional[int] = ...) -> None: ...

class Bid(_message.Message):
    __slots__ = ("id", "state", "price", "created_at", "resources_offer")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        invalid: _ClassVar[Bid.State]
        open: _ClassVar[Bid.State]
        active: _ClassVar[Bid.State]
        lost: _ClassVar[Bid.State]
        closed: _ClassVar[Bid.State]
    invalid: Bid.State
    open: Bid.State
    active: Bid.State
    lost: Bid.State
    closed: Bid.State
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_OFFER_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.BidID
    state: Bid.State
    price: _coin_pb2.DecCoin
    created_at: int
    resources_offer: _containers.RepeatedCompositeFieldContainer[_market_pb2_1.ResourceOffer]
    def __init__(self, id: _Optional[_Union[_market_pb2.BidID, _Mapping]] = ..., state: _Optional[_Union[Bid.State, str]] = ..., price: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ..., created_at: _Optional[int] = ..., resources_offer: _Optional[_Iterable[_Union[_market_pb2_1.ResourceOffer, _Mapping]]] = ...) -> None: ...

class OrderFilters(_message.Message):
    __slots__ = ("owner", "dseq", "gseq", "oseq", "state")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DSEQ_FIELD_NUMBER: _ClassVar[int]
    GSEQ_FIELD_NUMBER: _ClassVar[int]
    OSEQ_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    owner: str
    dseq: int
    gseq: int
    oseq: int
    state: str
    def __init__(self, owner: _Optional[str] = ..., dseq: _Optional[int] = ..., gseq: _Optional[int] = ..., oseq: _Optional[int] = ..., state: _Optional[str] = ...) -> None: ...

class BidFilters(_message.Message):
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

class QueryOrdersRequest(_message.Message):
    __slots__ = ("filters", "pagination")
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    filters: OrderFilters
    pagination: _pagination_pb2.PageRequest
    def __init__(self, filters: _Optional[_Union[OrderFilters, _Mapping]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class QueryOrdersResponse(_message.Message):
    __slots__ = ("orders", "pagination")
    ORDERS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    orders: _containers.RepeatedCompositeFieldContainer[Order]
    pagination: _pagination_pb2.PageResponse
    def __init__(self, orders: _Optional[_Iterable[_Union[Order, _Mapping]]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageResponse, _Mapping]] = ...) -> None: ...

class QueryOrderRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.OrderID
    def __init__(self, id: _Optional[_Union[_market_pb2.OrderID, _Mapping]] = ...) -> None: ...

class QueryOrderResponse(_message.Message):
    __slots__ = ("order",)
    ORDER_FIELD_NUMBER: _ClassVar[int]
    order: Order
    def __init__(self, order: _Optional[_Union[Order, _Mapping]] = ...) -> None: ...

class QueryBidsRequest(_message.Message):
    __slots__ = ("filters", "pagination")
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    filters: BidFilters
    pagination: _pagination_pb2.PageRequest
    def __init__(self, filters: _Optional[_Union[BidFilters, _Mapping]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class QueryBidsResponse(_message.Message):
    __slots__ = ("bids", "pagination")
    BIDS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    bids: _containers.RepeatedCompositeFieldContainer[QueryBidResponse]
    pagination: _pagination_pb2.PageResponse
    def __init__(self, bids: _Optional[_Iterable[_Union[QueryBidResponse, _Mapping]]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageResponse, _Mapping]] = ...) -> None: ...

class QueryBidRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.BidID
    def __init__(self, id: _Optional[_Union[_market_pb2.BidID, _Mapping]] = ...) -> None: ...

class QueryBidResponse(_message.Message):
    __slots__ = ("bid", "escrow_account")
    BID_FIELD_NUMBER: _ClassVar[int]
    ESCROW_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    bid: Bid
    escrow_account: _types_pb2.Account
    def __init__(self, bid: _Optional[_Union[Bid, _Mapping]] = ..., escrow_account: _Optional[_Union[_types_pb2.Account, _Mapping]] = ...) -> None: ...

class QueryLeasesRequest(_message.Message):
    __slots__ = ("filters", "pagination")
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    filters: _market_pb2.LeaseFilters
    pagination: _pagination_pb2.PageRequest
    def __init__(self, filters: _Optional[_Union[_market_pb2.LeaseFilters, _Mapping]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class QueryLeasesResponse(_message.Message):
    __slots__ = ("leases", "pagination")
    LEASES_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[QueryLeaseResponse]
    pagination: _pagination_pb2.PageResponse
    def __init__(self, leases: _Optional[_Iterable[_Union[QueryLeaseResponse, _Mapping]]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageResponse, _Mapping]] = ...) -> None: ...

class QueryLeaseRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.LeaseID
    def __init__(self, id: _Optional[_Union[_market_pb2.LeaseID, _Mapping]] = ...) -> None: ...

class QueryLeaseResponse(_message.Message):
    __slots__ = ("lease", "escrow_payment")
    LEASE_FIELD_NUMBER: _ClassVar[int]
    ESCROW_PAYMENT_FIELD_NUMBER: _ClassVar[int]
    lease: _market_pb2.Lease
    escrow_payment: _types_pb2.Payment
    def __init__(self, lease: _Optional[_Union[_market_pb2.Lease, _Mapping]] = ..., escrow_payment: _Optional[_Union[_types_pb2.Payment, _Mapping]] = ...) -> None: ...
